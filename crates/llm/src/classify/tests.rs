use super::*;
use reqwest::header::HeaderValue;

const ANTHROPIC: Provider = Provider {
    label: "Anthropic",
    key_env: "ANTHROPIC_API_KEY",
};

fn classify(status: u16, body: &str) -> LlmError {
    http_error(
        ANTHROPIC,
        "http://h/v1/messages",
        KeyPresence::Given,
        status,
        &HeaderMap::new(),
        body,
    )
}

#[test]
fn statuses_map_to_kinds() {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    assert_eq!(
        classify(529, overloaded).kind,
        ErrorKind::Overloaded { retry_after: None }
    );
    assert_eq!(
        classify(500, overloaded).kind,
        ErrorKind::Overloaded { retry_after: None }
    );
    assert_eq!(classify(401, "").kind, ErrorKind::Auth);
    assert_eq!(classify(403, "").kind, ErrorKind::Auth);
    // A bare 404 is a web server's; the API's own 404 carries its JSON.
    assert_eq!(classify(404, "").kind, ErrorKind::Endpoint);
    let unknown_model =
        r#"{"type":"error","error":{"type":"not_found_error","message":"model: nope"}}"#;
    assert_eq!(classify(404, unknown_model).kind, ErrorKind::InvalidRequest);
    assert_eq!(classify(502, "bad gateway").kind, ErrorKind::Server);
    let too_long = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
    let error = classify(400, too_long);
    assert_eq!(error.kind, ErrorKind::ContextOverflow);
    assert!(error.message.contains("prompt is too long: 210000 tokens"));
    let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
    assert_eq!(classify(400, openai).kind, ErrorKind::ContextOverflow);
    let gemini = r#"{"error":{"code":400,"message":"The input token count (11632) exceeds the maximum number of tokens allowed (6000).","status":"INVALID_ARGUMENT"}}"#;
    assert_eq!(classify(400, gemini).kind, ErrorKind::ContextOverflow);
    assert_eq!(
        classify(400, r#"{"error":{"message":"bad field"}}"#).kind,
        ErrorKind::InvalidRequest
    );
}

#[test]
fn retry_after_prefers_milliseconds() {
    let mut headers = HeaderMap::new();
    headers.insert("retry-after", HeaderValue::from_static("7"));
    assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
    headers.insert("retry-after-ms", HeaderValue::from_static("1500"));
    assert_eq!(retry_after(&headers), Some(Duration::from_millis(1500)));
    headers.insert("retry-after-ms", HeaderValue::from_static("soon"));
    assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
}

#[test]
fn messages_are_one_clean_line() {
    let error = classify(400, "{\"error\":{\"message\":\"line one.\\nline   two.\"}}");
    assert_eq!(
        error.message,
        "Anthropic rejected the request (HTTP 400: line one. line two)"
    );
    let missing_key = http_error(
        ANTHROPIC,
        "u",
        KeyPresence::Missing,
        401,
        &HeaderMap::new(),
        "",
    );
    assert_eq!(
        missing_key.message,
        "Anthropic needs an API key (HTTP 401); set ANTHROPIC_API_KEY"
    );
}

#[test]
fn stream_errors_use_the_error_type() {
    let error = stream_error(ANTHROPIC, Some("rate_limit_error"), Some("slow down"));
    assert_eq!(error.kind, ErrorKind::RateLimited { retry_after: None });
    assert_eq!(
        error.message,
        "Anthropic reported an error mid-stream (rate_limit_error: slow down); try again in a moment"
    );
    let error = stream_error(ANTHROPIC, Some("api_error"), None);
    assert_eq!(error.kind, ErrorKind::Server);
    let error = stream_error(
        ANTHROPIC,
        Some("invalid_request_error"),
        Some("prompt is too long"),
    );
    assert_eq!(error.kind, ErrorKind::ContextOverflow);
}
