//! Answers that do not come from the provider's API: a base URL that points
//! at an ordinary web server (an HTML page, a 404/405/501 without the API's
//! JSON error), a proxy's HTML error page.
//!
//! Invariants: such an answer is a configuration problem
//! ([`ErrorKind::Endpoint`]), never retried, and its message names the URL
//! and the status and quotes at most one short line of the body (an HTML
//! page's title), never the page. A 404 that carries the API's own JSON
//! error (Anthropic's `not_found_error` for an unknown model) is the API
//! speaking and stays with the ordinary classification.

use reqwest::header::{CONTENT_TYPE, HeaderMap};

use super::Provider;
use crate::error::{ErrorKind, LlmError};

/// The longest body line quoted.
const MAX_LINE_CHARS: usize = 120;

/// `Some` when an error response is not the API's: `status` with `body`
/// from `url`.
pub(crate) fn not_the_api(
    provider: Provider,
    url: &str,
    status: u16,
    headers: &HeaderMap,
    body: &str,
) -> Option<LlmError> {
    let html = is_html(headers, body);
    let json = serde_json::from_str::<serde_json::Value>(body.trim()).is_ok();
    // A proxy's HTML page for a passing failure (502, 503, 504, 529) is
    // still a failure worth waiting out; only its message is cleaned.
    let web_server_refusal = matches!(status, 404 | 405 | 501) && !json;
    if !(web_server_refusal || html && !(500..=599).contains(&status) && status != 429) {
        return None;
    }
    Some(wrong_endpoint(provider, url, Some(status), headers, body))
}

/// A 2xx answer whose content type is an HTML page, not an event stream.
pub(crate) fn html_success(
    provider: Provider,
    url: &str,
    status: u16,
    headers: &HeaderMap,
) -> Option<LlmError> {
    is_html(headers, "").then(|| wrong_endpoint(provider, url, Some(status), headers, ""))
}

fn wrong_endpoint(
    provider: Provider,
    url: &str,
    status: Option<u16>,
    headers: &HeaderMap,
    body: &str,
) -> LlmError {
    let what = if is_html(headers, body) {
        "an HTML page"
    } else {
        "something else"
    };
    let line = summary_line(body)
        .map(|line| format!(" (\"{line}\")"))
        .unwrap_or_default();
    let status_text = status
        .map(|s| {
            let reason = reqwest::StatusCode::from_u16(s)
                .ok()
                .and_then(|c| c.canonical_reason())
                .map(|r| format!(" {r}"))
                .unwrap_or_default();
            format!("HTTP {s}{reason}, ")
        })
        .unwrap_or_default();
    LlmError::new(
        ErrorKind::Endpoint,
        status,
        format!(
            "{url} answered with {status_text}{what}{line}, not the {} API; check the base URL (--base-url, or {}) and the provider (--provider)",
            provider.label,
            base_url_env(provider)
        ),
    )
}

/// The variable that sets this provider's base URL (named after its key's).
fn base_url_env(provider: Provider) -> &'static str {
    match provider.key_env {
        "ANTHROPIC_API_KEY" => "ANTHROPIC_BASE_URL",
        "GEMINI_API_KEY" => "GOOGLE_GEMINI_BASE_URL",
        _ => "OPENAI_BASE_URL",
    }
}

fn is_html(headers: &HeaderMap, body: &str) -> bool {
    let typed = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("text/html"));
    let head = body
        .trim_start()
        .get(..15)
        .unwrap_or("")
        .to_ascii_lowercase();
    typed || head.starts_with("<!doctype html") || head.starts_with("<html")
}

/// One short line that says what a body is: an HTML page's `<title>`, else
/// its first line of text with the tags taken out.
pub(crate) fn summary_line(body: &str) -> Option<String> {
    let lower = body.to_ascii_lowercase();
    let text = match (lower.find("<title>"), lower.find("</title>")) {
        (Some(start), Some(end)) if end > start + 7 => body[start + 7..end].to_string(),
        _ => strip_tags(body)
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string(),
    };
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.is_empty() {
        return None;
    }
    let mut line: String = one_line.chars().take(MAX_LINE_CHARS).collect();
    if line.len() < one_line.len() {
        line.push('…');
    }
    Some(line)
}

fn strip_tags(body: &str) -> String {
    let mut out = String::with_capacity(body.len().min(4096));
    let mut in_tag = false;
    for c in body.chars().take(4096) {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// Whether a body is an HTML page (for cleaning other errors' messages).
pub(crate) fn looks_like_html(body: &str) -> bool {
    is_html(&HeaderMap::new(), body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    const PAGE: &str = "<!DOCTYPE html>\n<html><head><title>501 Not Implemented</title></head>\n<body><h1>Not Implemented</h1><p>POST to /v1/messages not supported.<br/></p><hr><address>Apache/2.4.62 Server at 127.0.0.1</address></body></html>\n";

    fn html_headers() -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=iso-8859-1"),
        );
        headers
    }

    const ANTHROPIC: Provider = Provider {
        label: "Anthropic",
        key_env: "ANTHROPIC_API_KEY",
    };
    const OPENAI: Provider = Provider {
        label: "OpenAI",
        key_env: "OPENAI_API_KEY",
    };

    #[test]
    fn a_web_servers_page_names_the_url_and_status_and_quotes_only_its_title() {
        let error = not_the_api(
            ANTHROPIC,
            "http://127.0.0.1:8000/v1/messages",
            501,
            &html_headers(),
            PAGE,
        )
        .unwrap();
        assert_eq!(error.kind, ErrorKind::Endpoint);
        assert!(!error.kind.is_transient());
        let message = &error.message;
        assert!(message.starts_with("http://127.0.0.1:8000/v1/messages answered with HTTP 501 Not Implemented, an HTML page (\"501 Not Implemented\"), not the Anthropic API"), "{message}");
        assert!(message.contains("--base-url"), "{message}");
        assert!(!message.contains('<'), "no HTML: {message}");
        assert!(!message.contains("try again"), "{message}");
    }

    #[test]
    fn the_apis_own_not_found_stays_the_apis() {
        let body =
            r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}"#;
        assert!(not_the_api(ANTHROPIC, "u", 404, &HeaderMap::new(), body).is_none());
    }

    #[test]
    fn plain_text_404_and_405_are_not_the_api() {
        for status in [404, 405] {
            let error = not_the_api(
                OPENAI,
                "u",
                status,
                &HeaderMap::new(),
                "404 page not found\n",
            )
            .unwrap();
            assert_eq!(error.kind, ErrorKind::Endpoint);
            assert!(
                error.message.contains("(\"404 page not found\")"),
                "{}",
                error.message
            );
        }
    }

    #[test]
    fn a_proxys_page_for_a_passing_failure_is_left_to_the_retries() {
        assert!(not_the_api(ANTHROPIC, "u", 502, &html_headers(), PAGE).is_none());
        assert!(not_the_api(ANTHROPIC, "u", 429, &html_headers(), PAGE).is_none());
        assert_eq!(summary_line(PAGE).as_deref(), Some("501 Not Implemented"));
        assert!(looks_like_html(PAGE));
    }
}
