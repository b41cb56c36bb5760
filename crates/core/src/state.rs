//! The loop's explicit, serialisable state (seed 003's `QueryState`).
//!
//! Everything the loop needs to decide its next step, besides the history,
//! lives here, not in locals: the store keeps a copy at every turn boundary, so
//! a resumed session continues with the same counters.

use gyre_protocol::{FinishReason, RunSummary, Todo, Usage};
use serde::{Deserialize, Serialize};

use crate::context::ContextState;
use crate::guard::LoopGuardState;

/// Why the loop moved on from its last step.
///
/// Stored with the state (snake_case names): variants are only ever added,
/// never renamed, so every stored state still loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transition {
    /// A prompt was added; a model request comes next.
    UserPrompt,
    /// Tools ran; their results go back to the model.
    ToolRound,
    /// Tools ran, and the next request is the last one allowed: no tools,
    /// wrap up.
    WrapUp,
    /// The answer could not be used (the provider reported an error in
    /// it, say a malformed tool call); a notice asks again. No tool ran.
    UnusableAnswer,
    /// The answer was cut off by the output limit (or by a full window,
    /// compacted first); a notice asks the model to go on. No tool ran.
    CutOff,
    /// A Stop hook blocked the end; its reason was told to the model.
    StopHook,
    /// A background subagent ended and the model was told (seed 003's
    /// task notification); it answers next.
    TaskNotification,
    /// The model answered without a tool in completion mode and was
    /// reminded to finish with `attempt_completion`.
    Reminder,
    /// The run ended.
    Finished(FinishReason),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryState {
    /// Model requests made in the current run.
    pub turn_count: u32,
    /// Continuations after `max_tokens` in a row (reset by a turn that was
    /// not cut off).
    pub max_output_recovery_count: u32,
    /// Whether the current turn already compacted after an overflow (reset
    /// at each turn).
    pub has_attempted_reactive_compact: bool,
    /// Hidden reminders sent since the last tool use (completion mode).
    pub reminder_count: u32,
    /// Continuations a Stop hook forced in this run.
    #[serde(default)]
    pub stop_hook_continuations: u32,
    /// Turns in a row that ended in an error (a broken stream after tools
    /// ran, an unusable answer); reset by a clean turn.
    #[serde(default)]
    pub consecutive_errors: u32,
    pub transition: Transition,
    /// Tokens used over the session.
    pub usage: Usage,
    /// Pruning, calibration and compaction of the context.
    #[serde(default)]
    pub context: ContextState,
    /// The loop guard's memory of the run's latest calls.
    #[serde(default, skip_serializing_if = "is_default")]
    pub loop_guard: LoopGuardState,
    /// The todo list as `todo_write` last left it (restored on resume; a
    /// compaction's summary carries it too).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub todos: Vec<Todo>,
    /// The agent profile the session runs (a subagent's, for `resume`);
    /// `None`: the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Every finished run of the session, oldest first (what a replay
    /// re-emits).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunRecord>,
}

/// A finished run: where its messages begin and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The first message the run added; `None` when it added none.
    pub from_message: Option<String>,
    pub model: String,
    pub cwd: String,
    pub tools: Vec<String>,
    pub summary: RunSummary,
}

impl Default for QueryState {
    fn default() -> Self {
        Self {
            turn_count: 0,
            max_output_recovery_count: 0,
            has_attempted_reactive_compact: false,
            reminder_count: 0,
            stop_hook_continuations: 0,
            consecutive_errors: 0,
            transition: Transition::UserPrompt,
            usage: Usage::default(),
            context: ContextState::default(),
            loop_guard: LoopGuardState::default(),
            todos: Vec::new(),
            agent: None,
            runs: Vec::new(),
        }
    }
}

impl QueryState {
    /// Resets the per-run counters when a new prompt starts a run.
    pub fn start_run(&mut self) {
        self.turn_count = 0;
        self.max_output_recovery_count = 0;
        self.has_attempted_reactive_compact = false;
        self.reminder_count = 0;
        self.consecutive_errors = 0;
        self.stop_hook_continuations = 0;
        self.loop_guard.reset();
        self.transition = Transition::UserPrompt;
    }
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}
