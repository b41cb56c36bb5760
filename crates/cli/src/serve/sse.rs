//! A live session's updates as Server-Sent Events.
//!
//! Each update is one SSE event:
//! - `id:` its sequence number (1, 2, … without gaps, per live session);
//! - `event:` `status` for a status change, else the run event's tag
//!   (`run_started`, `text_delta`, …, `run_finished`, and any tag added
//!   later: events are serialised generically, never listed here);
//! - `data:` one line of JSON: `{"status": "busy"}`, or the event's own
//!   JSON (`{"event": "text_delta", "text": "…"}`) with `"run": N` first.
//!
//! Invariants:
//! - A stream starts after a sequence number (`Last-Event-ID`, else
//!   `?after=`, else 0: every update still kept) and sends the updates that
//!   follow, in order, without gaps, until the client goes or the server
//!   stops.
//! - A reader that fell more than `KEPT_UPDATES` behind gets one
//!   `event: lagged` (`{"after", "resumes_at", "missed"}`, with `id:
//!   resumes_at - 1` so a reconnect resumes at the right place), then goes
//!   on from the oldest kept update: what was lost is said, never skipped
//!   silently.
//! - A `Last-Event-ID` beyond the newest update means the session was
//!   closed and opened again since (its numbering restarted): the stream
//!   says so with one `event: reset` (no `id:`) and starts from the oldest
//!   kept update.
//! - At shutdown a stream sends what was already published (the runs'
//!   `run_finished`, the last status), then ends.
//! - A comment (`: keep-alive`) is sent after [`KEEP_ALIVE`] without
//!   traffic, so proxies and clients keep the connection.
//! - Serialising happens per reader, as the reader pulls: a slow client
//!   never slows the run, only itself.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::Stream;
use gyre_core::LiveSession;
use gyre_core::live::{Lagged, Numbered, Update};
use gyre_protocol::Event;
use tokio_util::sync::CancellationToken;

/// Quiet time after which a keep-alive comment is sent.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The SSE response reading `live` after sequence number `after`.
pub fn response(
    live: Arc<LiveSession>,
    after: u64,
    end: CancellationToken,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let last = live.last_seq();
    let (reset, start) = if after > last {
        (Some(reset_frame(after, last)), 0)
    } else {
        (None, after)
    };
    let reader = live.read_after(start);
    let updates = futures::stream::unfold((reader, end), |(mut reader, end)| async move {
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
            Ok(numbered) => frame(&numbered),
            Err(lagged) => lagged_frame(lagged),
        };
        Some((Ok(frame), (reader, end)))
    });
    let stream = futures::StreamExt::chain(futures::stream::iter(reset.map(Ok)), updates);
    Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive"))
}

/// The SSE event of one update.
pub fn frame(numbered: &Numbered) -> SseEvent {
    let (name, data) = match numbered.update.as_ref() {
        Update::Status(status) => (
            "status".to_string(),
            serde_json::json!({ "status": status }).to_string(),
        ),
        Update::Event { run, event } => event_json(*run, event),
    };
    SseEvent::default()
        .id(numbered.seq.to_string())
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

fn lagged_frame(lagged: Lagged) -> SseEvent {
    let missed = lagged.resumes_at.saturating_sub(lagged.after + 1);
    SseEvent::default()
        .id(lagged.resumes_at.saturating_sub(1).to_string())
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

fn reset_frame(after: u64, last: u64) -> SseEvent {
    SseEvent::default().event("reset").data(
        serde_json::json!({
            "after": after,
            "last_seq": last,
            "message": format!(
                "there is no update {after} here (the newest is {last}): the session was opened again since, and its numbering started anew; what follows is every update still kept"
            ),
        })
        .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use gyre_protocol::{FinishReason, RunSummary, Usage};

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
