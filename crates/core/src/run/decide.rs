//! The turn's decision: from what a turn produced to what the loop does
//! next, as one function that does no IO (in the spirit of quinn-proto's
//! IO-free state machine).
//!
//! The loop gathers a turn's outcome into a [`TurnOutcome`] (the answer,
//! whether tools ran, what the loop guard said, an `attempt_completion`
//! result, whether background subagents are pending), calls [`decide`]
//! once, and carries the [`Decision`] out: it records the counters, the
//! notices, and performs the step ([`Step`]) that goes with continuing.
//! Some steps still need the world to answer (a compaction, a background
//! subagent's end, a Stop hook); each of them either continues with the
//! decided [`Transition`] or ends the run, never anything else.
//!
//! Invariants:
//! - [`decide`] reads only its arguments: the same outcome, counters and
//!   limits always give the same decision (the table tests rely on it).
//! - Checks run in one fixed order, the first that applies wins:
//!   cancellation, the loop guard's stop, a completed `attempt_completion`,
//!   a failed request (one that broke after tools started goes on), too
//!   many cut-off answers in a row, the last allowed turn, too many errors
//!   in a row; then how to go on: tool results, an unusable answer asked
//!   again, a cut-off answer continued, and for a text-only answer a
//!   background subagent's end, a completion reminder, an answer that fails
//!   `--json-schema` asked again (bounded, then the run fails), a Stop
//!   hook, or the run's end.
//! - The transition names what happened: [`Transition::ToolRound`] and
//!   [`Transition::WrapUp`] only when tools ran; an unusable answer and a
//!   continued cut-off answer have their own.
//! - A budget is not a turn's outcome: it is checked before each request
//!   ([`over_budget`]), so spending while the loop waited counts too.
//!
//! It must not hold IO, the store, events or clocks.

use gyre_llm::{ErrorKind, LlmError};
use gyre_protocol::{FinishReason, RunErrorKind, StopReason, Usage};

use super::end::End;
use crate::agent::{AgentConfig, RunLimits};
use crate::agents::Completion;
use crate::completion::{MAX_REMINDERS, MAX_REMINDERS_WITH_OPEN_TODOS};
use crate::context::{CompactError, Compaction};
use crate::prompt::{
    COMPLETION_REMINDER, LOOP_NUDGE, MAX_TOKENS_NOTICE, TODOS_OPEN_REMINDER, WRAP_UP_NOTICE,
};
use crate::state::{QueryState, Transition};
use crate::structured::MAX_SCHEMA_RETRIES;

/// Turns in a row that may end in an error before the run stops (seed 002's
/// `consecutive_errors`).
pub(super) const MAX_CONSECUTIVE_ERRORS: u32 = 3;

/// Answers in a row cut off by the output limit that are continued (seed
/// 003's `max_output_recovery_count`); the next one ends the run.
pub(super) const MAX_OUTPUT_RECOVERIES: u32 = 3;

/// When the run was cancelled, as far as the turn saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cancelled {
    No,
    /// While the answer streamed (its tool calls do not go on).
    InAnswer,
    /// After the answer, while its tools ran.
    AfterAnswer,
}

/// What the loop guard said about the turn's calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct GuardSaid {
    /// A cycle: a nudge goes with the results.
    pub nudge: bool,
    /// Why the run stops at the turn's end.
    pub stop: Option<String>,
}

/// Everything a turn produced that the decision depends on.
#[derive(Debug, Clone, Copy)]
pub(super) struct TurnOutcome<'a> {
    /// The turn's number in the run, from 1.
    pub turn: u32,
    /// Whether the answer made tool calls (run or refused: each has a
    /// result that goes back).
    pub tools_ran: bool,
    /// How the answer ended; `None` when it did not (a failure or a cancel).
    pub stop: Option<StopReason>,
    /// Why the request failed, after its retries.
    pub failure: Option<&'a LlmError>,
    pub cancelled: Cancelled,
    pub guard: &'a GuardSaid,
    /// The result of a successful `attempt_completion` among the results.
    pub completion: Option<&'a str>,
    /// Whether the todo list has open items (completion mode's reminder).
    pub todos_open: bool,
    /// Whether background subagents still run or ended untold.
    pub background: bool,
    /// Whether a cut-off answer left no room in the window (it is
    /// compacted before the answer is continued).
    pub window_full: bool,
    /// Why the run's last compaction failed, for the message that ends it.
    pub compaction_failure: Option<&'a CompactError>,
    /// Why a text-only answer fails `--json-schema` (`None`: it passes, or
    /// there is no schema).
    pub schema_errors: Option<&'a str>,
}

/// What of the agent's configuration the decision depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Limits {
    pub max_turns: Option<u32>,
    pub completion: Completion,
    /// Whether a Stop (or SubagentStop) hook is configured for this run.
    pub stop_hook: bool,
    pub max_stop_continuations: u32,
    pub compaction: Compaction,
    pub max_output_tokens: u32,
}

