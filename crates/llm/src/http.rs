//! The HTTP side shared by every adapter: client configuration, and sending one
//! streaming request.
//!
//! Invariants:
//! - Nothing is sent until the returned stream is polled; dropping it aborts the
//!   request and closes the connection.
//! - Waits are bounded, each by its own timeout, and each ends in a transient
//!   `ErrorKind::Network` error that says which wait it was, so the loop can
//!   retry: connecting (TCP and TLS, default 10 s; a property of the reqwest
//!   client, so it is set where the client is built), the first byte (from
//!   sending the request to the response headers, default 60 s; it includes
//!   connecting) and every gap between body bytes (idle, default 300 s: a
//!   reasoning model may think for minutes between deltas). There is no overall
//!   timeout, because a long answer is legitimate.
//! - Error bodies are read only up to [`MAX_ERROR_BODY_BYTES`].
//! - OpenAI's `prompt_cache_key` goes only where it is known to be accepted
//!   ([`PromptCacheKey`]).

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt, TryStreamExt};
use reqwest::header::{CONTENT_TYPE, HeaderMap};

use crate::ModelStream;
use crate::classify::{self, KeyPresence, Provider};
use crate::error::{ErrorKind, LlmError};
use crate::sse::{IdleTimeout, human_duration};

/// How long to wait for a TCP (and TLS) connection by default.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long to wait for the response headers by default.
const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a stream may go without a byte by default.
const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// The most of an error response we read: enough for any provider's message.
const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

/// Where and how an adapter talks to its provider.
#[derive(Clone)]
pub struct ClientConfig {
    /// The provider's base URL, without a trailing `/`, in its SDK's
    /// convention (Anthropic: no `/v1`; OpenAI: with `/v1`).
    pub base_url: String,
    pub api_key: Option<String>,
    /// Shared by every client of the process (it holds the connection pool).
    pub http: reqwest::Client,
    /// The connect timeout `http` was built with (set it with
    /// [`ClientConfig::with_connect_timeout`]); kept for messages.
    connect_timeout: Duration,
    /// No response headers this long after sending the request fails with
    /// `ErrorKind::Network` ("no response from … within 60 s").
    pub first_byte_timeout: Duration,
    /// A response body with no byte for this long fails with
    /// `ErrorKind::Network` ("the stream stalled …").
    pub idle_timeout: Duration,
    /// Whether the OpenAI Chat adapter sends `prompt_cache_key`.
    pub prompt_cache_key: PromptCacheKey,
}

/// Whether the OpenAI Chat adapter sends [`crate::ModelRequest::cache_key`] as
/// `prompt_cache_key`, which routes requests sharing a prefix to the same
/// cache on OpenAI's servers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PromptCacheKey {
    /// Only to OpenAI's own API (a base URL on `api.openai.com`): compatible
    /// servers (vLLM, llama.cpp, proxies) may reject fields they do not know.
    #[default]
    Auto,
    /// To any server (one known to accept the field).
    Always,
    Never,
}

impl ClientConfig {
    /// A configuration with a fresh client made for `base_url`
    /// ([`http_client_for`]) and the default timeouts: connect 10 s, first
    /// byte 60 s, idle 300 s. Trailing `/`s of `base_url` are removed.
    ///
    /// To share one client between configurations, use [`ClientConfig::with_http`].
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        let base_url = base_url.into();
        let http = http_client_for(&base_url);
        Self::with_http(base_url, api_key, http)
    }

    /// Like [`ClientConfig::new`], with a client the caller already has
    /// (built by [`http_client_for`] or [`http_client`], whose connect timeout
    /// is the default 10 s that messages then name).
    pub fn with_http(
        base_url: impl Into<String>,
        api_key: Option<String>,
        http: reqwest::Client,
    ) -> Self {
        let mut base_url = base_url.into();
        let trimmed_len = base_url.trim_end_matches('/').len();
        base_url.truncate(trimmed_len);
        Self {
            base_url,
            api_key,
            http,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            first_byte_timeout: DEFAULT_FIRST_BYTE_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            prompt_cache_key: PromptCacheKey::default(),
        }
    }

    /// Sets the connect timeout by building a new client for the base URL
    /// with it ([`http_client_with_connect_timeout`]): the timeout is a
    /// property of the reqwest client. A client shared through
    /// [`ClientConfig::with_http`] is replaced by one of this configuration's
    /// own.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.http = http_client_with_connect_timeout(&self.base_url, timeout);
        self.connect_timeout = timeout;
        self
    }

    /// The connect timeout of [`ClientConfig::http`].
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// Whether `prompt_cache_key` may be sent to this base URL.
    pub(crate) fn sends_prompt_cache_key(&self) -> bool {
        match self.prompt_cache_key {
            PromptCacheKey::Always => true,
            PromptCacheKey::Never => false,
            PromptCacheKey::Auto => reqwest::Url::parse(&self.base_url)
                .is_ok_and(|url| url.host_str() == Some("api.openai.com")),
        }
    }

    pub(crate) fn key_presence(&self) -> KeyPresence {
        match self.api_key {
            Some(_) => KeyPresence::Given,
            None => KeyPresence::Missing,
        }
    }
}

