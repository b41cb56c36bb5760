//! `web_fetch`: fetch a web page and return it as Markdown.
//!
//! Invariants:
//! - Only `http` and `https` URLs are fetched; at most 5 redirects are
//!   followed.
//! - The whole call (connect, headers, body) ends within the tool's timeout
//!   (30 s unless configured) or at cancellation, whichever comes first.
//! - At most `max_bytes` of the body are downloaded: the body is streamed and
//!   the download stops there, so a huge or endless body costs nothing more.
//! - HTML becomes Markdown (scripts, styles and the like left out); text and
//!   JSON pass through; binary content is refused by its content type (or, if
//!   there is none, by its bytes). A status other than 2xx is reported as an
//!   error result that still carries the body.
//! - The result is cut to the output budget like every other.
//!
//! Trade-offs: the HTTP client is built on first use, off the runtime
//! (loading the system's CA certificates takes a while), and reused. A body's
//! charset comes from its `Content-Type` (or a BOM); a `<meta charset>` alone
//! is not looked for, so such a page in a legacy encoding may show
//! replacement characters.

use std::time::Duration;

use futures::future::BoxFuture;
use gyre_protocol::{Outcome, ToolResultContent};
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::budget::enforce_budget;
use crate::{ToolContext, ToolError, ToolKind, ToolOutput, TypedTool};

const NAME: &str = "web_fetch";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_MAX_BYTES: usize = 5 * 1024 * 1024;
const MAX_MAX_BYTES: usize = 10 * 1024 * 1024;
const MAX_REDIRECTS: usize = 5;
/// Elements whose content is no use as text.
const SKIPPED_TAGS: [&str; 7] = [
    "script", "style", "noscript", "template", "svg", "iframe", "head",
];

const DESCRIPTION: &str = "Fetch an http or https URL and return its content: HTML converted \
to Markdown, text and JSON as they are; binary content (images, PDFs, archives) is refused. \
At most `max_bytes` are downloaded (default 5242880, max 10485760). Times out after 30 s.";

#[derive(Deserialize, JsonSchema)]
pub struct WebFetchArgs {
    /// The http or https URL to fetch.
    url: String,
    /// The most bytes of the body to download (default 5242880, max 10485760).
    max_bytes: Option<usize>,
}

/// The `web_fetch` tool.
#[derive(Debug)]
pub struct WebFetchTool {
    timeout: Duration,
    client: OnceCell<reqwest::Client>,
}

impl Default for WebFetchTool {
    fn default() -> Self {
        Self::new()
    }
}

impl WebFetchTool {
    /// A fetcher with the default timeout of 30 s.
    pub fn new() -> Self {
        WebFetchTool {
            timeout: DEFAULT_TIMEOUT,
            client: OnceCell::new(),
        }
    }

    /// The same fetcher with another overall timeout per call.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    async fn client(&self) -> Result<&reqwest::Client, ToolError> {
        self.client
            .get_or_try_init(|| async {
                tokio::task::spawn_blocking(build_client)
                    .await
                    .map_err(|e| ToolError::Failed(format!("the tool crashed: {e}")))?
            })
            .await
    }
}

fn build_client() -> Result<reqwest::Client, ToolError> {
    crate::tls::install_crypto_provider();
    let builder = || {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("gyre/", env!("CARGO_PKG_VERSION")))
    };
    // Without the system's CA certificates plain http still works.
    builder()
        .build()
        .or_else(|_| builder().tls_certs_only(Vec::new()).build())
        .map_err(|e| ToolError::Failed(format!("could not make an HTTP client: {e}")))
}

impl TypedTool for WebFetchTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = WebFetchArgs;

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::ReadOnly
    }

    fn call<'a>(
        &'a self,
        args: WebFetchArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let url = parse_url(&args.url)?;
            let max_bytes = match args.max_bytes {
                None | Some(0) => DEFAULT_MAX_BYTES,
                Some(n) => n.min(MAX_MAX_BYTES),
            };
            let fetched = tokio::select! {
                () = ctx.cancel.cancelled() => {
                    return Err(ToolError::Cancelled { output: String::new() });
                }
                fetched = tokio::time::timeout(self.timeout, self.fetch(url.clone(), max_bytes)) => {
                    fetched.map_err(|_| ToolError::Failed(format!(
                        "fetching {url} timed out after {} ms; the server is slow or unreachable",
                        self.timeout.as_millis()
                    )))??
                }
            };
            let out = render(&url, fetched, max_bytes).await?;
            let content =
                enforce_budget(out.content, &ctx.output, &ctx.session_id, &ctx.call_id).await;
            Ok(ToolOutput { content, ..out })
        })
    }
}

fn parse_url(given: &str) -> Result<Url, ToolError> {
    let url = Url::parse(given.trim())
        .map_err(|e| ToolError::invalid(NAME, format!("`{given}` is not a valid URL: {e}")))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(ToolError::invalid(
            NAME,
            format!("only http and https URLs can be fetched; `{given}` is a `{other}` URL"),
        )),
    }
}

/// What kind of body a response has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    Html,
    Text,
    Binary,
    /// No usable content type: decided by the bytes.
    Unknown,
}

fn body_kind(content_type: &str) -> Body {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if mime.is_empty() {
        return Body::Unknown;
    }
    if mime == "text/html" || mime == "application/xhtml+xml" {
        return Body::Html;
    }
    let textual = mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || matches!(
            mime.as_str(),
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/x-sh"
                | "application/sql"
                | "application/graphql"
        );
    if textual {
        Body::Text
    } else if mime == "application/octet-stream" {
        Body::Unknown
    } else {
        Body::Binary
    }
}

