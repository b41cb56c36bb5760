//! Turning what a provider or the network says into a classified [`LlmError`].
//!
//! Every message built here is one sentence: what happened, the provider's own
//! words (trimmed to one short line), and what to do. The kind decides what the
//! loop does (retry, compact, give up), so classification errs towards the
//! kind whose remedy is right: an HTTP 400 that talks about the context window
//! is `ContextOverflow` (compact), not `InvalidRequest` (give up).
//!
//! Transient statuses: 429 (rate limit), 503 and 529 (overloaded), 408, 409,
//! 425 and every other 5xx (server). Error bodies come in the shapes of
//! Anthropic, OpenAI and its imitators, and Google (`status` strings such as
//! `RESOURCE_EXHAUSTED`, `RetryInfo` details, and arrays of error objects).
//! A wait the provider asks for is read from headers, a `RetryInfo` or its
//! message, in that order ([`retry`]).

mod endpoint;
mod retry;

pub(crate) use endpoint::html_success;

use std::error::Error as StdError;
use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::error::{ErrorKind, LlmError};

/// The longest piece of a provider's own message we quote.
const MAX_QUOTED_CHARS: usize = 300;

/// Who we are talking to, for messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Provider {
    /// How a person calls the service mid-sentence ("Anthropic", "the
    /// OpenAI-compatible server").
    pub label: &'static str,
    /// The environment variable that holds its key.
    pub key_env: &'static str,
}

impl Provider {
    /// The label at the start of a sentence.
    pub fn subject(&self) -> String {
        let mut chars = self.label.chars();
        match chars.next() {
            Some(first) => first.to_uppercase().chain(chars).collect(),
            None => String::new(),
        }
    }
}

/// Whether the request carried an API key (a 401 then means "wrong key", not
/// "no key").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyPresence {
    Given,
    Missing,
}

/// Classifies an HTTP error response from its status, headers and (bounded) body.
pub(crate) fn http_error(
    provider: Provider,
    url: &str,
    key: KeyPresence,
    status: u16,
    headers: &HeaderMap,
    body: &str,
) -> LlmError {
    if let Some(error) = endpoint::not_the_api(provider, url, status, headers, body) {
        return error;
    }
    let (error_type, provider_message) = error_body(body);
    let quoted = match provider_message.as_deref() {
        Some(message) => quote(message),
        // A proxy's error page: its title, not the page.
        None if endpoint::looks_like_html(body) => endpoint::summary_line(body).unwrap_or_default(),
        None => quote(body.trim()),
    };
    let detail = if quoted.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {quoted}")
    };
    let label = provider.subject();
    let retry_after = retry_after(headers)
        .or_else(|| {
            // Parsed again, rarely: only errors without a header get here.
            let value = serde_json::from_str::<Value>(body).ok()?;
            retry::from_retry_info(&value)
        })
        .or_else(|| provider_message.as_deref().and_then(retry::from_message));
    let type_kind = error_type
        .as_deref()
        .and_then(|t| kind_from_error_type(t, &quoted));
    let kind = match (status, type_kind) {
        (429, _) => ErrorKind::RateLimited { retry_after },
        (503 | 529, _) => ErrorKind::Overloaded { retry_after },
        (401 | 403, _) => ErrorKind::Auth,
        (_, Some(ErrorKind::RateLimited { .. })) => ErrorKind::RateLimited { retry_after },
        (_, Some(ErrorKind::Overloaded { .. })) => ErrorKind::Overloaded { retry_after },
        (_, Some(ErrorKind::Auth)) => ErrorKind::Auth,
        // Google answers a bad key with 400 INVALID_ARGUMENT.
        (400, _) if mentions_bad_key(&quoted) => ErrorKind::Auth,
        (400 | 413, _) if mentions_context_overflow(&quoted) => ErrorKind::ContextOverflow,
        (_, Some(ErrorKind::ContextOverflow)) => ErrorKind::ContextOverflow,
        (408 | 409 | 425 | 500..=599, _) => ErrorKind::Server,
        (_, Some(ErrorKind::Server)) => ErrorKind::Server,
        _ => ErrorKind::InvalidRequest,
    };
    let message = match kind {
        ErrorKind::RateLimited { retry_after } => format!(
            "{label} is rate-limiting requests ({detail}); {}",
            wait_advice(retry_after)
        ),
        ErrorKind::Overloaded { retry_after } => format!(
            "{label} is overloaded ({detail}); {}",
            wait_advice(retry_after)
        ),
        ErrorKind::Auth if key == KeyPresence::Missing => format!(
            "{label} needs an API key ({detail}); set {}",
            provider.key_env
        ),
        ErrorKind::Auth if status == 403 => format!(
            "{label} refused access ({detail}); check that the key in {} may use this model",
            provider.key_env
        ),
        ErrorKind::Auth => format!(
            "{label} rejected the API key ({detail}); check {}",
            provider.key_env
        ),
        ErrorKind::ContextOverflow => format!(
            "the conversation does not fit the model's context window ({}, {detail}); compact it or start a new session",
            provider.label
        ),
        ErrorKind::Server if (500..=599).contains(&status) => {
            format!("{label} had a server error ({detail}); try again in a moment")
        }
        ErrorKind::Server => format!(
            "{label} could not handle the request just now ({detail}); try again in a moment"
        ),
        _ if status == 404 => format!(
            "{label} found nothing at {url} ({detail}); check the base URL and the model name"
        ),
        _ => format!("{label} rejected the request ({detail})"),
    };
    LlmError::new(kind, Some(status), message)
}

