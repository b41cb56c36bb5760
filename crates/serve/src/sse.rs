//! A live session's updates as Server-Sent Events.
//!
//! Each update is one SSE event:
//! - `id:` `EPOCH-SEQ`: the [`Epoch`] of the live session (hex, chosen when
//!   this process opened it) and the update's sequence number (1, 2, …
//!   without gaps, per live session);
//! - `event:` `status` for a status change, else the run event's tag
//!   (`run_started`, `text_delta`, …, `run_finished`, and any tag added
//!   later: events are serialised generically, never listed here);
//! - `data:` one line of JSON: `{"status": "busy"}`, or the event's own
//!   JSON (`{"event": "text_delta", "text": "…"}`) with `"run": N` first.
//!
//! Invariants:
//! - A stream starts after what the client has [`Seen`] (`Last-Event-ID`,
//!   else `?after=SEQ`, else 0: every update still kept) and sends the
//!   updates that follow, in order, without gaps, until the client goes or
//!   the server stops.
//! - A session closed and opened again (idle for long, a restarted server,
//!   another host) numbers its updates from 1 again under a new epoch. A
//!   `Last-Event-ID` of another epoch (or the bare number of the form
//!   before epochs), or a sequence number beyond the newest update, can
//!   therefore not say where to resume: the stream says so with one `event:
//!   reset` (no `id:`) and starts from the oldest kept update. An id never
//!   silently points into another numbering. `?after=` takes a bare
//!   sequence number, meant for the current epoch.
//! - A reader that fell more than `KEPT_UPDATES` behind gets one
//!   `event: lagged` (`{"after", "resumes_at", "missed"}`, with `id:
//!   EPOCH-(resumes_at - 1)` so a reconnect resumes at the right place),
//!   then goes on from the oldest kept update: what was lost is said, never
//!   skipped silently.
//! - At shutdown a stream sends what was already published (the runs'
//!   `run_finished`, the last status), then ends.
//! - A comment (`: keep-alive`) is sent after [`KEEP_ALIVE`] without
//!   traffic, so proxies and clients keep the connection.
//! - Serialising happens per reader, as the reader pulls: a slow client
//!   never slows the run, only itself.

use std::collections::hash_map::RandomState;
use std::convert::Infallible;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::Stream;
use gyre_core::LiveSession;
use gyre_core::live::{Lagged, Numbered, Update};
use gyre_protocol::Event;
use tokio_util::sync::CancellationToken;

/// Quiet time after which a keep-alive comment is sent.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The numbering a live session's updates belong to: chosen anew each time
/// this process opens the session, so ids of two openings never mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Epoch(u64);

impl Epoch {
    /// A fresh epoch: unpredictable, and distinct from every other one with
    /// overwhelming probability (across processes and hosts too).
    pub fn new() -> Epoch {
        static OPENED: AtomicU64 = AtomicU64::new(0);
        // RandomState is seeded from the OS's randomness; the time and a
        // counter make two epochs differ even under one seed.
        let opened = OPENED.fetch_add(1, Ordering::Relaxed);
        Epoch(RandomState::new().hash_one((SystemTime::now(), opened, std::process::id())))
    }

    /// The event id of update `seq`.
    fn id(self, seq: u64) -> String {
        format!("{:x}-{seq}", self.0)
    }
}

/// What a client says it has seen already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Updates up to this sequence number of the current epoch (`?after=`).
    Upto(u64),
    /// A `Last-Event-ID`: `EPOCH-SEQ`.
    Id { epoch: Epoch, seq: u64 },
    /// A `Last-Event-ID` that is a bare number (the form before epochs):
    /// its numbering cannot be told.
    Bare(u64),
}

impl Seen {
    /// A `Last-Event-ID` header's value; `None` when it is no event id.
    pub fn parse_last_event_id(text: &str) -> Option<Seen> {
        let text = text.trim();
        match text.split_once('-') {
            Some((epoch, seq)) => Some(Seen::Id {
                epoch: Epoch(u64::from_str_radix(epoch, 16).ok()?),
                seq: seq.parse().ok()?,
            }),
            None => text.parse().ok().map(Seen::Bare),
        }
    }
}

/// Why a stream cannot resume where the client asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ResetReason {
    /// The id belongs to another opening of the session (or has none).
    OtherEpoch,
    /// Beyond the newest update.
    BeyondNewest,
}

/// Where a stream of `live` (now at `last`, in `epoch`) starts for a
/// client that has seen `seen`: the sequence number to read after, and the
/// reason for a reset when it cannot go on from there.
fn start(seen: Seen, epoch: Epoch, last: u64) -> (u64, Option<ResetReason>) {
    let after = match seen {
        Seen::Upto(seq) => seq,
        Seen::Id { epoch: theirs, seq } if theirs == epoch => seq,
        Seen::Id { .. } | Seen::Bare(_) => return (0, Some(ResetReason::OtherEpoch)),
    };
    if after > last {
        (0, Some(ResetReason::BeyondNewest))
    } else {
        (after, None)
    }
}

/// The SSE response reading `live` (numbered in `epoch`) after what the
/// client has `seen`.
pub fn response(
    live: Arc<LiveSession>,
    epoch: Epoch,
    seen: Seen,
    end: CancellationToken,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let last = live.last_seq();
    let (after, reset) = start(seen, epoch, last);
    let reset = reset.map(|reason| reset_frame(reason, last));
    let reader = live.read_after(after);
    let updates = futures::stream::unfold((reader, end), move |(mut reader, end)| async move {
        let next = if end.is_cancelled() {
            // Shutting down: what was published (the runs' ends) still goes
            // out, then the stream ends.
            reader.try_next()?
        } else {
            tokio::select! {
                next = reader.next() => next,
                () = end.cancelled() => reader.try_next()?,
            }
        };
        let frame = match next {
            Ok(numbered) => frame(epoch, &numbered),
            Err(lagged) => lagged_frame(epoch, lagged),
        };
        Some((Ok(frame), (reader, end)))
    });
    let stream = futures::StreamExt::chain(futures::stream::iter(reset.map(Ok)), updates);
    Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive"))
}

