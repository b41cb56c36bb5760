//! Real servers' quirks over real HTTP, each body served at several chunkings
//! (down to one byte per write), through the public clients.

use std::sync::Arc;

use gyre_llm::{
    AnthropicClient, ClientConfig, ErrorKind, LlmError, ModelClient, ModelEvent, OpenAiChatClient,
    PromptCacheKey,
};
use gyre_protocol::{Message, Part, Role, StopReason, ToolCall, Usage};
use pretty_assertions::assert_eq;

use crate::anthropic::{ls_tool, request};
use crate::drain;
use crate::server::{Server, sse_in_chunks};

type Outcome = (Vec<ModelEvent>, Option<(ErrorKind, String)>);

const CHUNK_SIZES: [usize; 4] = [1, 5, 64, 1 << 16];

#[derive(Clone, Copy)]
enum Api {
    Anthropic,
    OpenAi,
}

fn client(api: Api, url: &str) -> Box<dyn ModelClient> {
    match api {
        Api::Anthropic => Box::new(AnthropicClient::new(ClientConfig::new(url, None))),
        Api::OpenAi => Box::new(OpenAiChatClient::new(ClientConfig::new(
            format!("{url}/v1"),
            None,
        ))),
    }
}

fn outcome((events, error): (Vec<ModelEvent>, Option<LlmError>)) -> Outcome {
    (events, error.map(|e| (e.kind, e.message)))
}

/// Serves `body` at every chunk size; asserts the outcomes agree and returns one.
async fn at_every_chunking(api: Api, body: &str) -> Outcome {
    let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
    let mut first: Option<Outcome> = None;
    for size in CHUNK_SIZES {
        let server = Server::start(sse_in_chunks(body.as_bytes(), size)).await;
        let got = outcome(drain(client(api, &server.url).stream(&request(&messages, &[]))).await);
        match &first {
            None => first = Some(got),
            Some(expected) => assert_eq!(&got, expected, "chunks of {size} bytes"),
        }
    }
    first.unwrap()
}

fn completed(events: &[ModelEvent]) -> Vec<Part> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::PartCompleted(part) => Some(part.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_llama_cpp_style_stream() {
    // CRLF framing, reasoning_content, a whole call in one chunk, usage with
    // timings in the last chunk, and `[DONE]` without a newline.
    let body = concat!(
        r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null}}],"id":"c1","object":"chat.completion.chunk"}"#,
        "\r\n\r\n",
        r#"data: {"choices":[{"index":0,"delta":{"reasoning_content":"Need ✓ the list"}}],"id":"c1"}"#,
        "\r\n\r\n",
        r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"ls","arguments":"{\"path\":\".\"}"}}]}}],"id":"c1"}"#,
        "\r\n\r\n",
        r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"id":"c1"}"#,
        "\r\n\r\n",
        r#"data: {"choices":[],"id":"c1","usage":{"completion_tokens":12,"prompt_tokens":40,"total_tokens":52},"timings":{"predicted_ms":1.5}}"#,
        "\r\n\r\n",
        "data: [DONE]",
    );
    let (events, error) = at_every_chunking(Api::OpenAi, body).await;
    assert_eq!(error, None);
    assert_eq!(
        completed(&events),
        [
            Part::Reasoning {
                text: "Need ✓ the list".into(),
                signature: None,
                redacted: false
            },
            Part::ToolCall(ToolCall::new("call_x", "ls", r#"{"path":"."}"#)),
        ]
    );
    assert_eq!(
        events[events.len() - 2..],
        [
            ModelEvent::Usage(Usage {
                input_tokens: 40,
                output_tokens: 12,
                ..Usage::default()
            }),
            ModelEvent::Finished(StopReason::ToolUse)
        ]
    );
}

#[tokio::test]
async fn an_ollama_style_stream_with_repeated_ids_and_no_usage() {
    let body = concat!(
        r#"data: {"id":"chatcmpl-9","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"Two reads."},"finish_reason":null}]}"#,
        "\n\n",
        r#"data: {"id":"chatcmpl-9","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_1","index":0,"type":"function","function":{"name":"read","arguments":"{\"file_path\":\"a\"}"}},{"id":"call_1","index":1,"type":"function","function":{"name":"read","arguments":"{\"file_path\":\"b\"}"}}]},"finish_reason":null}]}"#,
        "\n\n",
        r#"data: {"id":"chatcmpl-9","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]}"#,
        "\n\n",
        "data: [DONE]\n\n",
    );
    let (events, error) = at_every_chunking(Api::OpenAi, body).await;
    assert_eq!(error, None);
    assert_eq!(
        completed(&events)[1..],
        [
            Part::ToolCall(ToolCall::new("call_1", "read", r#"{"file_path":"a"}"#)),
            Part::ToolCall(ToolCall::new("call_1_2", "read", r#"{"file_path":"b"}"#)),
        ]
    );
    assert!(!events.iter().any(|e| matches!(e, ModelEvent::Usage(_))));
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finished(StopReason::ToolUse))
    );
}

#[tokio::test]
async fn an_openrouter_style_stream_with_comments_and_an_error_mid_stream() {
    let body = concat!(
        ": OPENROUTER PROCESSING\n\n",
        r#"data: {"id":"gen-1","choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
        "\n\n",
        ": OPENROUTER PROCESSING\n\n",
        r#"data: {"id":"gen-1","error":{"code":502,"message":"Provider returned error"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}"#,
        "\n\n",
    );
    let (events, error) = at_every_chunking(Api::OpenAi, body).await;
    assert_eq!(
        events,
        [
            ModelEvent::TextDelta("Hel".into()),
            ModelEvent::PartCompleted(Part::Text { text: "Hel".into() })
        ]
    );
    let (kind, message) = error.unwrap();
    assert_eq!(kind, ErrorKind::Server);
    assert!(kind.is_transient());
    assert!(message.contains("Provider returned error"), "{message}");
}

#[tokio::test]
async fn an_old_llama_cpp_error_field() {
    let body =
        "error: {\"code\":500,\"message\":\"llama_decode failed\",\"type\":\"server_error\"}\n\n";
    let (events, error) = at_every_chunking(Api::OpenAi, body).await;
    assert!(events.is_empty());
    assert_eq!(
        error,
        Some((
            ErrorKind::Server,
            "The OpenAI-compatible server reported an error mid-stream (server_error: llama_decode failed); try again in a moment".into()
        ))
    );
}

#[tokio::test]
async fn a_json_error_served_as_an_event_stream() {
    let body = "{\n  \"error\": {\n    \"message\": \"Rate limit exceeded. Please retry in 1.5s.\",\n    \"code\": \"rate_limit_exceeded\"\n  }\n}\n";
    let (_, error) = at_every_chunking(Api::OpenAi, body).await;
    assert_eq!(
        error.unwrap().0,
        ErrorKind::RateLimited {
            retry_after: Some(std::time::Duration::from_millis(1500))
        }
    );
}

const THINKING_ANSWER: &str = concat!(
    "event: message_start\n",
    r#"data: {"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}"#,
    "\n\nevent: content_block_start\n",
    r#"data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
    "\n\nevent: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Plan: ünïcode \"quoted\"\n"}}"#,
    "\n\nevent: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqoBCkgIARABGAIiQL+/9w=="}}"#,
    "\n\nevent: content_block_stop\n",
    r#"data: {"type":"content_block_stop","index":0}"#,
    "\n\nevent: content_block_start\n",
    r#"data: {"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4a"}}"#,
    "\n\nevent: content_block_stop\n",
    r#"data: {"type":"content_block_stop","index":1}"#,
    "\n\nevent: content_block_start\n",
    r#"data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_9","name":"ls","input":{}}}"#,
    "\n\nevent: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \".\"}"}}"#,
    "\n\nevent: content_block_stop\n",
    r#"data: {"type":"content_block_stop","index":2}"#,
    "\n\nevent: message_delta\n",
    r#"data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}"#,
    "\n\nevent: message_stop\n",
    r#"data: {"type":"message_stop"}"#,
    "\n\n",
);

