//! Tool calls whose arguments are not valid JSON when their block ends are
//! held back until the answer's stop reason is known.
//!
//! A call's block can end because the model finished writing it, or because
//! the output limit cut it off; providers say which only later (in the stop
//! reason). A call with valid arguments is passed on at once, so the loop can
//! start it while the model still streams. A call whose arguments do not
//! parse is held: when the answer stops at the output limit, it was cut and
//! is dropped (it is not a call the model made, and nothing may run it);
//! otherwise it is passed on just before `Finished`, and the loop tells the
//! model its arguments were not valid JSON. The calls after a held one are
//! held with it and passed on in order, so calls (and their results) keep
//! the order the model wrote them in. After an error, held calls are
//! dropped with the rest of the answer.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use gyre_protocol::{Part, StopReason};

use crate::{ModelEvent, ModelStream};

/// Wraps `inner` so that unparseable tool calls wait for the stop reason.
pub(crate) fn hold_unparseable_calls(inner: ModelStream) -> ModelStream {
    Box::pin(HoldCuts {
        inner,
        held: Vec::new(),
        ready: VecDeque::new(),
    })
}

struct HoldCuts {
    inner: ModelStream,
    held: Vec<ModelEvent>,
    ready: VecDeque<ModelEvent>,
}

fn is_unparseable_call(event: &ModelEvent) -> bool {
    matches!(event, ModelEvent::PartCompleted(Part::ToolCall(call)) if call.arguments_json().is_none())
}

impl Stream for HoldCuts {
    type Item = <ModelStream as Stream>::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Poll::Ready(Some(Ok(event)));
            }
            let item = match self.inner.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(item) => item,
            };
            match item {
                Some(Ok(event)) if is_unparseable_call(&event) => self.held.push(event),
                // A call after a held one waits too, so that calls (and so
                // their results) keep the order the model wrote them in.
                Some(Ok(event @ ModelEvent::PartCompleted(Part::ToolCall(_))))
                    if !self.held.is_empty() =>
                {
                    self.held.push(event)
                }
                Some(Ok(ModelEvent::Finished(reason))) => {
                    let held = std::mem::take(&mut self.held);
                    let cut = reason == StopReason::MaxTokens;
                    self.ready.extend(
                        held.into_iter()
                            .filter(|event| !(cut && is_unparseable_call(event))),
                    );
                    self.ready.push_back(ModelEvent::Finished(reason));
                }
                Some(Ok(event)) => return Poll::Ready(Some(Ok(event))),
                Some(Err(error)) => {
                    self.held.clear();
                    return Poll::Ready(Some(Err(error)));
                }
                None => {
                    self.held.clear();
                    return Poll::Ready(None);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use gyre_protocol::ToolCall;

    fn call(id: &str, arguments: &str) -> ModelEvent {
        ModelEvent::PartCompleted(Part::ToolCall(ToolCall::new(id, "read", arguments)))
    }

    async fn through(events: Vec<ModelEvent>) -> Vec<ModelEvent> {
        let inner: ModelStream = Box::pin(futures::stream::iter(events.into_iter().map(Ok)));
        hold_unparseable_calls(inner)
            .map(|item| item.unwrap())
            .collect()
            .await
    }

    #[tokio::test]
    async fn a_call_cut_by_the_output_limit_is_dropped() {
        let out = through(vec![
            call("a", r#"{"file_path":"x"}"#),
            call("b", r#"{"file_pa"#),
            ModelEvent::Finished(StopReason::MaxTokens),
        ])
        .await;
        assert_eq!(
            out,
            vec![
                call("a", r#"{"file_path":"x"}"#),
                ModelEvent::Finished(StopReason::MaxTokens)
            ]
        );
    }

    #[tokio::test]
    async fn a_malformed_call_of_a_finished_answer_comes_before_the_end() {
        let out = through(vec![
            call("b", "{oops"),
            ModelEvent::TextDelta("t".into()),
            ModelEvent::Finished(StopReason::ToolUse),
        ])
        .await;
        assert_eq!(
            out,
            vec![
                ModelEvent::TextDelta("t".into()),
                call("b", "{oops"),
                ModelEvent::Finished(StopReason::ToolUse)
            ]
        );
    }

    #[tokio::test]
    async fn calls_after_a_held_one_keep_their_order() {
        let out = through(vec![
            call("c0", "{broken"),
            call("c1", r#"{"file_path":"a"}"#),
            call("c2", r#"{"file_path":"b"}"#),
            ModelEvent::Finished(StopReason::ToolUse),
        ])
        .await;
        assert_eq!(
            out,
            vec![
                call("c0", "{broken"),
                call("c1", r#"{"file_path":"a"}"#),
                call("c2", r#"{"file_path":"b"}"#),
                ModelEvent::Finished(StopReason::ToolUse)
            ]
        );
        let cut = through(vec![
            call("c0", "{broken"),
            call("c1", r#"{"file_path":"a"}"#),
            ModelEvent::Finished(StopReason::MaxTokens),
        ])
        .await;
        assert_eq!(
            cut,
            vec![
                call("c1", r#"{"file_path":"a"}"#),
                ModelEvent::Finished(StopReason::MaxTokens)
            ]
        );
    }
}