/// Classifies an error the provider reported inside a stream that had begun
/// well (an Anthropic `error` event, an OpenAI `{"error": …}` chunk).
pub(crate) fn stream_error(
    provider: Provider,
    error_type: Option<&str>,
    message: Option<&str>,
) -> LlmError {
    stream_error_with(provider, error_type, message, None)
}

/// Classifies a JSON error a provider sent inside a stream: an object with an
/// `error` member (or an array of them), or a bare error object such as
/// llama.cpp's `{"code":500,"message":…}`. Reads a Google `RetryInfo` and a
/// wait named in the message as well.
pub(crate) fn stream_error_value(provider: Provider, value: &Value) -> LlmError {
    let first = match value {
        Value::Array(items) => items.first().unwrap_or(value),
        other => other,
    };
    let wrapped;
    let value = if first.get("error").is_some() {
        first
    } else {
        wrapped = serde_json::json!({ "error": first });
        &wrapped
    };
    let (error_type, message) = error_object(value);
    stream_error_with(
        provider,
        error_type.as_deref(),
        message.as_deref(),
        retry::from_retry_info(value),
    )
}

/// A JSON error body in text that came outside the SSE framing, if the text
/// is one: an object with `error`, `message` or `detail`, or an array of such
/// objects.
pub(crate) fn unframed_error(provider: Provider, text: &str) -> Option<LlmError> {
    let value: Value = serde_json::from_str(text.trim()).ok()?;
    let (error_type, message) = error_object(&value);
    if error_type.is_none() && message.is_none() {
        return None;
    }
    let retry_after = retry::from_retry_info(&value);
    Some(stream_error_with(
        provider,
        error_type.as_deref(),
        message.as_deref(),
        retry_after,
    ))
}

fn stream_error_with(
    provider: Provider,
    error_type: Option<&str>,
    message: Option<&str>,
    retry_after: Option<Duration>,
) -> LlmError {
    let quoted = quote(message.unwrap_or(""));
    let retry_after = retry_after.or_else(|| message.and_then(retry::from_message));
    let kind = error_type
        .and_then(|t| kind_from_error_type(t, &quoted))
        .unwrap_or(if mentions_context_overflow(&quoted) {
            ErrorKind::ContextOverflow
        } else {
            ErrorKind::Server
        });
    let kind = match kind {
        ErrorKind::RateLimited { .. } => ErrorKind::RateLimited { retry_after },
        ErrorKind::Overloaded { .. } => ErrorKind::Overloaded { retry_after },
        ErrorKind::Server if mentions_unparsed_output(&quoted) => ErrorKind::ModelOutput,
        other => other,
    };
    let label = provider.subject();
    let detail = match (error_type, quoted.is_empty()) {
        (Some(t), false) => format!("{t}: {quoted}"),
        (Some(t), true) => t.to_owned(),
        (None, false) => quoted,
        (None, true) => "no details given".to_owned(),
    };
    let advice = match kind {
        ErrorKind::ContextOverflow => "compact the conversation or start a new session".to_owned(),
        ErrorKind::Auth => "check the API key".to_owned(),
        ErrorKind::InvalidRequest => "the request needs to change before it can succeed".to_owned(),
        ErrorKind::RateLimited {
            retry_after: Some(wait),
        }
        | ErrorKind::Overloaded {
            retry_after: Some(wait),
        } => format!("retry after {} s", seconds(wait)),
        ErrorKind::ModelOutput => {
            return LlmError::new(
                kind,
                None,
                format!(
                    "the model's output did not parse as a tool call ({label} said: {detail}); the model failed, not the connection; ask again or use a model that handles tool calls"
                ),
            );
        }
        _ => "try again in a moment".to_owned(),
    };
    LlmError::new(
        kind,
        None,
        format!("{label} reported an error mid-stream ({detail}); {advice}"),
    )
}