/// The key stays out of logs.
impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("prompt_cache_key", &self.prompt_cache_key)
            .finish_non_exhaustive()
    }
}

/// A client for requests to `base_url` only, with the default connect
/// timeout (10 s). A plain-`http://` base (a local model server, the mock)
/// gets a client without the system's CA certificates: loading them is most
/// of a client's start-up cost, and every request of a `ModelClient` goes to
/// its base URL, so they would never be used.
pub fn http_client_for(base_url: &str) -> reqwest::Client {
    http_client_with_connect_timeout(base_url, DEFAULT_CONNECT_TIMEOUT)
}

/// Like [`http_client_for`], with another connect timeout.
pub fn http_client_with_connect_timeout(
    base_url: &str,
    connect_timeout: Duration,
) -> reqwest::Client {
    if base_url.starts_with("http://") {
        let plain = client_builder(connect_timeout)
            .tls_certs_only(Vec::new())
            .build();
        if let Ok(client) = plain {
            return client;
        }
    }
    https_client(connect_timeout)
}

/// The HTTP client gyre uses for model requests: rustls, a 10 s connect
/// timeout, no overall timeout, `User-Agent: gyre/<version>`.
///
/// Building one reads and parses the system's CA certificates: the client
/// itself takes ~0.1 ms, the certificates ~40 ms in a debug build (much less
/// in release). Build it once per process, off the start-up path, and clone it
/// (clones share the connection pool). If the system has no CA certificates,
/// the client still works for plain HTTP (local servers) and HTTPS fails with
/// a certificate error.
pub fn http_client() -> reqwest::Client {
    https_client(DEFAULT_CONNECT_TIMEOUT)
}

/// Installs ring as the process's default rustls provider (once), as
/// `gyre_tools::tls::install_crypto_provider` does: gyre-llm does not depend
/// on gyre-tools (that would put the tools' build before this crate's), so it
/// holds the same three lines. A provider installed first is kept.
fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means a provider is already installed: that one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

fn client_builder(connect_timeout: Duration) -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .user_agent(concat!("gyre/", env!("CARGO_PKG_VERSION")))
}

fn https_client(connect_timeout: Duration) -> reqwest::Client {
    match client_builder(connect_timeout).build() {
        Ok(client) => client,
        Err(error) => {
            tracing::warn!(
                %error,
                "could not load the system's CA certificates; HTTPS requests will fail"
            );
            client_builder(connect_timeout)
                .tls_certs_only(Vec::new())
                .build()
                .unwrap_or_default()
        }
    }
}

/// A byte stream as the decoders take it.
pub(crate) type ByteStream = std::pin::Pin<Box<dyn Stream<Item = Result<Bytes, LlmError>> + Send>>;

/// One streaming POST, ready to send.
pub(crate) struct SseRequest {
    pub provider: Provider,
    pub url: String,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    pub decode: fn(ByteStream) -> ModelStream,
}

