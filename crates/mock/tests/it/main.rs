//! Integration tests of the mock server over real HTTP on 127.0.0.1.

// Helpers outside `#[test]` functions are test code too.
#![allow(clippy::expect_used)]

mod anthropic;
mod context_window;
mod errors;
mod faults;
mod gemini;
mod openai;
mod prompt_cache;
mod raw;
mod responses;
mod selection;
mod server;

use std::time::Duration;

use futures::StreamExt;
use gyre_mock::{Item, MockServer, Script};
use serde_json::{Value, json};

/// A bound on every request a test makes, so a bug fails instead of hanging.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

thread_local! {
    // Building a client is slow (it loads the TLS roots), so each test thread
    // builds one. A `#[tokio::test]` runtime lives on its test's thread, so
    // the client's connections never outlive their runtime.
    static CLIENT: reqwest::Client = tls_client_builder()
        .no_proxy()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .expect("client");
}

/// reqwest has no TLS provider of its own in this workspace (see
/// `gyre_tools::tls`): one is installed before a client is built.
pub(crate) fn tls_client_builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

fn client() -> reqwest::Client {
    CLIENT.with(Clone::clone)
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

/// A streaming request to each of the four APIs: the API's recorded name, the
/// URL and the body.
fn streaming_endpoints(server: &MockServer) -> Vec<(&'static str, String, Value)> {
    let messages = json!({"model": "m", "stream": true, "messages": [user_turn("hi")]});
    vec![
        (
            "anthropic",
            format!("{}/v1/messages", server.anthropic_base_url()),
            messages.clone(),
        ),
        (
            "openai_chat",
            format!("{}/chat/completions", server.openai_base_url()),
            messages,
        ),
        (
            "openai-responses",
            format!("{}/responses", server.openai_base_url()),
            json!({"model": "m", "stream": true, "input": "hi"}),
        ),
        (
            "gemini",
            format!(
                "{}/v1beta/models/m:streamGenerateContent?alt=sse",
                server.gemini_base_url()
            ),
            json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
        ),
    ]
}

/// Reads a body to its end: the bytes received, and the error if the body
/// broke instead of ending cleanly.
async fn read_body(response: reqwest::Response) -> (Vec<u8>, Option<reqwest::Error>) {
    let mut received = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => received.extend_from_slice(&bytes),
            Err(error) => return (received, Some(error)),
        }
    }
    (received, None)
}
