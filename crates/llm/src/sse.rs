//! Server-sent events in, [`ModelEvent`]s out: the one decode path that live
//! responses and `gyre debug decode-stream` share.
//!
//! Layers, innermost first:
//! 1. the byte stream (a response body, or stdin), optionally behind
//!    [`IdleTimeout`] (no byte for the idle time → `ErrorKind::Network`);
//! 2. gyre's incremental SSE [`parser`], which also bounds memory: at most
//!    [`MAX_PENDING_EVENT_BYTES`] may arrive between two dispatched events, so
//!    a peer that never ends an event cannot make us buffer without limit;
//! 3. an [`SseDecoder`], one per wire API, a plain state machine that turns each
//!    event into zero or more model events.
//!
//! Invariants of the resulting stream: items queued by the decoder are yielded
//! before any error it reports, and so is the text that arrived before the
//! error ([`SseDecoder::salvage`]); after an error or after the decoder says it is
//! finished nothing more is yielded, nothing more is parsed, and the source is
//! dropped (which closes the connection). Events are parsed one at a time, so
//! bytes after the decoder's last event are never looked at. At a clean end of
//! bytes the pending event (even without its closing blank line) goes to the
//! decoder, then any unframed text ([`SseDecoder::unframed`]), then
//! [`SseDecoder::end`], which decides whether the answer was complete.

mod parser;

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use tokio::time::{Instant, Sleep};

use crate::error::{ErrorKind, LlmError};
use crate::{ModelEvent, ModelStream};

/// The most bytes we accept between two complete events. Real events are a
/// few kilobytes; this only stops a broken or hostile peer.
pub(crate) const MAX_PENDING_EVENT_BYTES: usize = 16 << 20;

/// One server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event` field; `message` when the event had none.
    pub event: String,
    /// The `data` lines, joined with `\n`.
    pub data: String,
    /// The last `id` field seen in the stream so far.
    pub id: String,
    /// The `retry` field of this event, if any.
    pub retry: Option<Duration>,
}

/// What a decoder wants after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    Continue,
    /// The answer is complete (`Finished` was queued): stop reading.
    Finished,
}

/// One wire API's event decoder.
pub(crate) trait SseDecoder: Send + 'static {
    /// Handles one event, queueing model events on `out`.
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<Progress, LlmError>;

    /// The bytes ended cleanly without the decoder having finished.
    fn end(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), LlmError>;

    /// Text outside the SSE framing: lines that are not SSE fields (a bare
    /// JSON error object some providers send instead of events). The SSE
    /// layer collects such lines (at most 64 KiB, joined with `\n`) and hands
    /// them over once, when the bytes end, before [`SseDecoder::end`]. Most
    /// APIs never send any.
    fn unframed(
        &mut self,
        text: &str,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<Progress, LlmError> {
        let _ = (text, out);
        Ok(Progress::Continue)
    }

    /// The answer is about to end in an error: completes the text that
    /// arrived before it, so it is not thrown away (the loop still discards
    /// a failed attempt's parts before it asks again). Tool calls are not
    /// completed: their arguments may be cut short.
    fn salvage(&mut self, out: &mut VecDeque<ModelEvent>) {
        let _ = out;
    }
}

/// Runs `bytes` through the SSE parser and `decoder`.
pub(crate) fn decode_with<S, E, D>(bytes: S, decoder: D) -> ModelStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<LlmError> + Send + 'static,
    D: SseDecoder,
{
    let driver = Driver {
        source: Some(Box::pin(bytes)),
        chunk: Bytes::new(),
        parser: parser::Parser::default(),
        decoder,
        queue: VecDeque::new(),
        failure: None,
    };
    crate::cut_calls::hold_unparseable_calls(Box::pin(futures::stream::unfold(
        driver,
        Driver::next,
    )))
}

struct Driver<S, D> {
    /// `None` once reading is over (finished, failed or ended).
    source: Option<Pin<Box<S>>>,
    /// The part of the last chunk not parsed yet.
    chunk: Bytes,
    parser: parser::Parser,
    decoder: D,
    queue: VecDeque<ModelEvent>,
    failure: Option<LlmError>,
}