/// A provider's error type string (Anthropic `error.type`, OpenAI
/// `error.type`/`error.code`) as a kind, when it says something definite.
fn kind_from_error_type(error_type: &str, message: &str) -> Option<ErrorKind> {
    let kind = match error_type {
        // Anthropic, OpenAI and imitators; Google's status strings; HTTP
        // statuses where a body gives only a numeric code.
        "overloaded_error"
        | "overloaded"
        | "service_unavailable"
        | "UNAVAILABLE"
        | "503"
        | "529" => ErrorKind::Overloaded { retry_after: None },
        "rate_limit_error"
        | "rate_limit_exceeded"
        | "insufficient_quota"
        | "RESOURCE_EXHAUSTED"
        | "429" => ErrorKind::RateLimited { retry_after: None },
        "context_length_exceeded" | "string_above_max_length" | "exceed_context_size_error" => {
            ErrorKind::ContextOverflow
        }
        "invalid_request_error"
        | "invalid_request"
        | "request_too_large"
        | "not_found_error"
        | "INVALID_ARGUMENT"
        | "FAILED_PRECONDITION"
        | "NOT_FOUND"
        | "OUT_OF_RANGE"
        | "400"
        | "404"
        | "413" => {
            if mentions_context_overflow(message) {
                ErrorKind::ContextOverflow
            } else if mentions_bad_key(message) {
                ErrorKind::Auth
            } else {
                ErrorKind::InvalidRequest
            }
        }
        "authentication_error"
        | "permission_error"
        | "invalid_api_key"
        | "UNAUTHENTICATED"
        | "PERMISSION_DENIED"
        | "401"
        | "403" => ErrorKind::Auth,
        "api_error"
        | "server_error"
        | "internal_server_error"
        | "timeout_error"
        | "INTERNAL"
        | "UNKNOWN"
        | "DEADLINE_EXCEEDED"
        | "ABORTED"
        | "500"
        | "502"
        | "504" => ErrorKind::Server,
        _ => return None,
    };
    Some(kind)
}

/// Whether a server error says the model's own output could not be parsed
/// (llama.cpp's chat parser: "… does not match the expected … format",
/// "Failed to parse input at pos …").
fn mentions_unparsed_output(message: &str) -> bool {
    let lower = message.to_lowercase();
    (lower.contains("does not match the expected") && lower.contains("format"))
        || lower.contains("failed to parse input")
        || lower.contains("failed to parse tool call")
}

/// Whether an error message says the prompt does not fit the context window.
/// The phrases are those of Anthropic, OpenAI, Gemini, vLLM, llama.cpp and
/// Ollama.
pub(crate) fn mentions_context_overflow(message: &str) -> bool {
    const PHRASES: &[&str] = &[
        // Gemini: "The input token count (N) exceeds the maximum number of
        // tokens allowed (M)."
        "exceeds the maximum number of tokens",
        "prompt is too long",
        "prompt too long",
        "context_length_exceeded",
        "context length",
        "context window",
        "context limit",
        "context size",
        "exceeds the context",
        "too many tokens",
        "input is too long",
        "reduce the length of the messages",
    ];
    let lower = message.to_lowercase();
    PHRASES.iter().any(|p| lower.contains(p))
}

/// Whether an error message says the API key is wrong (for providers that
/// answer a bad key with HTTP 400).
fn mentions_bad_key(message: &str) -> bool {
    const PHRASES: &[&str] = &["api key not valid", "invalid api key", "incorrect api key"];
    let lower = message.to_lowercase();
    PHRASES.iter().any(|p| lower.contains(p))
}

/// The error type and message of an error body, in the shapes providers use:
/// `{"error": {"type", "code", "message"}}` (Anthropic, OpenAI),
/// `{"error": {"code": 429, "status", "message"}}` (Google, also as a
/// one-element array), `{"error": "text"}` (Ollama), `{"message": "text"}`,
/// `{"detail": "text"}`.
pub(crate) fn error_body(body: &str) -> (Option<String>, Option<String>) {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
        return (None, None);
    };
    error_object(&value)
}

