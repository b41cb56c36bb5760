//! The model's answer asked for again after a transient failure that came
//! before any tool started, per the agent's [`crate::RetryPolicy`], each
//! wait announced as an event and cut short by cancellation. The cut
//! answer is discarded from the store first, so the history never holds
//! half an answer; a context overflow compacts once per turn instead of
//! waiting. Once a tool started the answer stands (a tool never runs
//! twice), and this module hands the failure back.

use std::time::Duration;

use gyre_llm::ErrorKind;
use gyre_protocol::{CompactTrigger, Event, Role};
use gyre_store::StoreError;

use super::{Attempt, MessageInProgress, RunLoop, ToolUse};
use crate::context::{CompactError, Compaction};
use crate::retry::{RetryDecision, reason_of};
use crate::scheduler::Scheduler;

impl RunLoop<'_> {
    /// Asks for the model's answer, again after a transient failure that
    /// came before any tool started (the partial answer is discarded from
    /// the store first). `None` when the run was cancelled while waiting.
    pub(super) async fn attempt_with_retries(
        &mut self,
        tool_use: ToolUse,
        scheduler: &mut Scheduler,
    ) -> Result<Option<Attempt>, StoreError> {
        let mut failures = 0u32;
        let mut waited = Duration::ZERO;
        loop {
            let mut attempt = self.attempt(tool_use, scheduler).await?;
            let Some(error) = &attempt.failure else {
                return Ok(Some(attempt));
            };
            if attempt.cancelled || !scheduler.is_empty() {
                return Ok(Some(attempt));
            }
            let overflow = error.kind == ErrorKind::ContextOverflow;
            failures += 1;
            // Until the provider has answered once in the session, an
            // unreachable URL is more likely a typo than an outage.
            let first_contact = !self
                .session
                .history
                .iter()
                .any(|m| m.role == Role::Assistant);
            let decision =
                self.agent
                    .config
                    .retry
                    .decide_with(error, failures, waited, first_contact);
            let reason = reason_of(error).to_string();
            tracing::info!(
                attempt = failures,
                ?decision,
                "model request failed: {}",
                error.message
            );
            // No tool started: the cut answer goes, whether it is asked for
            // again or not, so the history never holds half an answer.
            if let Some(id) = attempt.answer.stored_id() {
                self.store.discard_message(self.session.id(), id).await?;
                attempt.answer = MessageInProgress::new(Role::Assistant);
            }
            if overflow {
                // Compact once per turn and ask again at once (seed 003's
                // `has_attempted_reactive_compact`).
                let state = &mut self.session.state;
                if self.agent.config.context.compaction == Compaction::Auto
                    && !state.has_attempted_reactive_compact
                {
                    state.has_attempted_reactive_compact = true;
                    match self.compact(CompactTrigger::Overflow, None).await? {
                        Ok(()) => continue,
                        Err(CompactError::Cancelled) => return Ok(None),
                        Err(_) => {}
                    }
                }
                return Ok(Some(attempt));
            }
            let delay = match decision {
                RetryDecision::Wait(delay) => delay,
                RetryDecision::GiveUp(note) => {
                    if let (Some(note), Some(error)) = (note, attempt.failure.as_mut()) {
                        error.message = format!("{} ({note})", error.message);
                        if first_contact && error.kind == ErrorKind::Unreachable {
                            // A configuration problem (exit 2), not an outage.
                            error.kind = ErrorKind::Endpoint;
                        }
                    }
                    return Ok(Some(attempt));
                }
            };
            self.events
                .emit(Event::RetryScheduled {
                    attempt: failures,
                    delay_ms: delay.as_millis() as u64,
                    reason,
                    message: attempt
                        .failure
                        .as_ref()
                        .map(|e| e.message.clone())
                        .unwrap_or_default(),
                })
                .await;
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return Ok(None),
                _ = tokio::time::sleep(delay) => {}
            }
            waited += delay;
        }
    }
}
