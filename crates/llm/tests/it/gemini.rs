//! The Gemini adapter over real HTTP.

use std::sync::Arc;

use gyre_llm::{ClientConfig, ErrorKind, GeminiClient, ModelClient, ModelEvent};
use gyre_protocol::{Message, Outcome, Part, Role, StopReason, ToolCall, ToolResult, Usage};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::anthropic::{ls_tool, request};
use crate::drain;
use crate::server::{Server, response, sse_chunked, sse_response};

fn transcript(chunks: &[&str]) -> String {
    chunks
        .iter()
        .map(|c| format!("data: {c}\r\n\r\n"))
        .collect()
}

const ANSWER: &[&str] = &[
    r#"{"candidates":[{"content":{"parts":[{"text":"**Listing** the tree","thought":true}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":5000,"totalTokenCount":5000,"thoughtsTokenCount":30},"modelVersion":"gemini-2.5-pro","responseId":"xyzResp1"}"#,
    r#"{"candidates":[{"content":{"parts":[{"text":"Listing","thoughtSignature":"CiQB-text-sig"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":5000,"totalTokenCount":5000,"thoughtsTokenCount":30},"modelVersion":"gemini-2.5-pro","responseId":"xyzResp1"}"#,
    r#"{"candidates":[{"content":{"parts":[{"text":" both."}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":5000,"totalTokenCount":5000,"thoughtsTokenCount":30},"modelVersion":"gemini-2.5-pro","responseId":"xyzResp1"}"#,
    r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"ls","args":{"path":"."}},"thoughtSignature":"CiQB-call-sig"},{"functionCall":{"name":"ls","args":{"path":"src"}}}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5000,"cachedContentTokenCount":4096,"candidatesTokenCount":40,"thoughtsTokenCount":30,"totalTokenCount":5070},"modelVersion":"gemini-2.5-pro","responseId":"xyzResp1"}"#,
];

fn client(server: &Server) -> GeminiClient {
    GeminiClient::new(ClientConfig::new(
        server.url.clone(),
        Some("AIza-test".into()),
    ))
}

fn parts(events: &[ModelEvent]) -> Vec<Part> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::PartCompleted(part) => Some(part.clone()),
            _ => None,
        })
        .collect()
}

fn call(id: &str, arguments: &str, signature: Option<&str>) -> Part {
    let mut call = ToolCall::new(id, "ls", arguments);
    call.signature = signature.map(str::to_owned);
    Part::ToolCall(call)
}

fn expected_events() -> Vec<ModelEvent> {
    vec![
        ModelEvent::ReasoningDelta("**Listing** the tree".into()),
        ModelEvent::Usage(Usage {
            input_tokens: 5000,
            output_tokens: 30,
            reasoning_tokens: 30,
            ..Usage::default()
        }),
        ModelEvent::PartCompleted(Part::Reasoning {
            text: "**Listing** the tree".into(),
            signature: None,
            redacted: false,
        }),
        ModelEvent::TextDelta("Listing".into()),
        ModelEvent::TextDelta(" both.".into()),
        ModelEvent::PartCompleted(Part::Reasoning {
            text: String::new(),
            signature: Some("CiQB-text-sig".into()),
            redacted: false,
        }),
        ModelEvent::PartCompleted(Part::text("Listing both.")),
        ModelEvent::ToolCallStarted {
            id: "call_xyzResp1_0".into(),
            name: "ls".into(),
        },
        ModelEvent::PartCompleted(call(
            "call_xyzResp1_0",
            r#"{"path":"."}"#,
            Some("CiQB-call-sig"),
        )),
        ModelEvent::ToolCallStarted {
            id: "call_xyzResp1_1".into(),
            name: "ls".into(),
        },
        ModelEvent::PartCompleted(call("call_xyzResp1_1", r#"{"path":"src"}"#, None)),
        ModelEvent::Usage(Usage {
            input_tokens: 904,
            output_tokens: 70,
            reasoning_tokens: 30,
            cache_read_tokens: 4096,
            cache_write_tokens: 0,
        }),
        ModelEvent::Finished(StopReason::ToolUse),
    ]
}

#[tokio::test]
async fn streams_a_real_answer_and_sends_the_right_request() {
    let mut server = Server::start(sse_response(&transcript(ANSWER))).await;
    let client = client(&server);
    assert_eq!(client.api(), "gemini");
    let messages = vec![Arc::new(Message::user_text("u1", "list the files"))];
    let tools = ls_tool();
    let mut request = request(&messages, &tools);
    request.model = "gemini-2.5-pro";

    let (events, error) = drain(client.stream(&request)).await;

    assert!(error.is_none(), "{error:?}");
    assert_eq!(events, expected_events());
    let sent = server.request().await;
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        (
            "POST",
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        )
    );
    assert_eq!(sent.header("x-goog-api-key"), Some("AIza-test"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body,
        json!({
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "contents": [{"role": "user", "parts": [{"text": "list the files"}]}],
            "tools": [{"functionDeclarations": [{
                "name": "ls",
                "description": "List a directory",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}
            }]}],
            "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
            "generationConfig": {"maxOutputTokens": 1000, "thinkingConfig": {"includeThoughts": true}}
        })
    );
}

#[tokio::test]
async fn thoughts_signatures_calls_and_responses_go_back_exactly() {
    let mut server = Server::start(sse_response(&transcript(ANSWER))).await;
    let client = client(&server);
    let tools = ls_tool();
    let mut history = vec![Arc::new(Message::user_text("u1", "list the files"))];
    let (events, error) = drain(client.stream(&request(&history, &tools))).await;
    assert!(error.is_none(), "{error:?}");
    let _ = server.request().await;

    history.push(Arc::new(Message::new(
        "a1",
        Role::Assistant,
        parts(&events),
    )));
    history.push(Arc::new(Message::new(
        "u2",
        Role::User,
        vec![
            Part::ToolResult(ToolResult::text(
                "call_xyzResp1_0",
                "ls",
                "Cargo.toml\nsrc/",
                Outcome::Success,
            )),
            Part::ToolResult(ToolResult::text(
                "call_xyzResp1_1",
                "ls",
                "no such directory",
                Outcome::Error,
            )),
        ],
    )));
    let (_, error) = drain(client.stream(&request(&history, &tools))).await;
    assert!(error.is_none(), "{error:?}");

    let sent = server.request().await;
    assert_eq!(
        sent.body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "list the files"}]},
            {"role": "model", "parts": [
                {"text": "**Listing** the tree", "thought": true},
                {"text": "Listing both.", "thoughtSignature": "CiQB-text-sig"},
                {"functionCall": {"name": "ls", "args": {"path": "."}}, "thoughtSignature": "CiQB-call-sig"},
                {"functionCall": {"name": "ls", "args": {"path": "src"}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "ls", "response": {"output": "Cargo.toml\nsrc/"}}},
                {"functionResponse": {"name": "ls", "response": {"error": "no such directory"}}}
            ]}
        ])
    );
}