/// Like [`error_body`], for an already parsed value.
pub(crate) fn error_object(value: &serde_json::Value) -> (Option<String>, Option<String>) {
    let as_text = |v: Option<&serde_json::Value>| -> Option<String> {
        match v? {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    };
    let value = match value {
        serde_json::Value::Array(items) => match items.first() {
            Some(first) => first,
            None => return (None, None),
        },
        other => other,
    };
    let as_string = |v: Option<&serde_json::Value>| -> Option<String> {
        v.and_then(serde_json::Value::as_str).map(str::to_owned)
    };
    match value.get("error") {
        Some(serde_json::Value::String(text)) => (None, Some(text.clone())),
        Some(error @ serde_json::Value::Object(_)) => {
            // OpenAI's `code` ("context_length_exceeded") says more than its
            // `type` ("invalid_request_error"); Google's `status`
            // ("RESOURCE_EXHAUSTED") more than its numeric `code`; Anthropic
            // has only `type`.
            let error_type = as_string(error.get("code"))
                .or_else(|| as_string(error.get("status")))
                .or_else(|| as_text(error.get("type")))
                .or_else(|| as_text(error.get("code")));
            (error_type, as_text(error.get("message")))
        }
        _ => (
            None,
            as_text(value.get("message")).or_else(|| as_text(value.get("detail"))),
        ),
    }
}

/// The wait a response's headers ask for: `retry-after-ms` (OpenAI), else
/// `retry-after` in seconds or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry::from_headers(headers)
}

fn wait_advice(retry_after: Option<Duration>) -> String {
    match retry_after {
        Some(wait) => format!("retry after {} s", seconds(wait)),
        None => "wait a moment and try again".to_owned(),
    }
}

/// Whole seconds for messages, rounded up so that "0 s" never appears.
pub(crate) fn seconds(duration: Duration) -> u64 {
    let whole = duration.as_secs();
    if duration.subsec_nanos() > 0 {
        whole + 1
    } else {
        whole
    }
}

/// A provider's message as one short line, without a closing full stop (it is
/// quoted inside our sentence).
pub(crate) fn quote(message: &str) -> String {
    let one_line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut quoted: String = one_line.chars().take(MAX_QUOTED_CHARS).collect();
    if quoted.len() < one_line.len() {
        quoted.push('…');
    }
    quoted.trim_end_matches('.').to_owned()
}

/// Failure to send the request or to get response headers.
pub(crate) fn send_error(provider: Provider, url: &str, error: &reqwest::Error) -> LlmError {
    let cause = root_cause(error);
    let message = if error.is_connect() {
        // Refused, unknown host, unreachable network: nothing answered.
        return LlmError::new(
            ErrorKind::Unreachable,
            None,
            format!(
                "could not connect to {url} ({cause}); check the base URL and that the server is running"
            ),
        );
    } else if error.is_timeout() {
        format!(
            "connecting to {url} timed out; check the base URL, the network and that the server is running"
        )
    } else {
        format!(
            "the request to {} at {url} failed ({cause}); check the network and try again",
            provider.label
        )
    };
    LlmError::new(ErrorKind::Network, None, message)
}

/// Failure while reading the body of a response that had begun well.
pub(crate) fn body_error(provider: Provider, error: &reqwest::Error) -> LlmError {
    LlmError::new(
        ErrorKind::Network,
        None,
        format!(
            "the connection to {} broke mid-answer ({}); try again",
            provider.label,
            root_cause(error)
        ),
    )
}

/// The innermost cause's text, which names the real problem ("Connection
/// refused") where the outer layers only say "error sending request".
fn root_cause(error: &(dyn StdError + 'static)) -> String {
    let mut innermost = error;
    while let Some(source) = innermost.source() {
        innermost = source;
    }
    let text = innermost.to_string();
    // "Connection refused (os error 111)": the errno adds nothing a person uses.
    match text.find(" (os error") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// The request body could not be serialised (it cannot happen with the types
/// we serialise; kept as an error rather than a panic).
pub(crate) fn serialise_error(error: &serde_json::Error) -> LlmError {
    LlmError::new(
        ErrorKind::InvalidRequest,
        None,
        format!("the request could not be serialised ({error}); this is a bug in gyre"),
    )
}

/// The key cannot be put in a header.
pub(crate) fn bad_key_error(provider: Provider) -> LlmError {
    LlmError::new(
        ErrorKind::Auth,
        None,
        format!(
            "the API key contains characters that cannot be sent in an HTTP header; check {} for stray quotes or line breaks",
            provider.key_env
        ),
    )
}

#[cfg(test)]
mod tests;
