//! HTTP error responses and transport failures, classified.

use std::sync::Arc;
use std::time::Duration;

use gyre_llm::{
    AnthropicClient, ClientConfig, ErrorKind, LlmError, ModelClient, ModelEvent, OpenAiChatClient,
};
use gyre_protocol::Message;

use crate::anthropic::request;
use crate::drain;
use crate::server::{Server, Step, http_chunk, response, sse_head};

async fn anthropic_error(script: Vec<Step>) -> (Vec<ModelEvent>, LlmError) {
    let server = Server::start(script).await;
    let mut config = ClientConfig::new(server.url.clone(), Some("sk-ant-test".into()));
    config.idle_timeout = Duration::from_millis(300);
    config.first_byte_timeout = Duration::from_millis(300);
    let client = AnthropicClient::new(config);
    let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
    let (events, error) = drain(client.stream(&request(&messages, &[]))).await;
    (events, error.expect("the request should fail"))
}

#[tokio::test]
async fn rate_limited_with_retry_after() {
    let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit."}}"#;
    let (_, error) = anthropic_error(response(
        "429 Too Many Requests",
        &[("retry-after", "12")],
        body,
    ))
    .await;
    assert_eq!(
        error.kind,
        ErrorKind::RateLimited {
            retry_after: Some(Duration::from_secs(12))
        }
    );
    assert_eq!(error.status, Some(429));
    assert_eq!(error.retry_after(), Some(Duration::from_secs(12)));
    assert_eq!(
        error.message,
        "Anthropic is rate-limiting requests (HTTP 429: Number of requests has exceeded your rate limit); retry after 12 s"
    );
}

#[tokio::test]
async fn openai_retry_after_ms_wins() {
    let server = Server::start(response(
        "429 Too Many Requests",
        &[("retry-after", "2"), ("retry-after-ms", "1500")],
        r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#,
    ))
    .await;
    let client = OpenAiChatClient::new(ClientConfig::new(format!("{}/v1", server.url), None));
    let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
    let (_, error) = drain(client.stream(&request(&messages, &[]))).await;
    let error = error.unwrap();
    assert_eq!(
        error.kind,
        ErrorKind::RateLimited {
            retry_after: Some(Duration::from_millis(1500))
        }
    );
    assert!(
        error.message.starts_with(
            "The OpenAI-compatible server is rate-limiting requests (HTTP 429: Rate limit reached"
        ),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn overloaded() {
    let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let (_, error) = anthropic_error(response("529 Overloaded", &[], body)).await;
    assert_eq!(error.kind, ErrorKind::Overloaded { retry_after: None });
    assert_eq!(error.status, Some(529));
    assert_eq!(
        error.message,
        "Anthropic is overloaded (HTTP 529: Overloaded); wait a moment and try again"
    );
}

#[tokio::test]
async fn rejected_key() {
    let body =
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
    let (_, error) = anthropic_error(response("401 Unauthorized", &[], body)).await;
    assert_eq!(error.kind, ErrorKind::Auth);
    assert_eq!(
        error.message,
        "Anthropic rejected the API key (HTTP 401: invalid x-api-key); check ANTHROPIC_API_KEY"
    );
}

#[tokio::test]
async fn prompt_too_long_is_a_context_overflow() {
    let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215000 tokens > 200000 maximum"}}"#;
    let (_, error) = anthropic_error(response("400 Bad Request", &[], body)).await;
    assert_eq!(error.kind, ErrorKind::ContextOverflow);
    assert!(!error.kind.is_transient());
    assert_eq!(
        error.message,
        "the conversation does not fit the model's context window (Anthropic, HTTP 400: prompt is too long: 215000 tokens > 200000 maximum); compact it or start a new session"
    );
}

#[tokio::test]
async fn other_client_and_server_errors() {
    let (_, error) = anthropic_error(response(
        "400 Bad Request",
        &[],
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: must be positive"}}"#,
    ))
    .await;
    assert_eq!(error.kind, ErrorKind::InvalidRequest);
    let (_, error) = anthropic_error(response("500 Internal Server Error", &[], "oops")).await;
    assert_eq!(error.kind, ErrorKind::Server);
    assert_eq!(
        error.message,
        "Anthropic had a server error (HTTP 500: oops); try again in a moment"
    );
}

#[tokio::test]
async fn connection_refused_names_the_url() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let client = AnthropicClient::new(ClientConfig::new(format!("http://127.0.0.1:{port}"), None));
    let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
    let (events, error) = drain(client.stream(&request(&messages, &[]))).await;
    assert!(events.is_empty());
    let error = error.unwrap();
    assert_eq!(error.kind, ErrorKind::Unreachable);
    assert_eq!(error.status, None);
    let url = format!("http://127.0.0.1:{port}/v1/messages");
    assert!(
        error
            .message
            .starts_with(&format!("could not connect to {url} (")),
        "{}",
        error.message
    );
    assert!(
        error
            .message
            .ends_with("); check the base URL and that the server is running"),
        "{}",
        error.message
    );
    assert!(!error.message.contains('\n'));
}

const MESSAGE_START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n";

#[tokio::test]
async fn a_stalled_stream_hits_the_idle_timeout() {
    let (events, error) = anthropic_error(vec![
        sse_head(),
        Step::Write(http_chunk(MESSAGE_START.as_bytes())),
        Step::Stall,
    ])
    .await;
    assert_eq!(events.len(), 1, "the event before the stall arrives");
    assert_eq!(error.kind, ErrorKind::Network);
    assert_eq!(
        error.message,
        "the stream stalled: no data for 300 ms; try again"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_first_byte_timeout() {
    let (_, error) = anthropic_error(vec![Step::Stall]).await;
    assert_eq!(error.kind, ErrorKind::Network);
    assert!(
        error.message.starts_with(
            "no response from Anthropic within 300 ms; check that the server at http://127.0.0.1:"
        ),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn a_stream_cut_mid_event_is_an_error() {
    // The chunked body breaks off inside an event: the transport reports it.
    let half_event = &MESSAGE_START.as_bytes()[..40];
    let (events, error) =
        anthropic_error(vec![sse_head(), Step::Write(http_chunk(half_event))]).await;
    assert!(events.is_empty());
    assert!(
        matches!(error.kind, ErrorKind::Network | ErrorKind::Stream),
        "{error:?}"
    );
    assert!(
        error
            .message
            .starts_with("the connection to Anthropic broke mid-answer ("),
        "{}",
        error.message
    );

    // A body delimited by the connection closing ends "cleanly" mid-event:
    // the decoder notices the answer is incomplete.
    let mut close_delimited =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n".to_vec();
    close_delimited.extend_from_slice(MESSAGE_START.as_bytes());
    close_delimited.extend_from_slice(b"event: content_block_start\ndata: {\"type\":\"content_bl");
    let (events, error) = anthropic_error(vec![Step::Write(close_delimited)]).await;
    assert_eq!(events.len(), 1);
    assert_eq!(error.kind, ErrorKind::Stream);
    assert_eq!(
        error.message,
        "the Anthropic stream ended before the answer was complete; try again"
    );
}

#[tokio::test]
async fn json_instead_of_an_event_stream_is_not_a_silent_success() {
    let (_, error) =
        anthropic_error(response("200 OK", &[], r#"{"id":"msg_1","content":[]}"#)).await;
    assert_eq!(error.kind, ErrorKind::Stream);
    assert!(
        error.message.contains("supports streaming"),
        "{}",
        error.message
    );
}
