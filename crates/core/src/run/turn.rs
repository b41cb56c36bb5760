//! One turn of the loop: the context managed, the model asked (again
//! while it fails transiently, `run::retries`), the answer stored and its
//! tool calls' results collected, then the turn's outcome gathered into
//! one value and `run::decide` over it carried out. The transition the
//! decision names is returned, and recorded by the loop, not here.

use gyre_protocol::{Event, StopReason};
use gyre_store::StoreError;

use super::{
    Attempt, Cancelled, End, Next, RunLoop, Step, ToolUse, TurnOutcome, Turned, decide, schema,
};
use crate::prompt::UNUSABLE_ANSWER_NOTICE;

impl RunLoop<'_> {
    /// One model request (asked again while it fails transiently before any
    /// tool started), the tool calls it makes, and the decision over it
    /// (`run::decide`), carried out.
    pub(super) async fn turn(&mut self, turn: u32) -> Result<Turned, StoreError> {
        let tool_use = if self.limits.is_last_turn(turn) {
            ToolUse::WrapUp
        } else {
            ToolUse::Offered
        };
        self.session.state.has_attempted_reactive_compact = false;
        self.manage_context().await?;
        self.events.emit(Event::TurnStarted { turn }).await;
        let mut scheduler = self.scheduler();
        let Some(attempt) = self.attempt_with_retries(tool_use, &mut scheduler).await? else {
            return Ok(Turned::End(End::cancelled()));
        };
        let Attempt {
            answer,
            usage,
            stop,
            failure,
            cancelled,
            request_bytes,
            guard,
        } = attempt;

        let answer_text = answer.message.text();
        let tools_ran = !scheduler.is_empty();
        self.push_message(answer).await;
        if let Some(answer) = self.session.history.last() {
            let id = answer.id.clone();
            self.session.state.record_turn(&id, usage);
        }
        let cost_usd = self.account(&usage);
        self.measured(&usage, request_bytes);
        self.events
            .emit(Event::TurnCompleted {
                turn,
                usage,
                stop_reason: stop.unwrap_or(StopReason::Error),
                cost_usd,
            })
            .await;
        if !answer_text.trim().is_empty() {
            self.final_text = answer_text.clone();
        }
        // Every call gets its result, whatever is decided next.
        let (results, completion) = if tools_ran {
            let (results, completion) = self.collect_results(&mut scheduler).await?;
            (Some(results), completion)
        } else {
            (None, None)
        };

        let cancelled = if cancelled {
            Cancelled::InAnswer
        } else if self.cancel.is_cancelled() {
            Cancelled::AfterAnswer
        } else {
            Cancelled::No
        };
        let (checked, schema_errors) =
            self.check_schema(tools_ran, failure.is_some(), stop, &answer_text);
        let outcome = TurnOutcome {
            turn,
            tools_ran,
            stop,
            failure: failure.as_ref(),
            cancelled,
            guard: &guard,
            completion: completion.as_deref(),
            todos_open: self.todos_open(),
            background: self.tasks.pending(),
            window_full: self.window_full(stop, &usage),
            compaction_failure: self.compaction_failure.as_ref(),
            schema_errors: schema_errors.as_deref(),
        };
        let decision = decide(&outcome, &self.session.state, &self.limits);
        decision.counters.store(&mut self.session.state);
        if let Some(results) = results {
            self.finish_results(results, &decision.result_notices)
                .await?;
        }
        let step = match decision.next {
            Next::End(end) => return Ok(Turned::End(schema::structured_end(end, checked))),
            Next::Continue(step) => step,
        };
        let wrap_up_next = decision.wrap_up_next;
        let ended = match step {
            Step::ToolResults => None,
            // The answer was unusable (say a malformed tool call).
            Step::AskAgain => {
                self.tell(UNUSABLE_ANSWER_NOTICE.into(), wrap_up_next)
                    .await?
            }
            Step::ContinueCut { compact } => {
                self.continue_cut_answer(compact, wrap_up_next).await?
            }
            Step::AwaitBackground => self.await_background(wrap_up_next).await?,
            Step::Remind(reminder) => self.tell(reminder.into(), wrap_up_next).await?,
            Step::AskStopHook => self.stop_hook(wrap_up_next).await?,
            Step::FixOutput => self.fix_output(schema_errors, wrap_up_next).await?,
        };
        Ok(match ended {
            Some(end) => Turned::End(end),
            None => Turned::Next(decision.transition),
        })
    }
}
