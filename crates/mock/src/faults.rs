//! The faults every reply kind can carry, in script form ([`At`], [`Stall`],
//! [`End`]) and as one resolved [`Faults`] value the server acts on.
//!
//! ```json
//! {"items": [{"text": "hello"}],
//!  "stall_before_headers_ms": 200,
//!  "stall": {"after": {"events": 2}, "ms": 500},
//!  "end": {"reset_after": {"bytes": 120}}}
//! ```
//!
//! Positions ([`At`]) count the frames of the body as sent (SSE events for a
//! streamed answer, the chunks of a raw reply, one frame for a whole JSON
//! body) or its bytes. A position past the end means the end.
//!
//! A wait of `u64::MAX` ms lasts until the client gives up or the server stops.
//! Every wait ends when the server shuts down, so a stall cannot keep a
//! graceful shutdown waiting.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// A position in a response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum At {
    /// After this many whole frames (SSE events, raw chunks).
    Events(usize),
    /// After this many bytes of the body, possibly inside a frame or a UTF-8
    /// sequence.
    Bytes(usize),
}

/// A pause in the middle of a body: the connection stays open, nothing is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stall {
    pub after: At,
    /// How long; `u64::MAX`: until the client gives up or the server stops.
    pub ms: u64,
}

/// How a body ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum End {
    /// Everything is sent and the body ends properly (after `hold_open_ms`).
    #[default]
    Clean,
    /// The body ends properly at this position, without the rest: the client
    /// sees a well-formed but incomplete stream (no final event).
    TruncateAfter(At),
    /// The connection is dropped at this position without a proper end of the
    /// body: the client sees a broken body (a reset), never a clean end.
    ResetAfter(At),
}

impl End {
    pub(crate) fn is_clean(&self) -> bool {
        matches!(self, End::Clean)
    }
}

/// A wait: none, a bounded one, or one that lasts until the server stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    None,
    For(Duration),
    Forever,
}

impl Wait {
    pub fn from_millis(ms: u64) -> Self {
        match ms {
            0 => Wait::None,
            u64::MAX => Wait::Forever,
            ms => Wait::For(Duration::from_millis(ms)),
        }
    }

    /// Waits unless the server stops first; `false` when it stopped.
    pub async fn wait(self, shutdown: &CancellationToken) -> bool {
        match self {
            Wait::None => !shutdown.is_cancelled(),
            Wait::For(duration) => tokio::select! {
                () = tokio::time::sleep(duration) => true,
                () = shutdown.cancelled() => false,
            },
            Wait::Forever => {
                shutdown.cancelled().await;
                false
            }
        }
    }
}

/// The faults of one reply, whatever its kind.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Faults {
    pub stall_before_headers: Wait,
    pub delay_between: Duration,
    pub stall: Option<Stall>,
    pub end: End,
    /// The older spelling of a reset: this many whole events, then half of the
    /// next. Only looked at when `end` is clean.
    pub cut_after_events: Option<usize>,
    pub hold_open: Wait,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_forms() {
        let end: End = serde_json::from_str(r#"{"reset_after": {"bytes": 7}}"#).expect("end");
        assert_eq!(end, End::ResetAfter(At::Bytes(7)));
        let end: End = serde_json::from_str(r#""clean""#).expect("clean");
        assert_eq!(end, End::Clean);
        let stall: Stall =
            serde_json::from_str(r#"{"after": {"events": 2}, "ms": 5}"#).expect("stall");
        assert_eq!(stall.after, At::Events(2));
        assert!(serde_json::from_str::<Stall>(r#"{"after": {"events": 2}, "for": 5}"#).is_err());
    }

    #[tokio::test]
    async fn a_forever_wait_ends_on_shutdown() {
        let shutdown = CancellationToken::new();
        shutdown.cancel();
        assert!(!Wait::Forever.wait(&shutdown).await);
        assert!(!Wait::For(Duration::from_secs(60)).wait(&shutdown).await);
        assert_eq!(Wait::from_millis(0), Wait::None);
    }
}
