//! The providers' error JSON, for scripted error statuses and for the
//! server's own refusals (no matching step, a body that is not JSON).
//!
//! The `type`/`code` words are the ones each provider documents for the
//! status, so a client's error classification can be tested against them.

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
}
