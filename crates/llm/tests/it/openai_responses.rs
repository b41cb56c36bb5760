//! The OpenAI Responses adapter over real HTTP.

use std::sync::Arc;
use std::time::Duration;

use gyre_llm::{ClientConfig, ErrorKind, ModelClient, ModelEvent, OpenAiResponsesClient};
use gyre_protocol::{Message, Outcome, Part, Role, StopReason, ToolCall, ToolResult, Usage};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::anthropic::{ls_tool, request};
use crate::drain;
use crate::server::{Server, response, sse_chunked, sse_response};

/// `event: TYPE` + `data: JSON` for each JSON event.
fn transcript(events: &[&str]) -> String {
    let mut out = String::new();
    for data in events {
        let value: serde_json::Value = serde_json::from_str(data).unwrap();
        out.push_str(&format!(
            "event: {}\ndata: {data}\n\n",
            value["type"].as_str().unwrap()
        ));
    }
    out
}

const ANSWER: &[&str] = &[
    r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[]}}"#,
    r#"{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","status":"in_progress"}}"#,
    r#"{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}"#,
    r#"{"type":"response.reasoning_summary_part.added","sequence_number":3,"output_index":0,"item_id":"rs_1","summary_index":0,"part":{"type":"summary_text","text":""}}"#,
    r#"{"type":"response.reasoning_summary_text.delta","sequence_number":4,"output_index":0,"item_id":"rs_1","summary_index":0,"delta":"List, then look."}"#,
    r#"{"type":"response.output_item.done","sequence_number":5,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"List, then look."}],"encrypted_content":"gAAAAABo-ENCRYPTED=="}}"#,
    r#"{"type":"response.output_item.added","sequence_number":6,"output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}"#,
    r#"{"type":"response.output_text.delta","sequence_number":7,"output_index":1,"item_id":"msg_1","content_index":0,"delta":"Listing."}"#,
    r#"{"type":"response.output_item.done","sequence_number":8,"output_index":1,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Listing.","annotations":[]}]}}"#,
    r#"{"type":"response.output_item.added","sequence_number":9,"output_index":2,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"ls"}}"#,
    r#"{"type":"response.function_call_arguments.delta","sequence_number":10,"output_index":2,"item_id":"fc_1","delta":"{\"path\":"}"#,
    r#"{"type":"response.function_call_arguments.delta","sequence_number":11,"output_index":2,"item_id":"fc_1","delta":" \".\"}"}"#,
    r#"{"type":"response.output_item.done","sequence_number":12,"output_index":2,"item":{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"path\": \".\"}","call_id":"call_1","name":"ls"}}"#,
    r#"{"type":"response.output_item.added","sequence_number":13,"output_index":3,"item":{"id":"fc_2","type":"function_call","status":"in_progress","arguments":"","call_id":"call_2","name":"ls"}}"#,
    r#"{"type":"response.function_call_arguments.delta","sequence_number":14,"output_index":3,"item_id":"fc_2","delta":"{\"path\":\"src\"}"}"#,
    r#"{"type":"response.output_item.done","sequence_number":15,"output_index":3,"item":{"id":"fc_2","type":"function_call","status":"completed","arguments":"{\"path\":\"src\"}","call_id":"call_2","name":"ls"}}"#,
    r#"{"type":"response.completed","sequence_number":16,"response":{"id":"resp_1","status":"completed","usage":{"input_tokens":5000,"input_tokens_details":{"cached_tokens":4096},"output_tokens":250,"output_tokens_details":{"reasoning_tokens":192},"total_tokens":5250}}}"#,
];

