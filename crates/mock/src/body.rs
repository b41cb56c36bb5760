//! The response body of a reply with its faults: pauses between frames, a
//! stall at a position, a truncated or reset end, a connection held open.
//!
//! A body is planned up front as a list of sends and pauses, with the fault
//! positions turned into byte offsets (a frame is split where one falls inside
//! it), then played one action at a time.
//!
//! Invariants:
//! - Frames are produced one at a time as hyper asks for them, so a slow
//!   client holds back the server (no buffering beyond the planned frames).
//! - A reset ends the body with an error, which makes hyper drop the
//!   connection without the chunked terminator: the client sees a broken body,
//!   never a clean end. A truncation ends the body properly.
//! - Every wait also ends when the server shuts down, so a stalled stream
//!   cannot keep a graceful shutdown waiting.

use std::collections::VecDeque;

use axum::body::Body;
use bytes::Bytes;
use futures::Stream;
use tokio_util::sync::CancellationToken;

use crate::faults::{At, End, Faults, Wait};

#[derive(Debug, Clone, PartialEq)]
enum Action {
    Send(Bytes),
    Pause(Wait),
}

/// What happens after the last action.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Finish {
    /// A proper end, after holding the connection open.
    Close(Wait),
    /// An abrupt one.
    Reset,
    Done,
}

/// How a body is sent.
#[derive(Debug, Clone)]
pub(crate) struct BodyPlan {
    actions: VecDeque<Action>,
    finish: Finish,
}

/// Why a body ended early; hyper turns it into an aborted connection.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyAbort {
    #[error("mock: connection reset on purpose")]
    Reset,
    #[error("mock: server shutting down")]
    Shutdown,
}

/// Makes a boundary between actions fall after exactly `offset` sent bytes
/// (splitting a send) and returns the index of the first action after it.
fn boundary(actions: &mut Vec<Action>, offset: usize) -> usize {
    let mut sent = 0usize;
    for i in 0..actions.len() {
        if sent >= offset {
            return i;
        }
        if let Action::Send(bytes) = &actions[i] {
            let len = bytes.len();
            if sent + len > offset {
                let tail = bytes.slice(offset - sent..);
                let head = bytes.slice(..offset - sent);
                actions[i] = Action::Send(head);
                actions.insert(i + 1, Action::Send(tail));
                return i + 1;
            }
            sent += len;
        }
    }
    actions.len()
}

impl BodyPlan {
    pub fn new(frames: Vec<Bytes>, faults: &Faults) -> Self {
        let total: usize = frames.iter().map(Bytes::len).sum();
        let offset = |at: At| match at {
            At::Events(n) => frames.iter().take(n).map(Bytes::len).sum(),
            At::Bytes(n) => n.min(total),
        };
        let legacy_cut =
            |n: usize| offset(At::Events(n)) + frames.get(n).map_or(0, |f| f.len() / 2);
        let (cut, finish) = match faults.end {
            End::Clean => match faults.cut_after_events {
                Some(n) => (Some(legacy_cut(n)), Finish::Reset),
                None => (None, Finish::Close(faults.hold_open)),
            },
            End::TruncateAfter(at) => (Some(offset(at)), Finish::Close(faults.hold_open)),
            End::ResetAfter(at) => (Some(offset(at)), Finish::Reset),
        };
        let stall = faults
            .stall
            .map(|s| (offset(s.after), Wait::from_millis(s.ms)));

        let mut actions = Vec::with_capacity(frames.len() * 2);
        for (i, frame) in frames.into_iter().enumerate() {
            if i > 0 && !faults.delay_between.is_zero() {
                actions.push(Action::Pause(Wait::For(faults.delay_between)));
            }
            actions.push(Action::Send(frame));
        }
        if let Some(cut) = cut {
            let keep = boundary(&mut actions, cut);
            actions.truncate(keep);
        }
        if let Some((at, wait)) = stall {
            let index = boundary(&mut actions, at);
            actions.insert(index, Action::Pause(wait));
        }
        actions.retain(|a| !matches!(a, Action::Send(bytes) if bytes.is_empty()));
        Self {
            actions: actions.into(),
            finish,
        }
    }

    /// The body: one plain piece (with a length) when nothing is to happen on
    /// the way, otherwise a stream.
    pub fn into_body(mut self, shutdown: CancellationToken) -> Body {
        let plain = self.finish == Finish::Close(Wait::None)
            && self.actions.len() <= 1
            && self.actions.iter().all(|a| matches!(a, Action::Send(_)));
        if plain {
            return match self.actions.pop_front() {
                Some(Action::Send(bytes)) => Body::from(bytes),
                _ => Body::empty(),
            };
        }
        Body::from_stream(self.stream(shutdown))
    }

