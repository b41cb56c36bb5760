//! Provider errors, classified so the loop can decide what to do.
//!
//! The kind drives the loop (retry, compact, give up); the message is for a
//! person: one sentence, with the provider's own words where it gave any and
//! what to do next, never a Debug dump. Classification lives in `classify`.

use std::time::Duration;

/// What kind of failure a provider error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// HTTP 429 or a rate-limit error body; wait `retry_after` when given.
    RateLimited { retry_after: Option<Duration> },
    /// HTTP 529/503 or an `overloaded_error`.
    Overloaded { retry_after: Option<Duration> },
    /// The prompt does not fit the model's context window.
    ContextOverflow,
    /// HTTP 5xx.
    Server,
    /// HTTP 400-class error that retrying will not fix.
    InvalidRequest,
    /// HTTP 401/403: missing or rejected key.
    Auth,
    /// Could not connect, or the connection broke / stalled.
    Network,
    /// Nothing answered at the URL: the connection was refused, the host
    /// name is unknown, or connecting timed out. Transient later in a
    /// session; on a run's first request, a sign of a wrong base URL.
    Unreachable,
    /// Something answered, but not the provider's API (an HTML page, a web
    /// server's 404/405/501): a wrong base URL, never retried.
    Endpoint,
    /// The stream was malformed or ended early.
    Stream,
    /// The server could not parse the model's own output (llama.cpp's
    /// "… does not match the expected … format" when a tool call came out
    /// garbled): the model failed, not the network. Sampling may go another
    /// way, so asking once more may help; asking many times rarely does.
    ModelOutput,
}

impl ErrorKind {
    /// Whether trying the same request again may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ErrorKind::RateLimited { .. }
                | ErrorKind::Overloaded { .. }
                | ErrorKind::Server
                | ErrorKind::Network
                | ErrorKind::Unreachable
                | ErrorKind::Stream
                | ErrorKind::ModelOutput
        )
    }
}

/// A provider error: its kind, its HTTP status if any, and one sentence.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct LlmError {
    pub kind: ErrorKind,
    pub status: Option<u16>,
    pub message: String,
}

impl LlmError {
    pub fn new(kind: ErrorKind, status: Option<u16>, message: impl Into<String>) -> Self {
        Self {
            kind,
            status,
            message: message.into(),
        }
    }

    /// A malformed or truncated stream.
    pub(crate) fn stream(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Stream, None, message)
    }

    /// How long the provider asked us to wait, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self.kind {
            ErrorKind::RateLimited { retry_after } | ErrorKind::Overloaded { retry_after } => {
                retry_after
            }
            _ => None,
        }
    }
}

/// Reading raw bytes (stdin, a file) for `gyre debug decode-stream` failed.
impl From<std::io::Error> for LlmError {
    fn from(error: std::io::Error) -> Self {
        Self::new(
            ErrorKind::Network,
            None,
            format!("reading the stream failed ({error}); check the input and try again"),
        )
    }
}