#[tokio::test]
async fn thinking_and_redacted_thinking_go_back_exactly() {
    let (events, error) = at_every_chunking(Api::Anthropic, THINKING_ANSWER).await;
    assert_eq!(error, None);
    let parts = completed(&events);
    assert_eq!(
        parts[..2],
        [
            Part::Reasoning {
                text: "Plan: ünïcode \"quoted\"\n".into(),
                signature: Some("EqoBCkgIARABGAIiQL+/9w==".into()),
                redacted: false
            },
            Part::Reasoning {
                text: String::new(),
                signature: Some("EmwKAhgBEgy3va3pzix/LafPsn4a".into()),
                redacted: true
            },
        ]
    );

    // The next request carries them back unchanged.
    let mut server = Server::start(sse_in_chunks(THINKING_ANSWER.as_bytes(), 1 << 16)).await;
    let history = vec![
        Arc::new(Message::user_text("u1", "list")),
        Arc::new(Message::new("a1", Role::Assistant, parts)),
        Arc::new(Message::new(
            "u2",
            Role::User,
            vec![Part::ToolResult(gyre_protocol::ToolResult::text(
                "toolu_9",
                "ls",
                "a.rs",
                gyre_protocol::Outcome::Success,
            ))],
        )),
    ];
    let tools = ls_tool();
    let client = AnthropicClient::new(ClientConfig::new(server.url.clone(), None));
    let (_, error) = drain(client.stream(&request(&history, &tools))).await;
    assert!(error.is_none(), "{error:?}");
    let sent = server.request().await;
    assert_eq!(
        sent.body["messages"][1]["content"],
        serde_json::json!([
            {"type": "thinking", "thinking": "Plan: ünïcode \"quoted\"\n", "signature": "EqoBCkgIARABGAIiQL+/9w=="},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
            {"type": "tool_use", "id": "toolu_9", "name": "ls", "input": {"path": "."}}
        ])
    );
}

#[tokio::test]
async fn an_anthropic_error_event_mid_stream() {
    let body = concat!(
        "event: message_start\n",
        r#"data: {"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}"#,
        "\n\nevent: error\n",
        r#"data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        "\n\n",
    );
    let (events, error) = at_every_chunking(Api::Anthropic, body).await;
    assert_eq!(events.len(), 1);
    assert_eq!(
        error,
        Some((
            ErrorKind::Overloaded { retry_after: None },
            "Anthropic reported an error mid-stream (overloaded_error: Overloaded); try again in a moment".into()
        ))
    );
}

#[tokio::test]
async fn the_prompt_cache_key_goes_only_where_allowed() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
    let mut with_key = request(&messages, &[]);
    with_key.cache_key = Some("session-42");
    for (policy, expected) in [
        (PromptCacheKey::Auto, None),
        (PromptCacheKey::Always, Some("session-42")),
        (PromptCacheKey::Never, None),
    ] {
        let mut server = Server::start(sse_in_chunks(body.as_bytes(), 64)).await;
        let mut config = ClientConfig::new(format!("{}/v1", server.url), None);
        config.prompt_cache_key = policy;
        let (_, error) = drain(OpenAiChatClient::new(config).stream(&with_key)).await;
        assert!(error.is_none(), "{error:?}");
        let sent = server.request().await;
        assert_eq!(
            sent.body["prompt_cache_key"].as_str(),
            expected,
            "{policy:?}"
        );
    }
}
