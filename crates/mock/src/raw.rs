//! Raw replays: given bytes sent as the response body, split into chunks by a
//! rule, for replaying captured streams and for wire faults no renderer makes
//! (a malformed JSON event, CRLF framing, an event split anywhere).
//!
//! Any [`HttpReply`] sends its `body` verbatim in chunks by its `chunking`;
//! [`RawReply`] is the shorthand for a successful stream, written with `raw`:
//!
//! ```json
//! {"raw": "data: {\"a\":1}\n\ndata: {oops\n\n",
//!  "chunking": {"seeded": {"seed": 7, "max": 5}},
//!  "delay_between_ms": 2}
//! ```
//!
//! is the HTTP reply `{"status": 200, "headers": {"content-type":
//! "text/event-stream"}, "body": …, "chunking": …, "delay_between_ms": 2}`
//! (a scripted `content-type` wins, and `status` may be given).
//!
//! Invariants:
//! - The chunks, concatenated, are exactly the body's bytes; a split may fall
//!   inside a line, an event or a UTF-8 sequence.
//! - `Seeded` is deterministic: the same seed and maximum give the same split
//!   on every run and platform (a fixed SplitMix64 generator, not `rand`).
//! - A raw reply without a scripted `content-type` header is
//!   `text/event-stream`.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::faults::{End, Stall};
use crate::script::{HttpReply, Reply};

/// Raw bytes as the body of a successful response: the shorthand for an
/// [`HttpReply`] with status 200 and `content-type: text/event-stream`. Its
/// chunks are the "events" that fault positions ([`crate::At::Events`])
/// count. `Reply::from(raw)` (or `HttpReply::from(raw)`) makes the reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawReply {
    /// The body, sent as is.
    #[serde(rename = "raw")]
    pub body: String,
    /// Absent: 200.
    #[serde(default = "ok_status")]
    pub status: u16,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Chunking::is_whole")]
    pub chunking: Chunking,
    /// Wait between chunks.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_between_ms: u64,
    /// Wait before the response headers are sent; `u64::MAX`: until the client
    /// gives up or the server stops.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stall_before_headers_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<Stall>,
    #[serde(default, skip_serializing_if = "End::is_clean")]
    pub end: End,
    /// Keep the connection open after the last chunk (`u64::MAX`: until the
    /// client hangs up or the server stops).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hold_open_ms: u64,
}

fn ok_status() -> u16 {
    200
}

pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Default for RawReply {
    fn default() -> Self {
        Self {
            body: String::new(),
            status: ok_status(),
            headers: BTreeMap::new(),
            chunking: Chunking::Whole,
            delay_between_ms: 0,
            stall_before_headers_ms: 0,
            stall: None,
            end: End::Clean,
            hold_open_ms: 0,
        }
    }
}

impl From<RawReply> for HttpReply {
    fn from(raw: RawReply) -> Self {
        let mut headers = raw.headers;
        if !headers
            .keys()
            .any(|name| name.eq_ignore_ascii_case("content-type"))
        {
            headers.insert("content-type".into(), "text/event-stream".into());
        }
        HttpReply {
            status: raw.status,
            headers,
            body: Some(raw.body),
            chunking: raw.chunking,
            delay_between_ms: raw.delay_between_ms,
            stall_before_headers_ms: raw.stall_before_headers_ms,
            stall: raw.stall,
            end: raw.end,
            hold_open_ms: raw.hold_open_ms,
        }
    }
}

impl From<RawReply> for Reply {
    fn from(raw: RawReply) -> Self {
        Reply::Http(raw.into())
    }
}

/// How a raw body is split into chunks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Chunking {
    /// One chunk.
    #[default]
    Whole,
    /// Chunks of this many bytes (the last may be shorter); 0 counts as 1.
    Every(usize),
    /// Chunks of pseudo-random sizes from 1 to `max` bytes (0 counts as 1).
    Seeded { seed: u64, max: usize },
}

