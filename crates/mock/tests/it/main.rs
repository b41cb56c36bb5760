//! Integration tests of the mock server over real HTTP on 127.0.0.1.

// Helpers outside `#[test]` functions are test code too.
#![allow(clippy::expect_used)]

mod anthropic;
mod faults;
mod openai;
mod selection;
mod server;

use std::time::Duration;

use gyre_mock::{Item, MockServer, Script};
use serde_json::{Value, json};

/// A bound on every request a test makes, so a bug fails instead of hanging.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .expect("client")
}

/// One parsed SSE event: its `event:` name (if any) and its `data:`.
#[derive(Debug, Clone, PartialEq)]
struct SseEvent {
    name: Option<String>,
    data: String,
}

impl SseEvent {
    fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("{e}: {}", self.data))
    }
}

fn parse_sse(body: &str) -> Vec<SseEvent> {
    assert!(
        body.ends_with("\n\n"),
        "the stream ends with a whole event: {body:?}"
    );
    body.split("\n\n")
        .filter(|block| !block.is_empty())
        .map(|block| {
            let mut event = SseEvent {
                name: None,
                data: String::new(),
            };
            for line in block.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event.name = Some(name.to_string());
                } else if let Some(data) = line.strip_prefix("data: ") {
                    event.data.push_str(data);
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            event
        })
        .collect()
}

/// Text, reasoning and two tool calls: the answer both API tests stream.
fn rich_answer() -> Vec<Item> {
    vec![
        Item::Reasoning {
            text: "I should read both files first.".into(),
            signature: Some("sig-1".into()),
        },
        Item::Text("Reading them now.".into()),
        Item::ToolCall {
            id: None,
            name: "read".into(),
            arguments: json!({"file_path": "a.txt"}),
            fragments: None,
        },
        Item::ToolCall {
            id: Some("custom-id".into()),
            name: "read".into(),
            arguments: json!({"file_path": "b.txt"}),
            fragments: Some(2),
        },
    ]
}

/// A user message in either API's shape.
fn user_turn(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

async fn post_json(url: String, body: &Value) -> reqwest::Response {
    client()
        .post(url)
        .json(body)
        .send()
        .await
        .expect("request sent")
}

async fn start(script: Script) -> MockServer {
    MockServer::start(script).await.expect("server starts")
}