/// A downloaded response.
struct Fetched {
    final_url: Url,
    status: reqwest::StatusCode,
    content_type: String,
    body: Vec<u8>,
    /// The download stopped at `max_bytes`.
    cut: bool,
}

impl WebFetchTool {
    async fn fetch(&self, url: Url, max_bytes: usize) -> Result<Fetched, ToolError> {
        let client = self.client().await?;
        let failed = |e: reqwest::Error| {
            ToolError::Failed(format!("could not fetch {url}: {}", error_chain(&e)))
        };
        let mut response = client
            .get(url.clone())
            .header(
                ACCEPT,
                "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.5",
            )
            .send()
            .await
            .map_err(failed)?;
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let status = response.status();
        let final_url = response.url().clone();
        if body_kind(&content_type) == Body::Binary {
            return Err(binary(&final_url, status, &content_type));
        }
        let mut body = Vec::new();
        let mut cut = false;
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
            let room = max_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                cut = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched {
            final_url,
            status,
            content_type,
            body,
            cut,
        })
    }
}

fn binary(url: &Url, status: reqwest::StatusCode, content_type: &str) -> ToolError {
    let what = if content_type.is_empty() {
        "binary content".to_owned()
    } else {
        format!("binary content ({content_type})")
    };
    ToolError::Failed(format!(
        "{url} returned {what} with status {status}; web_fetch only reads text and HTML"
    ))
}

/// `e` and its sources, which say what actually went wrong.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

async fn render(url: &Url, fetched: Fetched, max_bytes: usize) -> Result<ToolOutput, ToolError> {
    let mut kind = body_kind(&fetched.content_type);
    if kind == Body::Unknown {
        kind = sniff(&fetched.body);
        if kind == Body::Binary {
            return Err(binary(
                &fetched.final_url,
                fetched.status,
                &fetched.content_type,
            ));
        }
    }
    let charset = charset_of(&fetched.content_type);
    let body = fetched.body;
    let content = tokio::task::spawn_blocking(move || {
        let encoding = charset
            .and_then(|label| encoding_rs::Encoding::for_label(label.as_bytes()))
            .unwrap_or(encoding_rs::UTF_8);
        let (text, _, _) = encoding.decode(&body);
        match kind {
            Body::Html => htmd::HtmlToMarkdown::builder()
                .skip_tags(SKIPPED_TAGS.to_vec())
                .build()
                .convert(&text)
                .map_err(|e| ToolError::Failed(format!("could not convert the HTML: {e}"))),
            _ => Ok(text.into_owned()),
        }
    })
    .await
    .map_err(|e| ToolError::Failed(format!("the tool crashed: {e}")))??;

    let status = fetched.status;
    let mut text = format!("URL: {}\nStatus: {status}\n", fetched.final_url);
    if !fetched.content_type.is_empty() {
        text.push_str(&format!("Content-Type: {}\n", fetched.content_type));
    }
    text.push('\n');
    text.push_str(content.trim_end());
    text.push('\n');
    if fetched.cut {
        text.push_str(&format!(
            "[... the download stopped at {max_bytes} bytes (max_bytes); the rest was not \
             fetched ...]\n"
        ));
    }
    let host = url.host_str().unwrap_or_default();
    let title = format!(
        "web_fetch {host}{} ({}, {} bytes)",
        url.path(),
        status.as_u16(),
        content.len()
    );
    Ok(ToolOutput {
        content: vec![ToolResultContent::Text { text }],
        title,
        outcome: if status.is_success() {
            Outcome::Success
        } else {
            Outcome::Error
        },
    })
}

/// HTML, other text or binary, by the bytes alone.
fn sniff(body: &[u8]) -> Body {
    if content_inspector::inspect(body).is_binary() {
        return Body::Binary;
    }
    let start = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    let start = start.trim_start();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Body::Html
    } else {
        Body::Text
    }
}

/// The `charset` parameter of a content type, if any.
fn charset_of(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches('"').to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_are_classified() {
        assert_eq!(body_kind("text/html; charset=utf-8"), Body::Html);
        assert_eq!(body_kind("TEXT/PLAIN"), Body::Text);
        assert_eq!(body_kind("application/json"), Body::Text);
        assert_eq!(body_kind("application/vnd.api+json"), Body::Text);
        assert_eq!(body_kind("image/png"), Body::Binary);
        assert_eq!(body_kind("application/pdf"), Body::Binary);
        assert_eq!(body_kind("application/octet-stream"), Body::Unknown);
        assert_eq!(body_kind(""), Body::Unknown);
    }

    #[test]
    fn charset_is_read_from_the_content_type() {
        assert_eq!(
            charset_of("text/html; charset=\"ISO-8859-1\"").as_deref(),
            Some("ISO-8859-1")
        );
        assert_eq!(charset_of("text/html"), None);
    }

    #[test]
    fn sniffing_tells_html_text_and_binary_apart() {
        assert_eq!(sniff(b"  <!DOCTYPE html><p>x"), Body::Html);
        assert_eq!(sniff(b"just text"), Body::Text);
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0\0"), Body::Binary);
    }

    #[test]
    fn only_http_urls_are_accepted() {
        assert!(parse_url("https://example.com/x").is_ok());
        let err = parse_url("file:///etc/passwd").unwrap_err().to_string();
        assert!(err.contains("only http and https"), "{err}");
        assert!(err.contains("`file` URL"), "{err}");
        assert!(parse_url("not a url").is_err());
    }
}
