//! Every form in which a provider asks us to wait, and which statuses are
//! transient, over real HTTP.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use gyre_llm::{AnthropicClient, ClientConfig, ErrorKind, LlmError, ModelClient, OpenAiChatClient};
use gyre_protocol::Message;

use crate::anthropic::request;
use crate::drain;
use crate::server::{Server, response, sse_in_chunks};

async fn openai_error(status: &str, headers: &[(&str, &str)], body: &str) -> LlmError {
    let server = Server::start(response(status, headers, body)).await;
    let client = OpenAiChatClient::new(ClientConfig::new(format!("{}/v1", server.url), None));
    let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
    let (_, error) = drain(client.stream(&request(&messages, &[]))).await;
    error.expect("the request should fail")
}

fn rate_limited(wait: Duration) -> ErrorKind {
    ErrorKind::RateLimited {
        retry_after: Some(wait),
    }
}

#[tokio::test]
async fn retry_after_as_an_http_date() {
    let date = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(120));
    let error = openai_error("429 Too Many Requests", &[("retry-after", &date)], "{}").await;
    let wait = error.retry_after().unwrap();
    // Whole seconds in the date and the time the test takes: loosely 2 min.
    assert!(
        wait > Duration::from_secs(110) && wait <= Duration::from_secs(120),
        "{wait:?}"
    );
    assert!(error.message.ends_with(" s"), "{}", error.message);
}

#[tokio::test]
async fn retry_after_in_fractional_seconds_and_milliseconds() {
    let error = openai_error("429 Too Many Requests", &[("retry-after", "2.5")], "{}").await;
    assert_eq!(error.kind, rate_limited(Duration::from_millis(2500)));
    assert!(
        error.message.ends_with("retry after 3 s"),
        "{}",
        error.message
    );
    let error = openai_error(
        "429 Too Many Requests",
        &[("retry-after-ms", "250"), ("retry-after", "9")],
        "{}",
    )
    .await;
    assert_eq!(error.kind, rate_limited(Duration::from_millis(250)));
}

#[tokio::test]
async fn google_retry_info_in_an_array_body() {
    let body = r#"[{
  "error": {
    "code": 429,
    "message": "You exceeded your current quota, please check your plan and billing details.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [
      {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "x"}]},
      {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "30s"}
    ]
  }
}]"#;
    let error = openai_error("429 Too Many Requests", &[], body).await;
    assert_eq!(error.kind, rate_limited(Duration::from_secs(30)));
    assert_eq!(
        error.message,
        "The OpenAI-compatible server is rate-limiting requests (HTTP 429: You exceeded your current quota, please check your plan and billing details); retry after 30 s"
    );
    // A header still wins over the body.
    let error = openai_error("429 Too Many Requests", &[("retry-after", "4")], body).await;
    assert_eq!(error.kind, rate_limited(Duration::from_secs(4)));
}

#[tokio::test]
async fn waits_named_in_the_message() {
    for (message, wait) in [
        (
            "Rate limit reached for gpt-x. Please try again in 20s.",
            Duration::from_secs(20),
        ),
        (
            "Quota exceeded. Please retry in 1.5s.",
            Duration::from_millis(1500),
        ),
        (
            "Rate limit reached. Please try again in 1m30s.",
            Duration::from_secs(90),
        ),
    ] {
        let body = format!(r#"{{"error":{{"message":"{message}","code":"rate_limit_exceeded"}}}}"#);
        let error = openai_error("429 Too Many Requests", &[], &body).await;
        assert_eq!(error.kind, rate_limited(wait), "{message}");
    }
}

#[tokio::test]
async fn google_status_strings_classify() {
    let google = |code: u16, status: &str, message: &str| {
        format!(r#"{{"error":{{"code":{code},"message":"{message}","status":"{status}"}}}}"#)
    };
    let error = openai_error(
        "500 Internal Server Error",
        &[],
        &google(503, "UNAVAILABLE", "The model is overloaded."),
    )
    .await;
    assert_eq!(error.kind, ErrorKind::Overloaded { retry_after: None });
    let error = openai_error(
        "400 Bad Request",
        &[],
        &google(400, "RESOURCE_EXHAUSTED", "Quota exceeded."),
    )
    .await;
    assert_eq!(error.kind, ErrorKind::RateLimited { retry_after: None });
    let error = openai_error(
        "400 Bad Request",
        &[],
        &google(
            400,
            "INVALID_ARGUMENT",
            "API key not valid. Please pass a valid API key.",
        ),
    )
    .await;
    assert_eq!(error.kind, ErrorKind::Auth);
    // No key was sent, so the advice is to set one.
    assert!(
        error.message.ends_with("set OPENAI_API_KEY"),
        "{}",
        error.message
    );
    let error = openai_error(
        "400 Bad Request",
        &[],
        &google(400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."),
    )
    .await;
    // Gemini's own words for a prompt over the window: compact, not give up.
    assert_eq!(error.kind, ErrorKind::ContextOverflow);
    let error = openai_error(
        "400 Bad Request",
        &[],
        &google(
            400,
            "INVALID_ARGUMENT",
            "Input is too long for the context window.",
        ),
    )
    .await;
    assert_eq!(error.kind, ErrorKind::ContextOverflow);
}

#[tokio::test]
async fn transient_statuses() {
    for (status, kind) in [
        ("408 Request Timeout", ErrorKind::Server),
        ("409 Conflict", ErrorKind::Server),
        ("425 Too Early", ErrorKind::Server),
        ("500 Internal Server Error", ErrorKind::Server),
        ("502 Bad Gateway", ErrorKind::Server),
        ("504 Gateway Timeout", ErrorKind::Server),
        (
            "503 Service Unavailable",
            ErrorKind::Overloaded { retry_after: None },
        ),
        (
            "529 Overloaded",
            ErrorKind::Overloaded { retry_after: None },
        ),
    ] {
        let error = openai_error(status, &[], "").await;
        assert_eq!(error.kind, kind, "{status}");
        assert!(error.kind.is_transient(), "{status}");
        assert!(
            error.message.ends_with("try again in a moment")
                || error.message.ends_with("wait a moment and try again"),
            "{}",
            error.message
        );
    }
    for status in [
        "400 Bad Request",
        "404 Not Found",
        "422 Unprocessable Entity",
    ] {
        let error = openai_error(status, &[], "").await;
        assert!(!error.kind.is_transient(), "{status}");
    }
    let error = openai_error("529 Overloaded", &[("retry-after", "3")], "").await;
    assert_eq!(
        error.kind,
        ErrorKind::Overloaded {
            retry_after: Some(Duration::from_secs(3))
        }
    );
}

#[tokio::test]
async fn a_rate_limit_error_event_mid_stream_names_its_wait() {
    let body = concat!(
        "event: message_start\n",
        r#"data: {"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}"#,
        "\n\nevent: error\n",
        r#"data: {"type":"error","error":{"type":"rate_limit_error","message":"Too many tokens. Please try again in 12s."}}"#,
        "\n\n",
    );
    let server = Server::start(sse_in_chunks(body.as_bytes(), 7)).await;
    let client = AnthropicClient::new(ClientConfig::new(server.url.clone(), None));
    let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
    let (_, error) = drain(client.stream(&request(&messages, &[]))).await;
    let error = error.unwrap();
    assert_eq!(error.kind, rate_limited(Duration::from_secs(12)));
    assert!(
        error.message.ends_with("retry after 12 s"),
        "{}",
        error.message
    );
}