impl<S, E, D> Driver<S, D>
where
    S: Stream<Item = Result<Bytes, E>> + Send,
    E: Into<LlmError>,
    D: SseDecoder,
{
    async fn next(mut self) -> Option<(Result<ModelEvent, LlmError>, Self)> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some((Ok(event), self));
            }
            if let Some(error) = self.failure.take() {
                return Some((Err(error), self));
            }
            let source = self.source.as_mut()?;
            let step = match self.parser.next_event(&mut self.chunk) {
                Ok(Some(event)) => self.decoder.event(&event, &mut self.queue),
                Err(error) => Err(error),
                Ok(None) => match source.next().await {
                    Some(Ok(chunk)) => {
                        self.chunk = chunk;
                        continue;
                    }
                    Some(Err(error)) => Err(error.into()),
                    None => self.end_of_bytes(),
                },
            };
            match step {
                Ok(Progress::Continue) => {}
                Ok(Progress::Finished) => self.source = None,
                Err(error) => {
                    self.decoder.salvage(&mut self.queue);
                    self.failure = Some(error);
                    self.source = None;
                }
            }
        }
    }

    /// The bytes ended cleanly: the pending event, the unframed text, then
    /// the decoder's verdict.
    fn end_of_bytes(&mut self) -> Result<Progress, LlmError> {
        if let Some(event) = self.parser.finish()?
            && self.decoder.event(&event, &mut self.queue)? == Progress::Finished
        {
            return Ok(Progress::Finished);
        }
        if let Some(text) = self.parser.take_unframed()
            && self.decoder.unframed(&text, &mut self.queue)? == Progress::Finished
        {
            return Ok(Progress::Finished);
        }
        self.decoder.end(&mut self.queue)?;
        Ok(Progress::Finished)
    }
}

/// Ends a byte stream with a `Network` error when no byte arrives for `idle`.
/// Must be polled inside a tokio runtime.
pub(crate) struct IdleTimeout<S> {
    inner: Pin<Box<S>>,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
    fired: bool,
}

impl<S> IdleTimeout<S> {
    pub(crate) fn new(inner: S, idle: Duration) -> Self {
        Self {
            inner: Box::pin(inner),
            idle,
            deadline: Box::pin(tokio::time::sleep(idle)),
            fired: false,
        }
    }
}

