//! Provider errors, classified so the loop can decide what to do.

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
    /// The stream was malformed or ended early.
    Stream,
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
                | ErrorKind::Stream
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