    fn stream(
        self,
        shutdown: CancellationToken,
    ) -> impl Stream<Item = Result<Bytes, BodyAbort>> + Send + 'static {
        futures::stream::unfold((self, shutdown), |(mut plan, shutdown)| async move {
            loop {
                match plan.actions.pop_front() {
                    Some(Action::Send(bytes)) => return Some((Ok(bytes), (plan, shutdown))),
                    Some(Action::Pause(wait)) => {
                        if !wait.wait(&shutdown).await {
                            plan.actions.clear();
                            plan.finish = Finish::Done;
                            return Some((Err(BodyAbort::Shutdown), (plan, shutdown)));
                        }
                    }
                    None => match std::mem::replace(&mut plan.finish, Finish::Done) {
                        Finish::Close(hold_open) => {
                            hold_open.wait(&shutdown).await;
                        }
                        Finish::Reset => {
                            // hyper flushes its write buffer when the body is
                            // pending; failing at once could drop the buffered
                            // headers and frames with the connection.
                            tokio::task::yield_now().await;
                            return Some((Err(BodyAbort::Reset), (plan, shutdown)));
                        }
                        Finish::Done => return None,
                    },
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::StreamExt;

    use super::*;
    use crate::faults::Stall;

    fn two_frames() -> Vec<Bytes> {
        vec![
            Bytes::from_static(b"one\n\n"),
            Bytes::from_static(b"two\n\n"),
        ]
    }

    fn faults(end: End) -> Faults {
        Faults {
            stall_before_headers: Wait::None,
            delay_between: Duration::ZERO,
            stall: None,
            end,
            cut_after_events: None,
            hold_open: Wait::None,
        }
    }

    async fn collect(plan: BodyPlan) -> (Vec<Bytes>, Option<String>) {
        let mut frames = Vec::new();
        let mut stream = std::pin::pin!(plan.stream(CancellationToken::new()));
        while let Some(item) = stream.next().await {
            match item {
                Ok(frame) => frames.push(frame),
                Err(e) => return (frames, Some(e.to_string())),
            }
        }
        (frames, None)
    }

    #[tokio::test]
    async fn whole_body_ends_cleanly() {
        let (frames, error) = collect(BodyPlan::new(two_frames(), &faults(End::Clean))).await;
        assert_eq!(frames.len(), 2);
        assert!(error.is_none());
    }

    #[tokio::test]
    async fn the_legacy_cut_sends_half_a_frame_then_fails() {
        let cut = |n| Faults {
            cut_after_events: Some(n),
            ..faults(End::Clean)
        };
        let (frames, error) = collect(BodyPlan::new(two_frames(), &cut(1))).await;
        assert_eq!(
            frames,
            vec![Bytes::from_static(b"one\n\n"), Bytes::from_static(b"tw")]
        );
        assert!(error.is_some_and(|e| e.contains("reset")));
        // A cut at or past the end still breaks the body.
        let (frames, error) = collect(BodyPlan::new(two_frames(), &cut(5))).await;
        assert_eq!(frames.len(), 2);
        assert!(error.is_some());
    }

    #[tokio::test]
    async fn reset_and_truncate_at_bytes_and_events() {
        let (sent, error) = collect(BodyPlan::new(
            two_frames(),
            &faults(End::ResetAfter(At::Bytes(7))),
        ))
        .await;
        assert_eq!(sent.concat(), b"one\n\ntw");
        assert!(error.is_some());
        let (sent, error) = collect(BodyPlan::new(
            two_frames(),
            &faults(End::TruncateAfter(At::Events(1))),
        ))
        .await;
        assert_eq!(sent.concat(), b"one\n\n");
        assert!(error.is_none());
    }

    #[test]
    fn a_stall_splits_a_frame_and_pauses_between_delays() {
        let plan = BodyPlan::new(
            two_frames(),
            &Faults {
                delay_between: Duration::from_millis(1),
                stall: Some(Stall {
                    after: At::Bytes(2),
                    ms: 9,
                }),
                ..faults(End::Clean)
            },
        );
        let pause = |ms| Action::Pause(Wait::For(Duration::from_millis(ms)));
        assert_eq!(
            Vec::from(plan.actions),
            vec![
                Action::Send(Bytes::from_static(b"on")),
                pause(9),
                Action::Send(Bytes::from_static(b"e\n\n")),
                pause(1),
                Action::Send(Bytes::from_static(b"two\n\n")),
            ]
        );
    }

    #[tokio::test]
    async fn a_held_stream_ends_on_shutdown() {
        let shutdown = CancellationToken::new();
        let held = Faults {
            hold_open: Wait::Forever,
            ..faults(End::Clean)
        };
        let stream = BodyPlan::new(two_frames(), &held).stream(shutdown.clone());
        let collected = tokio::spawn(stream.collect::<Vec<_>>());
        shutdown.cancel();
        let frames = tokio::time::timeout(Duration::from_secs(5), collected)
            .await
            .expect("ends in time")
            .expect("no panic");
        assert_eq!(frames.len(), 2);
    }
}