fn client(server: &Server) -> OpenAiResponsesClient {
    OpenAiResponsesClient::new(ClientConfig::new(
        format!("{}/v1", server.url),
        Some("sk-test".into()),
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

fn expected_events() -> Vec<ModelEvent> {
    vec![
        ModelEvent::ReasoningDelta("List, then look.".into()),
        ModelEvent::PartCompleted(Part::Reasoning {
            text: "List, then look.".into(),
            signature: Some("gAAAAABo-ENCRYPTED==".into()),
            redacted: false,
        }),
        ModelEvent::TextDelta("Listing.".into()),
        ModelEvent::PartCompleted(Part::text("Listing.")),
        ModelEvent::ToolCallStarted {
            id: "call_1".into(),
            name: "ls".into(),
        },
        ModelEvent::PartCompleted(Part::ToolCall(ToolCall::new(
            "call_1",
            "ls",
            r#"{"path": "."}"#,
        ))),
        ModelEvent::ToolCallStarted {
            id: "call_2".into(),
            name: "ls".into(),
        },
        ModelEvent::PartCompleted(Part::ToolCall(ToolCall::new(
            "call_2",
            "ls",
            r#"{"path":"src"}"#,
        ))),
        ModelEvent::Usage(Usage {
            input_tokens: 904,
            output_tokens: 250,
            reasoning_tokens: 192,
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
    assert_eq!(client.api(), "openai-responses");
    let messages = vec![Arc::new(Message::user_text("u1", "list the files"))];
    let tools = ls_tool();
    let mut request = request(&messages, &tools);
    request.model = "gpt-5";
    request.cache_key = Some("session-42");

    let (events, error) = drain(client.stream(&request)).await;

    assert!(error.is_none(), "{error:?}");
    assert_eq!(events, expected_events());
    let sent = server.request().await;
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/responses")
    );
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(
        sent.body,
        json!({
            "model": "gpt-5",
            "instructions": "Be brief.",
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list the files"}]}],
            "tools": [{"type": "function", "name": "ls", "description": "List a directory", "strict": false,
                "parameters": tools[0].input_schema}],
            "tool_choice": "auto",
            "parallel_tool_calls": true,
            "reasoning": {"summary": "auto"},
            "include": ["reasoning.encrypted_content"],
            "max_output_tokens": 1000,
            "prompt_cache_key": "session-42",
            "stream": true,
            "store": false
        })
    );
}

#[tokio::test]
async fn reasoning_calls_and_results_go_back_exactly_on_the_next_request() {
    let mut server = Server::start(sse_response(&transcript(ANSWER))).await;
    let client = client(&server);
    let tools = ls_tool();
    let mut history = vec![Arc::new(Message::user_text("u1", "list the files"))];
    let mut first = request(&history, &tools);
    first.model = "o4-mini";
    let (events, error) = drain(client.stream(&first)).await;
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
                "call_1",
                "ls",
                "Cargo.toml\nsrc/",
                Outcome::Success,
            )),
            Part::ToolResult(ToolResult::text(
                "call_2",
                "ls",
                "no such directory",
                Outcome::Error,
            )),
        ],
    )));
    let mut second = request(&history, &tools);
    second.model = "o4-mini";
    let (_, error) = drain(client.stream(&second)).await;
    assert!(error.is_none(), "{error:?}");

    let sent = server.request().await;
    assert_eq!(
        sent.body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list the files"}]},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "List, then look."}], "encrypted_content": "gAAAAABo-ENCRYPTED=="},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Listing."}]},
            {"type": "function_call", "call_id": "call_1", "name": "ls", "arguments": "{\"path\": \".\"}"},
            {"type": "function_call", "call_id": "call_2", "name": "ls", "arguments": "{\"path\":\"src\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "Cargo.toml\nsrc/"},
            {"type": "function_call_output", "call_id": "call_2", "output": "Error: no such directory"}
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
async fn an_error_event_mid_stream_is_classified() {
    let events = [
        ANSWER[0],
        ANSWER[6],
        ANSWER[7],
        r#"{"type":"response.some_new_event","sequence_number":8}"#,
        r#"{"type":"error","sequence_number":9,"code":"server_error","message":"The server had an error while processing your request.","param":null}"#,
        ANSWER[16],
    ];
    let server = Server::start(sse_response(&transcript(&events))).await;
    let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
    let (events, error) = drain(client(&server).stream(&request(&messages, &[]))).await;
    assert_eq!(
        events,
        vec![
            ModelEvent::TextDelta("Listing.".into()),
            ModelEvent::PartCompleted(Part::Text {
                text: "Listing.".into()
            })
        ]
    );
    let error = error.unwrap();
    assert_eq!(error.kind, ErrorKind::Server);
    assert_eq!(
        error.message,
        "OpenAI reported an error mid-stream (server_error: The server had an error while processing your request); try again in a moment"
    );
}

#[tokio::test]
async fn an_incomplete_answer_stops_at_max_tokens_without_an_error() {
    let events = [
        ANSWER[6],
        ANSWER[7],
        r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":10,"output_tokens":1000}}}"#,
    ];
    let server = Server::start(sse_response(&transcript(&events))).await;
    let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
    let (events, error) = drain(client(&server).stream(&request(&messages, &[]))).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        events[events.len() - 3..],
        [
            ModelEvent::PartCompleted(Part::text("Listing.")),
            ModelEvent::Usage(Usage {
                input_tokens: 10,
                output_tokens: 1000,
                ..Usage::default()
            }),
            ModelEvent::Finished(StopReason::MaxTokens),
        ]
    );
}

#[tokio::test]
async fn http_errors_are_classified() {
    let server = Server::start(response(
        "429 Too Many Requests",
        &[("retry-after", "3")],
        r#"{"error":{"message":"Rate limit reached for gpt-5","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
    ))
    .await;
    let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
    let (events, error) = drain(client(&server).stream(&request(&messages, &[]))).await;
    assert!(events.is_empty());
    let error = error.unwrap();
    assert_eq!(
        error.kind,
        ErrorKind::RateLimited {
            retry_after: Some(Duration::from_secs(3))
        }
    );
    assert_eq!(error.status, Some(429));
    assert!(
        error
            .message
            .starts_with("OpenAI is rate-limiting requests"),
        "{}",
        error.message
    );
}