impl Limits {
    /// The limits of runs of an agent so configured.
    pub(super) fn of(config: &AgentConfig) -> Self {
        let stop_event = super::hooked::stop_event(config.depth);
        Self {
            max_turns: config.max_turns,
            completion: config.completion,
            stop_hook: config
                .hooks
                .as_ref()
                .is_some_and(|hooks| hooks.has(stop_event, None)),
            max_stop_continuations: config.max_stop_continuations,
            compaction: config.context.compaction,
            max_output_tokens: config.max_output_tokens,
        }
    }

    /// Whether `turn` is the last one `max_turns` allows (no tools).
    pub(super) fn is_last_turn(&self, turn: u32) -> bool {
        self.max_turns.is_some_and(|max| turn >= max)
    }
}

/// The counters of [`QueryState`] a decision moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Counters {
    pub max_output_recovery_count: u32,
    pub reminder_count: u32,
    pub consecutive_errors: u32,
    pub schema_retries: u32,
}

impl Counters {
    pub(super) fn of(state: &QueryState) -> Self {
        Self {
            max_output_recovery_count: state.max_output_recovery_count,
            reminder_count: state.reminder_count,
            consecutive_errors: state.consecutive_errors,
            schema_retries: state.schema_retries,
        }
    }

    pub(super) fn store(self, state: &mut QueryState) {
        state.max_output_recovery_count = self.max_output_recovery_count;
        state.reminder_count = self.reminder_count;
        state.consecutive_errors = self.consecutive_errors;
        state.schema_retries = self.schema_retries;
    }
}

/// How the loop goes on to its next request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// The tool results (already collected) go back.
    ToolResults,
    /// The answer was unusable: a notice asks again.
    AskAgain,
    /// The answer was cut off: compact first when the window is full, then
    /// a notice asks the model to go on.
    ContinueCut { compact: bool },
    /// Wait for a background subagent's end and tell the model.
    AwaitBackground,
    /// Completion mode: this hidden reminder.
    Remind(&'static str),
    /// Ask the Stop hook; the run completes unless it blocks.
    AskStopHook,
    /// The answer failed `--json-schema`: a notice with its violations
    /// asks again.
    FixOutput,
}

/// What the loop does after a turn.
#[derive(Debug)]
pub(super) enum Next {
    Continue(Step),
    End(End),
}

/// The decision over one turn.
#[derive(Debug)]
pub(super) struct Decision {
    pub next: Next,
    /// What the loop records once the step went on ([`Transition::Finished`]
    /// when the decision ends the run).
    pub transition: Transition,
    /// The counters as the turn leaves them.
    pub counters: Counters,
    /// What goes with the tool results, after them (when tools ran).
    pub result_notices: Vec<&'static str>,
    /// Whether the next request is the last allowed: every notice message
    /// the step records says so.
    pub wrap_up_next: bool,
}