impl<S> Stream for IdleTimeout<S>
where
    S: Stream<Item = Result<Bytes, LlmError>>,
{
    type Item = Result<Bytes, LlmError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.fired {
            return Poll::Ready(None);
        }
        if let Poll::Ready(item) = self.inner.as_mut().poll_next(cx) {
            let next_deadline = Instant::now() + self.idle;
            self.deadline.as_mut().reset(next_deadline);
            return Poll::Ready(item);
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.fired = true;
                Poll::Ready(Some(Err(LlmError::new(
                    ErrorKind::Network,
                    None,
                    format!(
                        "the stream stalled: no data for {}; try again",
                        human_duration(self.idle)
                    ),
                ))))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// "300 s", or "250 ms" for waits under a second (tests use those).
pub(crate) fn human_duration(duration: Duration) -> String {
    if duration < Duration::from_secs(1) {
        format!("{} ms", duration.as_millis())
    } else {
        format!("{} s", crate::classify::seconds(duration))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;
    use gyre_protocol::StopReason;

    /// Queues each event's data as a text delta; "stop" finishes.
    struct Echo;

    impl SseDecoder for Echo {
        fn event(
            &mut self,
            event: &SseEvent,
            out: &mut VecDeque<ModelEvent>,
        ) -> Result<Progress, LlmError> {
            if event.data == "stop" {
                out.push_back(ModelEvent::Finished(StopReason::EndTurn));
                return Ok(Progress::Finished);
            }
            if event.data == "fail" {
                out.push_back(ModelEvent::TextDelta("before failing".into()));
                return Err(LlmError::stream("failed"));
            }
            out.push_back(ModelEvent::TextDelta(event.data.clone()));
            Ok(Progress::Continue)
        }

        fn end(&mut self, _out: &mut VecDeque<ModelEvent>) -> Result<(), LlmError> {
            Err(LlmError::stream("ended early"))
        }

        fn unframed(
            &mut self,
            text: &str,
            out: &mut VecDeque<ModelEvent>,
        ) -> Result<Progress, LlmError> {
            out.push_back(ModelEvent::TextDelta(format!("unframed: {text}")));
            if text.contains("stop") {
                out.push_back(ModelEvent::Finished(StopReason::EndTurn));
                return Ok(Progress::Finished);
            }
            Ok(Progress::Continue)
        }
    }

    fn chunks(parts: &[&str]) -> impl Stream<Item = Result<Bytes, LlmError>> + Send + 'static {
        let owned: Vec<Result<Bytes, LlmError>> = parts
            .iter()
            .map(|p| Ok(Bytes::copy_from_slice(p.as_bytes())))
            .collect();
        futures::stream::iter(owned)
    }

    #[tokio::test]
    async fn stops_reading_after_finish() {
        let events: Vec<_> = decode_with(chunks(&["data: a\n\ndata: stop\n\ndata: b\n\n"]), Echo)
            .try_collect()
            .await
            .unwrap();
        assert_eq!(
            events,
            vec![
                ModelEvent::TextDelta("a".into()),
                ModelEvent::Finished(StopReason::EndTurn)
            ]
        );
    }

    #[tokio::test]
    async fn queued_events_come_before_the_error_and_nothing_after() {
        let items: Vec<_> = decode_with(chunks(&["data: fail\n\ndata: b\n\n"]), Echo)
            .collect()
            .await;
        assert_eq!(items.len(), 2);
        assert_eq!(
            items[0].as_ref().unwrap(),
            &ModelEvent::TextDelta("before failing".into())
        );
        assert_eq!(items[1].as_ref().unwrap_err().message, "failed");
    }

    #[tokio::test]
    async fn a_clean_end_is_the_decoders_call() {
        let items: Vec<_> = decode_with(chunks(&["data: a\n\n"]), Echo).collect().await;
        assert_eq!(items.len(), 2);
        assert_eq!(items[1].as_ref().unwrap_err().message, "ended early");
    }

    #[tokio::test]
    async fn an_event_that_never_ends_is_bounded() {
        let big = "x".repeat(1 << 20);
        let endless = futures::stream::iter(std::iter::repeat_with(move || {
            Ok::<_, LlmError>(Bytes::from(format!("data: {big}\n")))
        }));
        let items: Vec<_> = decode_with(endless, Echo).collect().await;
        assert_eq!(items.len(), 1);
        let error = items[0].as_ref().unwrap_err();
        assert_eq!(error.kind, ErrorKind::Stream);
        assert!(error.message.contains("16 MiB"), "{}", error.message);
    }

    #[tokio::test]
    async fn invalid_utf8_is_a_stream_error() {
        let bytes = futures::stream::iter(vec![Ok::<_, LlmError>(Bytes::from_static(
            b"data: \xff\xfe",
        ))]);
        let items: Vec<_> = decode_with(bytes, Echo).collect().await;
        let error = items.last().unwrap().as_ref().unwrap_err();
        assert_eq!(error.kind, ErrorKind::Stream);
    }

    #[tokio::test]
    async fn bytes_after_the_finish_are_never_parsed() {
        let events: Vec<_> = decode_with(chunks(&["data: stop\n\ndata: \u{0}", "\n\n"]), Echo)
            .collect()
            .await;
        assert_eq!(events.len(), 1);
        let bytes = futures::stream::iter(vec![Ok::<_, LlmError>(Bytes::from_static(
            b"data: stop\n\n\xff\xfe\n\n",
        ))]);
        let items: Vec<_> = decode_with(bytes, Echo).collect().await;
        assert_eq!(items.len(), 1);
        assert!(items[0].is_ok());
    }

    #[tokio::test]
    async fn the_last_event_needs_no_blank_line() {
        let events: Vec<_> = decode_with(chunks(&["data: a\n\ndata: st", "op"]), Echo)
            .try_collect()
            .await
            .unwrap();
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Finished(StopReason::EndTurn))
        );
    }

    #[tokio::test]
    async fn unframed_text_goes_to_the_decoder_once_before_the_end() {
        let items: Vec<_> =
            decode_with(chunks(&["{\n", "  \"error\": 1\n}", "\ndata: a\n\n"]), Echo)
                .collect()
                .await;
        assert_eq!(items.len(), 3);
        assert_eq!(
            items[0].as_ref().unwrap(),
            &ModelEvent::TextDelta("a".into())
        );
        assert_eq!(
            items[1].as_ref().unwrap(),
            &ModelEvent::TextDelta("unframed: {\n  \"error\": 1\n}\n".into())
        );
        assert_eq!(items[2].as_ref().unwrap_err().message, "ended early");
        // The decoder may finish on it.
        let events: Vec<_> = decode_with(chunks(&["stop"]), Echo)
            .try_collect()
            .await
            .unwrap();
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Finished(StopReason::EndTurn))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn idle_timeout_fires_when_no_byte_arrives() {
        let stalled = chunks(&["data: a\n\n"]).chain(futures::stream::pending());
        let items: Vec<_> = decode_with(IdleTimeout::new(stalled, Duration::from_secs(300)), Echo)
            .collect()
            .await;
        assert_eq!(items.len(), 2);
        let error = items[1].as_ref().unwrap_err();
        assert_eq!(error.kind, ErrorKind::Network);
        assert_eq!(
            error.message,
            "the stream stalled: no data for 300 s; try again"
        );
    }
}