/// Sends `request` when the returned stream is first polled and decodes the
/// answer; HTTP and transport failures become classified errors.
pub(crate) fn stream_sse(config: &ClientConfig, request: SseRequest) -> ModelStream {
    let http = config.http.clone();
    let idle = config.idle_timeout;
    let first_byte = config.first_byte_timeout;
    let connect = config.connect_timeout;
    let key = config.key_presence();
    let answer = async move {
        let SseRequest {
            provider,
            url,
            headers,
            body,
            decode,
        } = request;
        let send = http.post(&url).headers(headers).body(body).send();
        let response = match tokio::time::timeout(first_byte, send).await {
            Ok(Ok(response)) => response,
            Ok(Err(error)) if error.is_connect() && error.is_timeout() => {
                return Err(LlmError::new(
                    ErrorKind::Unreachable,
                    None,
                    format!(
                        "could not connect to {url} within {}; check the base URL, the network and that the server is running",
                        human_duration(connect)
                    ),
                ));
            }
            Ok(Err(error)) => return Err(classify::send_error(provider, &url, &error)),
            Err(_elapsed) => {
                return Err(LlmError::new(
                    ErrorKind::Network,
                    None,
                    format!(
                        "no response from {} within {}; check that the server at {url} is working, then try again",
                        provider.label,
                        human_duration(first_byte)
                    ),
                ));
            }
        };
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        if !response.status().is_success() {
            let body = read_bounded(response.bytes_stream(), idle).await;
            return Err(classify::http_error(
                provider, &url, key, status, &headers, &body,
            ));
        }
        if let Some(error) = classify::html_success(provider, &url, status, &headers) {
            return Err(error);
        }
        if is_json(&headers) {
            // Some servers answer a streaming request with one JSON object,
            // usually an error; never treat that as an empty success.
            let body = read_bounded(response.bytes_stream(), idle).await;
            return Err(classify::unframed_error(provider, &body).unwrap_or_else(|| {
                LlmError::stream(format!(
                    "{} answered with JSON instead of an event stream; check that the server at {url} supports streaming",
                    provider.subject()
                ))
            }));
        }
        let bytes = response
            .bytes_stream()
            .map_err(move |error| classify::body_error(provider, &error));
        Ok(decode(Box::pin(IdleTimeout::new(bytes, idle))))
    };
    Box::pin(futures::stream::once(answer).try_flatten())
}

/// Headers of a JSON request authorised with `Authorization: Bearer KEY`
/// (the OpenAI APIs); a key that is not a valid header value is an error.
pub(crate) fn bearer_json_headers(
    config: &ClientConfig,
    provider: Provider,
) -> Result<HeaderMap, LlmError> {
    use reqwest::header::{AUTHORIZATION, HeaderValue};
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(key) = &config.api_key {
        let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
            .map_err(|_| classify::bad_key_error(provider))?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    Ok(headers)
}

/// A stream that yields one error (for a request that could not be built).
pub(crate) fn failed(error: LlmError) -> ModelStream {
    Box::pin(futures::stream::once(std::future::ready(Err(error))))
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

/// Reads at most [`MAX_ERROR_BODY_BYTES`] of a body, giving up (with what it
/// has) on an error, at the end, or after `idle` without a byte: the status
/// alone still classifies the error. Used for live error responses and for
/// recorded ones (`replay`).
pub(crate) async fn read_bounded<S, E>(chunks: S, idle: Duration) -> String
where
    S: Stream<Item = Result<Bytes, E>>,
{
    let mut chunks = std::pin::pin!(chunks);
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY_BYTES {
        match tokio::time::timeout(idle, chunks.next()).await {
            Ok(Some(Ok(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY_BYTES);
    String::from_utf8_lossy(&body).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_slashes_are_trimmed_and_the_key_is_not_debug_printed() {
        let config = ClientConfig::new("http://h:1/v1//", Some("sk-secret".into()));
        assert_eq!(config.base_url, "http://h:1/v1");
        assert_eq!(config.idle_timeout, Duration::from_secs(300));
        assert_eq!(config.first_byte_timeout, Duration::from_secs(60));
        assert_eq!(config.connect_timeout(), Duration::from_secs(10));
        let debug = format!("{config:?}");
        assert!(!debug.contains("sk-secret"), "{debug}");
        let config = config.with_connect_timeout(Duration::from_millis(200));
        assert_eq!(config.connect_timeout(), Duration::from_millis(200));
    }

    #[test]
    fn prompt_cache_key_goes_to_openai_only_unless_configured() {
        let sends = |url: &str, policy| {
            let mut config = ClientConfig::with_http(url, None, http_client());
            config.prompt_cache_key = policy;
            config.sends_prompt_cache_key()
        };
        assert!(sends("https://api.openai.com/v1", PromptCacheKey::Auto));
        assert!(!sends("http://127.0.0.1:11434/v1", PromptCacheKey::Auto));
        assert!(!sends(
            "https://api.openai.com.evil.example/v1",
            PromptCacheKey::Auto
        ));
        assert!(!sends("https://openrouter.ai/api/v1", PromptCacheKey::Auto));
        assert!(sends("http://127.0.0.1:8000/v1", PromptCacheKey::Always));
        assert!(!sends("https://api.openai.com/v1", PromptCacheKey::Never));
    }

    #[test]
    fn building_the_client_is_cheap() {
        let started = std::time::Instant::now();
        let _client = http_client();
        // Generous for a loaded 2-core CI box; the point is "no network, no
        // big work", which would take seconds.
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
