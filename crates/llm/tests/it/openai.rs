use std::sync::Arc;

use gyre_llm::{ClientConfig, ModelClient, ModelEvent, OpenAiChatClient};
use gyre_protocol::{Message, Part, StopReason, ToolCall, Usage};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::anthropic::{ls_tool, request};
use crate::drain;
use crate::server::{Server, sse_response};

const TRANSCRIPT: &str = concat!(
    r#"data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Listing."},"finish_reason":null}]}"#,
    "\n\n",
    r#"data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"path\":"}}]},"finish_reason":null}]}"#,
    "\n\n",
    r#"data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\".\"}"}}]},"finish_reason":null}]}"#,
    "\n\n",
    r#"data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
    "\n\n",
    r#"data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":20}}"#,
    "\n\n",
    "data: [DONE]\n\n",
);

#[tokio::test]
async fn streams_a_real_answer_and_sends_the_right_request() {
    let mut server = Server::start(sse_response(TRANSCRIPT)).await;
    let client = OpenAiChatClient::new(ClientConfig::new(
        format!("{}/v1/", server.url),
        Some("sk-test".into()),
    ));
    assert_eq!(client.api(), "openai");
    let messages = vec![Arc::new(Message::user_text("u1", "list the files"))];
    let tools = ls_tool();

    let (events, error) = drain(client.stream(&request(&messages, &tools))).await;

    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        events,
        vec![
            ModelEvent::TextDelta("Listing.".into()),
            ModelEvent::PartCompleted(Part::text("Listing.")),
            ModelEvent::ToolCallStarted {
                id: "call_1".into(),
                name: "ls".into()
            },
            ModelEvent::PartCompleted(Part::ToolCall(ToolCall::new(
                "call_1",
                "ls",
                r#"{"path":"."}"#
            ))),
            ModelEvent::Usage(Usage {
                input_tokens: 10,
                output_tokens: 20,
                ..Usage::default()
            }),
            ModelEvent::Finished(StopReason::ToolUse),
        ]
    );
    let sent = server.request().await;
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(
        sent.body,
        json!({
            "model": "model-x",
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_completion_tokens": 1000,
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "list the files"}
            ],
            "tools": [{"type": "function", "function": {
                "name": "ls",
                "description": "List a directory",
                "parameters": tools[0].input_schema
            }}],
            "tool_choice": "auto"
        })
    );
}

#[tokio::test]
async fn no_key_means_no_authorization_header() {
    let mut server = Server::start(sse_response(TRANSCRIPT)).await;
    let client = OpenAiChatClient::new(ClientConfig::new(format!("{}/v1", server.url), None));
    let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
    let (_, error) = drain(client.stream(&request(&messages, &[]))).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(server.request().await.header("authorization"), None);
}