#[tokio::test]
async fn any_chunking_of_the_body_gives_the_same_events() {
    let text = transcript(ANSWER);
    for size in [0, 1, 7] {
        let server = Server::start(sse_chunked(&text, size)).await;
        let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
        let (events, error) = drain(client(&server).stream(&request(&messages, &[]))).await;
        assert!(error.is_none(), "chunks of {size}: {error:?}");
        assert_eq!(events, expected_events(), "chunks of {size}");
    }
}

#[tokio::test]
async fn stop_reasons_are_not_errors() {
    for (reason, expected) in [
        ("MALFORMED_FUNCTION_CALL", StopReason::Error),
        ("SAFETY", StopReason::Refusal),
        ("MAX_TOKENS", StopReason::MaxTokens),
    ] {
        let chunk = format!(
            r#"{{"candidates":[{{"content":{{"parts":[{{"text":"x"}}],"role":"model"}},"finishReason":"{reason}"}}],"responseId":"r"}}"#
        );
        let server = Server::start(sse_response(&transcript(&[&chunk]))).await;
        let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
        let (events, error) = drain(client(&server).stream(&request(&messages, &[]))).await;
        assert!(error.is_none(), "{reason}: {error:?}");
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Finished(expected)),
            "{reason}"
        );
    }
}

#[tokio::test]
async fn an_error_chunk_mid_stream_is_classified() {
    let error =
        r#"{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}"#;
    let server = Server::start(sse_response(&transcript(&[ANSWER[1], error, ANSWER[3]]))).await;
    let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
    let (events, error) = drain(client(&server).stream(&request(&messages, &[]))).await;
    assert_eq!(
        events,
        vec![
            ModelEvent::TextDelta("Listing".into()),
            ModelEvent::Usage(Usage {
                input_tokens: 5000,
                output_tokens: 30,
                reasoning_tokens: 30,
                ..Usage::default()
            }),
            // The text's signature, then the text: both kept.
            ModelEvent::PartCompleted(Part::Reasoning {
                text: String::new(),
                signature: Some("CiQB-text-sig".into()),
                redacted: false,
            }),
            ModelEvent::PartCompleted(Part::Text {
                text: "Listing".into()
            }),
        ]
    );
    let error = error.unwrap();
    assert_eq!(error.kind, ErrorKind::Server);
    assert_eq!(
        error.message,
        "Gemini reported an error (INTERNAL: An internal error has occurred); try again in a moment"
    );
}

#[tokio::test]
async fn http_429_with_a_json_array_body_is_rate_limited() {
    let body = r#"[{
  "error": {
    "code": 429,
    "message": "You exceeded your current quota, please check your plan and billing details.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [
      {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"}
    ]
  }
}
]"#;
    let mut server = Server::start(response("429 Too Many Requests", &[], body)).await;
    let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
    let (events, error) = drain(client(&server).stream(&request(&messages, &[]))).await;
    assert!(events.is_empty());
    let error = error.unwrap();
    assert!(
        matches!(error.kind, ErrorKind::RateLimited { .. }),
        "{error:?}"
    );
    assert_eq!(error.status, Some(429));
    assert!(
        error
            .message
            .starts_with("Gemini is rate-limiting requests (HTTP 429"),
        "{}",
        error.message
    );
    assert_eq!(
        server.request().await.header("x-goog-api-key"),
        Some("AIza-test")
    );
}

#[tokio::test]
async fn a_bad_key_is_an_auth_error() {
    let body = r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}"#;
    let server = Server::start(response("400 Bad Request", &[], body)).await;
    let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
    let (_, error) = drain(client(&server).stream(&request(&messages, &[]))).await;
    let error = error.unwrap();
    // Gemini says 400 for a bad key; classifying it is the shared
    // classifier's job, but it must never look transient.
    assert!(!error.kind.is_transient(), "{error:?}");
    assert_eq!(error.status, Some(400));
}
