//! The providers' error JSON, for scripted error statuses, for the server's
//! own refusals (no matching step, a body that is not JSON), and for a
//! request over the script's context window.
//!
//! The `type`/`code` words are the ones each provider documents for the
//! status, so a client's error classification can be tested against them.
//! The context-overflow bodies are the providers' real ones, byte for byte
//! in their key order (so they are written out rather than built from a map,
//! which would sort the keys); only numbers are filled in, so no escaping is
//! needed.

use serde_json::{Value, json};

use crate::server::Api;

/// The provider's usual error JSON for `status`.
pub(crate) fn error_json(api: Api, status: u16, message: &str) -> Value {
    match api {
        Api::Anthropic => {
            let kind = match status {
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                413 => "request_too_large",
                429 => "rate_limit_error",
                503 | 529 => "overloaded_error",
                500..=599 => "api_error",
                _ => "invalid_request_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Api::OpenAiChat | Api::OpenAiResponses => {
            let (kind, code) = match status {
                401 => ("invalid_request_error", json!("invalid_api_key")),
                429 => ("requests", json!("rate_limit_exceeded")),
                500..=599 => ("server_error", Value::Null),
                _ => ("invalid_request_error", Value::Null),
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
        }
        Api::Gemini => {
            let word = match status {
                400 => "INVALID_ARGUMENT",
                401 => "UNAUTHENTICATED",
                403 => "PERMISSION_DENIED",
                404 => "NOT_FOUND",
                429 => "RESOURCE_EXHAUSTED",
                499 => "CANCELLED",
                503 | 529 => "UNAVAILABLE",
                504 => "DEADLINE_EXCEEDED",
                500..=599 => "INTERNAL",
                _ => "FAILED_PRECONDITION",
            };
            json!({"error": {"code": status, "message": message, "status": word}})
        }
    }
}

/// The provider's real HTTP 400 body for a request of `tokens` input tokens
/// over a context window of `window`.
pub(crate) fn context_overflow_body(api: Api, tokens: u64, window: u64) -> String {
    match api {
        Api::Anthropic => format!(
            r#"{{"type":"error","error":{{"type":"invalid_request_error","message":"prompt is too long: {tokens} tokens > {window} maximum"}}}}"#
        ),
        Api::OpenAiChat | Api::OpenAiResponses => format!(
            r#"{{"error":{{"message":"This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}}}"#
        ),
        Api::Gemini => format!(
            r#"{{"error":{{"code":400,"message":"The input token count ({tokens}) exceeds the maximum number of tokens allowed ({window}).","status":"INVALID_ARGUMENT"}}}}"#
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_follow_each_provider() {
        let a = error_json(Api::Anthropic, 529, "busy");
        assert_eq!(a["error"]["type"], "overloaded_error");
        let o = error_json(Api::OpenAiChat, 429, "slow down");
        assert_eq!(o["error"]["code"], "rate_limit_exceeded");
        assert_eq!(o["error"]["message"], "slow down");
        let g = error_json(Api::Gemini, 429, "quota");
        assert_eq!(
            g,
            json!({"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}})
        );
    }

    #[test]
    fn overflow_bodies_are_json_with_the_numbers() {
        for api in [
            Api::Anthropic,
            Api::OpenAiChat,
            Api::OpenAiResponses,
            Api::Gemini,
        ] {
            let body = context_overflow_body(api, 1234, 1000);
            let value: Value = serde_json::from_str(&body).expect("JSON");
            let message = value["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("1234") && message.contains("1000"),
                "{body}"
            );
        }
        assert_eq!(
            serde_json::from_str::<Value>(&context_overflow_body(Api::OpenAiChat, 5, 4))
                .expect("JSON")["error"]["code"],
            "context_length_exceeded"
        );
    }
}