impl Chunking {
    pub(crate) fn is_whole(&self) -> bool {
        matches!(self, Chunking::Whole)
    }

    /// Splits `body` into its chunks; an empty body is no chunks.
    pub(crate) fn split(&self, body: Bytes) -> Vec<Bytes> {
        let mut sizes: Box<dyn FnMut() -> usize> = match *self {
            Chunking::Whole => return if body.is_empty() { vec![] } else { vec![body] },
            Chunking::Every(n) => Box::new(move || n.max(1)),
            Chunking::Seeded { seed, max } => {
                let mut rng = SplitMix64(seed);
                let max = max.max(1) as u64;
                // `max` fits a usize, so the result does too.
                Box::new(move || (1 + rng.next() % max) as usize)
            }
        };
        let mut out = Vec::new();
        let mut rest = body;
        while !rest.is_empty() {
            let size = sizes().min(rest.len());
            out.push(rest.split_to(size));
        }
        out
    }
}

/// The SplitMix64 generator: tiny, fixed, and good enough for chunk sizes.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = "data: {\"text\":\"héllo wörld\"}\n\n";

    #[test]
    fn every_rule_reassembles_exactly() {
        for chunking in [
            Chunking::Whole,
            Chunking::Every(0),
            Chunking::Every(1),
            Chunking::Every(7),
            Chunking::Every(10_000),
            Chunking::Seeded { seed: 1, max: 5 },
            Chunking::Seeded { seed: 2, max: 0 },
        ] {
            let chunks = chunking.split(Bytes::from_static(BODY.as_bytes()));
            assert_eq!(chunks.concat(), BODY.as_bytes(), "{chunking:?}");
            assert!(chunks.iter().all(|c| !c.is_empty()), "{chunking:?}");
        }
        let sevens = Chunking::Every(7).split(Bytes::from_static(BODY.as_bytes()));
        assert!(sevens[..sevens.len() - 1].iter().all(|c| c.len() == 7));
        assert!(Chunking::Every(3).split(Bytes::new()).is_empty());
    }

    #[test]
    fn seeded_splits_repeat_and_differ_by_seed() {
        let split = |seed| {
            Chunking::Seeded { seed, max: 6 }
                .split(Bytes::from_static(BODY.as_bytes()))
                .iter()
                .map(Bytes::len)
                .collect::<Vec<_>>()
        };
        assert_eq!(split(42), split(42));
        assert_ne!(split(42), split(43));
        assert!(split(42).iter().all(|&n| (1..=6).contains(&n)));
        // Pinned, so that a change of generator is noticed: scripts rely on it.
        let mut rng = SplitMix64(0);
        assert_eq!(rng.next(), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn the_json_form_defaults_and_rejects_unknown_fields() {
        let raw: RawReply =
            serde_json::from_str(r#"{"raw": "x", "chunking": {"every": 7}}"#).expect("parses");
        assert_eq!(raw.status, 200);
        assert_eq!(raw.chunking, Chunking::Every(7));
        let again = serde_json::to_string(&raw).expect("serialises");
        assert_eq!(again, r#"{"raw":"x","status":200,"chunking":{"every":7}}"#);
        assert!(serde_json::from_str::<RawReply>(r#"{"raw": "x", "chunks": 7}"#).is_err());
        let http = HttpReply::from(raw);
        assert_eq!(http.headers["content-type"], "text/event-stream");
        assert_eq!((http.status, http.body.as_deref()), (200, Some("x")));
        let typed = HttpReply::from(RawReply {
            headers: [("Content-Type".to_string(), "text/plain".to_string())].into(),
            ..RawReply::default()
        });
        assert_eq!(typed.headers.len(), 1);
        let seeded: RawReply =
            serde_json::from_str(r#"{"raw": "x", "chunking": {"seeded": {"seed": 1, "max": 3}}}"#)
                .expect("parses");
        assert_eq!(seeded.chunking, Chunking::Seeded { seed: 1, max: 3 });
    }
}