/// The SSE event of one update.
fn frame(epoch: Epoch, numbered: &Numbered) -> SseEvent {
    let (name, data) = match numbered.update.as_ref() {
        Update::Status(status) => (
            "status".to_string(),
            serde_json::json!({ "status": status }).to_string(),
        ),
        Update::Event { run, event } => event_json(*run, event),
    };
    SseEvent::default()
        .id(epoch.id(numbered.seq))
        .event(name)
        .data(data)
}

/// The event's tag and its JSON with `"run"` first.
fn event_json(run: u64, event: &Event) -> (String, String) {
    let json = match serde_json::to_string(event) {
        Ok(json) => json,
        Err(e) => {
            // Events hold plain data; this would be a bug, said in the stream.
            return (
                "error".to_string(),
                serde_json::json!({ "run": run, "error": format!("cannot serialise an event: {e}") })
                    .to_string(),
            );
        }
    };
    let name = tag_of(&json).unwrap_or("event").to_string();
    // `{"event":…}` becomes `{"run":N,"event":…}`: no tree is built.
    let data = match json.strip_prefix('{') {
        Some(rest) if rest.starts_with('"') => format!("{{\"run\":{run},{rest}"),
        _ => json,
    };
    (name, data)
}

/// The `"event"` tag, which serde writes first for an internally tagged
/// enum.
fn tag_of(json: &str) -> Option<&str> {
    let rest = json.strip_prefix("{\"event\":\"")?;
    let end = rest.find('"')?;
    Some(&rest[..end])
}

fn lagged_frame(epoch: Epoch, lagged: Lagged) -> SseEvent {
    let missed = lagged.resumes_at.saturating_sub(lagged.after + 1);
    SseEvent::default()
        .id(epoch.id(lagged.resumes_at.saturating_sub(1)))
        .event("lagged")
        .data(
            serde_json::json!({
                "after": lagged.after,
                "resumes_at": lagged.resumes_at,
                "missed": missed,
                "message": lagged.to_string(),
            })
            .to_string(),
        )
}

fn reset_frame(reason: ResetReason, last: u64) -> SseEvent {
    let (reason, message) = match reason {
        ResetReason::OtherEpoch => (
            "other_epoch",
            "that event id is from another opening of the session (it was closed and opened again since, and its numbering started anew): what follows is every update still kept",
        ),
        ResetReason::BeyondNewest => (
            "beyond_newest",
            "there is no such update yet: what follows is every update still kept",
        ),
    };
    SseEvent::default().event("reset").data(
        serde_json::json!({ "reason": reason, "last_seq": last, "message": message }).to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use gyre_protocol::{FinishReason, RunSummary, Usage};

    #[test]
    fn ids_carry_the_epoch_and_only_the_same_epoch_resumes() {
        let epoch = Epoch(0xabc);
        assert_eq!(epoch.id(7), "abc-7");
        assert_eq!(
            Seen::parse_last_event_id(" abc-7 "),
            Some(Seen::Id { epoch, seq: 7 })
        );
        assert_eq!(Seen::parse_last_event_id("7"), Some(Seen::Bare(7)));
        for garbage in ["", "abc", "xyz-1", "abc-", "-1", "abc-1-2", "abc--1"] {
            assert_eq!(Seen::parse_last_event_id(garbage), None, "{garbage:?}");
        }
        assert_eq!(start(Seen::Id { epoch, seq: 3 }, epoch, 5), (3, None));
        assert_eq!(start(Seen::Upto(5), epoch, 5), (5, None));
        let other = Seen::Id {
            epoch: Epoch(0xabd),
            seq: 3,
        };
        assert_eq!(start(other, epoch, 5), (0, Some(ResetReason::OtherEpoch)));
        assert_eq!(
            start(Seen::Bare(3), epoch, 5),
            (0, Some(ResetReason::OtherEpoch))
        );
        assert_eq!(
            start(Seen::Upto(6), epoch, 5),
            (0, Some(ResetReason::BeyondNewest))
        );
        assert_eq!(
            start(Seen::Id { epoch, seq: 6 }, epoch, 5),
            (0, Some(ResetReason::BeyondNewest))
        );
        assert_ne!(Epoch::new(), Epoch::new());
    }

    #[test]
    fn events_keep_their_tag_and_gain_the_run() {
        let (name, data) = event_json(
            3,
            &Event::TextDelta {
                text: "hi \"there\"".into(),
            },
        );
        assert_eq!(name, "text_delta");
        let value: serde_json::Value = serde_json::from_str(&data).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"run": 3, "event": "text_delta", "text": "hi \"there\""})
        );

        let summary = RunSummary {
            reason: FinishReason::Completed,
            final_text: "done".into(),
            num_turns: 1,
            usage: Usage::default(),
            cost_usd: 0.0,
            duration_ms: 5,
            error: None,
        };
        let (name, data) = event_json(1, &Event::RunFinished(summary));
        assert_eq!(name, "run_finished");
        let value: serde_json::Value = serde_json::from_str(&data).unwrap();
        assert_eq!(value["run"], 1);
        assert_eq!(value["final_text"], "done");
        assert_eq!(value["reason"], "completed");
    }
}