/// Decides what follows a turn. Pure: see the module's invariants.
pub(super) fn decide(outcome: &TurnOutcome<'_>, state: &QueryState, limits: &Limits) -> Decision {
    let mut counters = Counters::of(state);
    let wrap_up = limits.is_last_turn(outcome.turn);
    let wrap_up_next = limits.is_last_turn(outcome.turn + 1);
    let tools = outcome.tools_ran;
    // A stream that broke after tools started is not asked again (the tools
    // must not run twice): their results go back, and the next request
    // continues from them.
    let broke_after_tools = tools && outcome.failure.is_some_and(|err| err.kind.is_transient());
    let continues = tools
        && !wrap_up
        && outcome.cancelled != Cancelled::InAnswer
        && (outcome.failure.is_none() || broke_after_tools);
    // Cut off by the output limit, or by a window with no room left for the
    // answer: both are continued, and count towards the same bound.
    let cut_off = matches!(
        outcome.stop,
        Some(StopReason::MaxTokens | StopReason::ContextOverflow)
    );
    let unusable = outcome.stop == Some(StopReason::Error);
    counters.max_output_recovery_count = if cut_off {
        counters.max_output_recovery_count + 1
    } else {
        0
    };
    let mut result_notices = Vec::new();
    if tools {
        // A call cut off by the output limit was dropped: say so with the
        // results, so the model sends it again.
        if cut_off && continues {
            result_notices.push(MAX_TOKENS_NOTICE);
        }
        if outcome.guard.nudge {
            result_notices.push(LOOP_NUDGE);
        }
        if continues && wrap_up_next {
            result_notices.push(WRAP_UP_NOTICE);
        }
    }
    let decided = |next: Next, transition: Transition, counters: Counters| Decision {
        next,
        transition,
        counters,
        result_notices: result_notices.clone(),
        wrap_up_next,
    };
    let end = |end: End, counters: Counters| {
        let transition = Transition::Finished(end.reason);
        decided(Next::End(end), transition, counters)
    };
    let go_on = |step: Step, transition: Transition, counters| {
        decided(Next::Continue(step), transition, counters)
    };

    if outcome.cancelled != Cancelled::No {
        return end(End::cancelled(), counters);
    }
    if let Some(why) = &outcome.guard.stop {
        let message = format!("the loop guard stopped the run: {why}");
        let stopped = End::with_error(FinishReason::LoopGuard, RunErrorKind::Limit, message);
        return end(stopped, counters);
    }
    if let Some(result) = outcome.completion {
        return end(End::completed_with(result.to_string()), counters);
    }
    if tools {
        counters.reminder_count = 0;
    }
    if let Some(err) = outcome.failure
        && !broke_after_tools
    {
        let failed = match err.kind {
            ErrorKind::ContextOverflow => {
                End::overflow(&err.message, limits.compaction, outcome.compaction_failure)
            }
            _ => End::provider(err),
        };
        return end(failed, counters);
    }
    if cut_off && counters.max_output_recovery_count > MAX_OUTPUT_RECOVERIES {
        let times = counters.max_output_recovery_count;
        return end(End::output_limit(limits.max_output_tokens, times), counters);
    }
    if wrap_up {
        let max = limits.max_turns.unwrap_or(outcome.turn);
        let message = format!("reached the limit of {max} turns (--max-turns)");
        let limited = End::with_error(FinishReason::MaxTurns, RunErrorKind::Limit, message);
        return end(limited, counters);
    }
    if broke_after_tools || unusable {
        counters.consecutive_errors += 1;
        if counters.consecutive_errors >= MAX_CONSECUTIVE_ERRORS {
            let detail = outcome.failure.map_or_else(
                || "the provider reported an error in its answer".to_string(),
                |err| err.message.clone(),
            );
            let message = format!(
                "{MAX_CONSECUTIVE_ERRORS} turns in a row ended in an error; the last: {detail}"
            );
            let failed = End::with_error(FinishReason::Failed, RunErrorKind::Provider, message);
            return end(failed, counters);
        }
    } else {
        counters.consecutive_errors = 0;
    }

    if continues {
        let transition = if wrap_up_next {
            Transition::WrapUp
        } else {
            Transition::ToolRound
        };
        return go_on(Step::ToolResults, transition, counters);
    }
    if unusable {
        return go_on(Step::AskAgain, Transition::UnusableAnswer, counters);
    }
    if cut_off {
        if outcome.window_full && limits.compaction == Compaction::Off {
            let detail = "the answer was cut off with no room left in the window";
            return end(End::overflow(detail, limits.compaction, None), counters);
        }
        let step = Step::ContinueCut {
            compact: outcome.window_full,
        };
        return go_on(step, Transition::CutOff, counters);
    }
    // A text-only answer: the run may still go on, woken by a background
    // subagent's end, reminded to complete, or held by a Stop hook.
    if outcome.background {
        return go_on(
            Step::AwaitBackground,
            Transition::TaskNotification,
            counters,
        );
    }
    if limits.completion == Completion::Required {
        let (limit, reminder) = if outcome.todos_open {
            (MAX_REMINDERS_WITH_OPEN_TODOS, TODOS_OPEN_REMINDER)
        } else {
            (MAX_REMINDERS, COMPLETION_REMINDER)
        };
        if counters.reminder_count < limit {
            counters.reminder_count += 1;
            return go_on(Step::Remind(reminder), Transition::Reminder, counters);
        }
    }
    if let Some(errors) = outcome.schema_errors {
        if counters.schema_retries < MAX_SCHEMA_RETRIES {
            counters.schema_retries += 1;
            return go_on(Step::FixOutput, Transition::Reminder, counters);
        }
        let message = format!(
            "the final answer does not match --json-schema after {} attempts; the last: {}",
            counters.schema_retries + 1,
            errors.replace('\n', "; ")
        );
        let failed = End::with_error(FinishReason::Failed, RunErrorKind::Provider, message);
        return end(failed, counters);
    }
    if limits.stop_hook && state.stop_hook_continuations < limits.max_stop_continuations {
        return go_on(Step::AskStopHook, Transition::StopHook, counters);
    }
    end(End::completed(), counters)
}

/// The run's end when a budget was crossed; checked before each request,
/// so the turn in progress always finishes and no new request starts once
/// one is crossed.
pub(super) fn over_budget(limits: &RunLimits, usage: &Usage, cost_usd: f64) -> Option<End> {
    if let Some(max) = limits.max_cost_usd
        && cost_usd >= max
    {
        return Some(End::budget(format!(
            "the run reached its budget of ${max:.2} (--max-budget-usd): ${cost_usd:.4} spent"
        )));
    }
    let used = usage.prompt_tokens() + usage.output_tokens;
    if let Some(max) = limits.max_tokens
        && used >= max
    {
        return Some(End::budget(format!(
            "the run reached its budget of {max} tokens (--max-tokens): {used} used"
        )));
    }
    None
}

#[cfg(test)]
mod tests;
