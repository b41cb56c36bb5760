//! The response body of a scripted answer, with its faults: pauses between
//! events, a cut in the middle of an event, a connection held open.
//!
//! Invariants:
//! - Frames are produced one at a time as hyper asks for them, so a slow
//!   client holds back the server (no buffering beyond the rendered frames).
//! - A cut ends the body with an error, which makes hyper drop the connection
//!   without the chunked terminator: the client sees a broken body, never a
//!   clean end.
//! - Every wait also ends when the server shuts down, so a stalled stream
//!   cannot keep a graceful shutdown waiting.

use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use tokio_util::sync::CancellationToken;

/// How a body is sent.
#[derive(Debug, Clone)]
pub(crate) struct BodyPlan {
    pub frames: Vec<Bytes>,
    pub delay_between: Duration,
    /// Send this many whole frames, then half of the next, then fail.
    pub cut_after: Option<usize>,
    pub hold_open: HoldOpen,
}

/// What happens after the last frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HoldOpen {
    Close,
    For(Duration),
    /// Until the client hangs up or the server stops.
    Forever,
}

impl HoldOpen {
    pub fn from_millis(ms: u64) -> Self {
        match ms {
            0 => HoldOpen::Close,
            u64::MAX => HoldOpen::Forever,
            ms => HoldOpen::For(Duration::from_millis(ms)),
        }
    }
}

/// Why a body ended early; hyper turns it into an aborted connection.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyAbort {
    #[error("mock: stream cut on purpose after {0} events")]
    Cut(usize),
    #[error("mock: server shutting down")]
    Shutdown,
}

enum Next {
    Frame(usize),
    /// The half frame (if any) is out; the error comes next.
    Cut(usize),
    Hold,
    Done,
}

struct State {
    plan: BodyPlan,
    shutdown: CancellationToken,
    next: Next,
}

/// Waits `duration` unless the server stops first; `false` when it stopped.
pub(crate) async fn wait_unless_stopped(duration: Duration, shutdown: &CancellationToken) -> bool {
    tokio::select! {
        () = tokio::time::sleep(duration) => true,
        () = shutdown.cancelled() => false,
    }
}

/// The body as a stream of frames.
pub(crate) fn body_stream(
    plan: BodyPlan,
    shutdown: CancellationToken,
) -> impl Stream<Item = Result<Bytes, BodyAbort>> + Send + 'static {
    let state = State {
        plan,
        shutdown,
        next: Next::Frame(0),
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            match st.next {
                Next::Frame(i) => {
                    let frame = st.plan.frames.get(i).cloned();
                    let cut_here = st.plan.cut_after == Some(i);
                    if i > 0
                        && frame.is_some()
                        && !st.plan.delay_between.is_zero()
                        && !wait_unless_stopped(st.plan.delay_between, &st.shutdown).await
                    {
                        st.next = Next::Done;
                        return Some((Err(BodyAbort::Shutdown), st));
                    }
                    match frame {
                        Some(frame) if cut_here => {
                            st.next = Next::Cut(i);
                            let half = frame.slice(..frame.len() / 2);
                            if !half.is_empty() {
                                return Some((Ok(half), st));
                            }
                        }
                        Some(frame) => {
                            st.next = Next::Frame(i + 1);
                            return Some((Ok(frame), st));
                        }
                        // A cut at or past the end still breaks the body.
                        None if st.plan.cut_after.is_some() => st.next = Next::Cut(i),
                        None => st.next = Next::Hold,
                    }
                }
                Next::Cut(i) => {
                    st.next = Next::Done;
                    // hyper flushes its write buffer when the body is pending;
                    // failing at once could drop the buffered headers and
                    // events with the connection.
                    tokio::task::yield_now().await;
                    return Some((Err(BodyAbort::Cut(i)), st));
                }
                Next::Hold => {
                    st.next = Next::Done;
                    match st.plan.hold_open {
                        HoldOpen::Close => {}
                        HoldOpen::For(duration) => {
                            wait_unless_stopped(duration, &st.shutdown).await;
                        }
                        HoldOpen::Forever => st.shutdown.cancelled().await,
                    }
                }
                Next::Done => return None,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    fn plan(cut_after: Option<usize>) -> BodyPlan {
        BodyPlan {
            frames: vec![
                Bytes::from_static(b"one\n\n"),
                Bytes::from_static(b"two\n\n"),
            ],
            delay_between: Duration::ZERO,
            cut_after,
            hold_open: HoldOpen::Close,
        }
    }

    async fn collect(plan: BodyPlan) -> (Vec<Bytes>, Option<String>) {
        let mut frames = Vec::new();
        let mut stream = std::pin::pin!(body_stream(plan, CancellationToken::new()));
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
        let (frames, error) = collect(plan(None)).await;
        assert_eq!(frames.len(), 2);
        assert!(error.is_none());
    }

    #[tokio::test]
    async fn a_cut_sends_half_a_frame_then_fails() {
        let (frames, error) = collect(plan(Some(1))).await;
        assert_eq!(
            frames,
            vec![Bytes::from_static(b"one\n\n"), Bytes::from_static(b"tw")]
        );
        assert!(error.is_some_and(|e| e.contains("cut")));
        let (frames, error) = collect(plan(Some(5))).await;
        assert_eq!(frames.len(), 2);
        assert!(error.is_some());
    }

    #[tokio::test]
    async fn a_held_stream_ends_on_shutdown() {
        let shutdown = CancellationToken::new();
        let mut held = plan(None);
        held.hold_open = HoldOpen::Forever;
        let stream = body_stream(held, shutdown.clone());
        let collected = tokio::spawn(stream.collect::<Vec<_>>());
        shutdown.cancel();
        let frames = tokio::time::timeout(Duration::from_secs(5), collected)
            .await
            .expect("ends in time")
            .expect("no panic");
        assert_eq!(frames.len(), 2);
    }
}
