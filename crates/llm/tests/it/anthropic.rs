use std::sync::Arc;

use gyre_llm::{
    AnthropicClient, ClientConfig, ModelClient, ModelEvent, ModelRequest, Sampling, ToolChoice,
};
use gyre_protocol::{Message, Part, StopReason, ToolCall, ToolSpec, Usage};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::drain;
use crate::server::{Server, sse_response};

const TRANSCRIPT: &str = concat!(
    "event: message_start\n",
    r#"data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-x","usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}"#,
    "\n\n",
    "event: content_block_start\n",
    r#"data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Listing."}}"#,
    "\n\n",
    "event: content_block_stop\n",
    r#"data: {"type":"content_block_stop","index":0}"#,
    "\n\n",
    "event: content_block_start\n",
    r#"data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"ls","input":{}}}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\".\"}"}}"#,
    "\n\n",
    "event: content_block_stop\n",
    r#"data: {"type":"content_block_stop","index":1}"#,
    "\n\n",
    "event: message_delta\n",
    r#"data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20}}"#,
    "\n\n",
    "event: message_stop\n",
    r#"data: {"type":"message_stop"}"#,
    "\n\n",
);

pub fn request<'a>(messages: &'a [Arc<Message>], tools: &'a [ToolSpec]) -> ModelRequest<'a> {
    ModelRequest {
        model: "model-x",
        system: "Be brief.",
        messages,
        tools,
        tool_choice: ToolChoice::Auto,
        max_output_tokens: 1000,
        cache_key: None,
        cache_points: &[],
        sampling: &Sampling::NONE,
    }
}

pub fn ls_tool() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "ls".into(),
        description: "List a directory".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }]
}

#[tokio::test]
async fn streams_a_real_answer_and_sends_the_right_request() {
    let mut server = Server::start(sse_response(TRANSCRIPT)).await;
    // A trailing slash on the base URL is harmless.
    let client = AnthropicClient::new(ClientConfig::new(
        format!("{}/", server.url),
        Some("sk-ant-test".into()),
    ));
    assert_eq!(client.api(), "anthropic");
    let messages = vec![Arc::new(Message::user_text("u1", "list the files"))];
    let tools = ls_tool();

    let (events, error) = drain(client.stream(&request(&messages, &tools))).await;

    assert!(error.is_none(), "{error:?}");
    let usage = |output_tokens| Usage {
        input_tokens: 10,
        output_tokens,
        ..Usage::default()
    };
    assert_eq!(
        events,
        vec![
            ModelEvent::Usage(usage(1)),
            ModelEvent::TextDelta("Listing.".into()),
            ModelEvent::PartCompleted(Part::text("Listing.")),
            ModelEvent::ToolCallStarted {
                id: "toolu_1".into(),
                name: "ls".into()
            },
            ModelEvent::PartCompleted(Part::ToolCall(ToolCall::new(
                "toolu_1",
                "ls",
                r#"{"path":"."}"#
            ))),
            ModelEvent::Usage(usage(20)),
            ModelEvent::Finished(StopReason::ToolUse),
        ]
    );
    let sent = server.request().await;
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert!(sent.header("user-agent").unwrap().starts_with("gyre/"));
    assert_eq!(
        sent.body,
        json!({
            "model": "model-x",
            "max_tokens": 1000,
            "stream": true,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "list the files", "cache_control": {"type": "ephemeral"}}
            ]}],
            "tools": [{
                "name": "ls",
                "description": "List a directory",
                "input_schema": tools[0].input_schema,
                "cache_control": {"type": "ephemeral"}
            }],
            "tool_choice": {"type": "auto"}
        })
    );
}

#[tokio::test]
async fn nothing_is_sent_until_the_stream_is_polled() {
    let mut server = Server::start(sse_response(TRANSCRIPT)).await;
    let client = AnthropicClient::new(ClientConfig::new(server.url.clone(), None));
    let messages = vec![Arc::new(Message::user_text("u1", "first"))];
    drop(client.stream(&request(&messages, &[])));

    let messages = vec![Arc::new(Message::user_text("u1", "second"))];
    let (_, error) = drain(client.stream(&request(&messages, &[]))).await;
    assert!(error.is_none(), "{error:?}");

    let sent = server.request().await;
    assert_eq!(sent.body["messages"][0]["content"][0]["text"], "second");
    assert_eq!(sent.header("x-api-key"), None);
    assert_eq!(server.recorded_now(), 0);
}
