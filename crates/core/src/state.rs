//! The loop's explicit, serialisable state (seed 003's `QueryState`).
//!
//! Everything the loop needs to decide its next step, besides the history,
//! lives here, not in locals: the store keeps a copy at every turn boundary, so
//! a resumed session continues with the same counters.
//!
//! Invariant: what is saved at every turn does not grow with the number of
//! past runs. Finished runs are kept for replays, at most
//! [`MAX_KEPT_RUNS`] of them, and only the last keeps its final text (a
//! replay finds the others' in their messages); older ones are folded into
//! [`RunTotals`]. Every field added later has a serde default, so every
//! stored state still loads.

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
    /// Answers asked again in this run because they failed `--json-schema`.
    #[serde(default)]
    pub schema_retries: u32,
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
    /// The session's latest finished runs, oldest first (what a replay
    /// re-emits); at most [`MAX_KEPT_RUNS`], and only the last one keeps
    /// its final text (see [`QueryState::record_run`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunRecord>,
    /// What the runs no longer in `runs` spent.
    #[serde(default, skip_serializing_if = "is_default")]
    pub earlier_runs: RunTotals,
    /// Each of the latest turns' usage (at most [`MAX_TURN_USAGE`], oldest
    /// first), by the answer it produced: what `sessions show` prints per
    /// turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turn_usage: Vec<TurnUsage>,
}

/// How many turns' usage the state keeps.
pub const MAX_TURN_USAGE: usize = 256;

/// One turn's usage: the answer's message id and what its request used
/// (input served from the cache, written to it, uncached; output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnUsage {
    pub message: String,
    pub usage: Usage,
}

/// How many finished runs the state keeps for replays.
pub const MAX_KEPT_RUNS: usize = 32;

/// The totals of runs folded out of [`QueryState::runs`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunTotals {
    pub runs: u32,
    pub usage: Usage,
    pub cost_usd: f64,
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
            schema_retries: 0,
            consecutive_errors: 0,
            transition: Transition::UserPrompt,
            usage: Usage::default(),
            context: ContextState::default(),
            loop_guard: LoopGuardState::default(),
            todos: Vec::new(),
            agent: None,
            runs: Vec::new(),
            earlier_runs: RunTotals::default(),
            turn_usage: Vec::new(),
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
        self.schema_retries = 0;
        self.loop_guard.reset();
        self.transition = Transition::UserPrompt;
    }

    /// Records a turn's usage under its answer's id; past
    /// [`MAX_TURN_USAGE`] the oldest turn's goes (bounded state).
    pub fn record_turn(&mut self, message: &str, usage: Usage) {
        self.turn_usage.push(TurnUsage {
            message: message.to_owned(),
            usage,
        });
        let excess = self.turn_usage.len().saturating_sub(MAX_TURN_USAGE);
        self.turn_usage.drain(..excess);
    }

    /// Records a finished run. The run before it drops its final text (a
    /// replay finds it in its messages), and past [`MAX_KEPT_RUNS`] the
    /// oldest run is folded into the totals: the state stays the same size
    /// however many runs the session has.
    pub fn record_run(&mut self, record: RunRecord) {
        if let Some(previous) = self.runs.last_mut() {
            previous.summary.final_text = String::new();
        }
        self.runs.push(record);
        let excess = self.runs.len().saturating_sub(MAX_KEPT_RUNS);
        for old in self.runs.drain(..excess) {
            self.earlier_runs.runs += 1;
            self.earlier_runs.usage.add(&old.summary.usage);
            self.earlier_runs.cost_usd += old.summary.cost_usd;
        }
    }

    /// What every finished run of the session spent, those folded out of
    /// `runs` included: tokens, and US dollars where prices were known.
    pub fn run_totals(&self) -> (Usage, f64) {
        let mut usage = self.earlier_runs.usage;
        let mut cost = self.earlier_runs.cost_usd;
        for run in &self.runs {
            usage.add(&run.summary.usage);
            cost += run.summary.cost_usd;
        }
        (usage, cost)
    }

    /// Whether the session has finished a run.
    pub fn has_run(&self) -> bool {
        !self.runs.is_empty() || self.earlier_runs.runs > 0
    }
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

#[cfg(test)]
mod tests {
    use gyre_protocol::FinishReason;
    use serde_json::json;

    use super::*;

    fn record(n: u32, text: &str) -> RunRecord {
        RunRecord {
            from_message: Some(format!("m{n}")),
            model: "m".into(),
            cwd: "/w".into(),
            tools: vec!["read".into()],
            summary: RunSummary {
                reason: FinishReason::Completed,
                final_text: text.into(),
                num_turns: 1,
                usage: Usage {
                    input_tokens: 10,
                    output_tokens: 1,
                    ..Usage::default()
                },
                cost_usd: 0.5,
                duration_ms: 3,
                error: None,
            },
        }
    }

    #[test]
    fn stored_transitions_of_every_version_load() {
        let old = [
            (json!("user_prompt"), Transition::UserPrompt),
            (json!("tool_round"), Transition::ToolRound),
            (json!("wrap_up"), Transition::WrapUp),
            (json!("stop_hook"), Transition::StopHook),
            (json!("task_notification"), Transition::TaskNotification),
            (json!("reminder"), Transition::Reminder),
            (
                json!({"finished": "completed"}),
                Transition::Finished(FinishReason::Completed),
            ),
        ];
        for (stored, want) in old {
            let got: Transition = serde_json::from_value(stored.clone()).unwrap();
            assert_eq!(got, want, "{stored}");
        }
        for new in [Transition::UnusableAnswer, Transition::CutOff] {
            let stored = serde_json::to_value(new).unwrap();
            assert_eq!(serde_json::from_value::<Transition>(stored).unwrap(), new);
        }
        assert_eq!(
            serde_json::to_value(Transition::CutOff).unwrap(),
            json!("cut_off")
        );
    }

    #[test]
    fn a_state_saved_before_runs_were_bounded_loads() {
        let state = QueryState {
            runs: (0..40).map(|n| record(n, "all the text")).collect(),
            ..QueryState::default()
        };
        let mut stored = serde_json::to_value(&state).unwrap();
        stored.as_object_mut().unwrap().remove("earlier_runs");
        let loaded: QueryState = serde_json::from_value(stored).unwrap();
        assert_eq!(loaded.runs.len(), 40);
        assert_eq!(loaded.earlier_runs, RunTotals::default());
    }

    #[test]
    fn the_saved_state_does_not_grow_with_the_number_of_runs() {
        let mut state = QueryState::default();
        let mut sizes = Vec::new();
        for n in 0..200 {
            state.record_run(record(n, &"final words ".repeat(100)));
            sizes.push(serde_json::to_vec(&state).unwrap().len());
        }
        assert!(state.runs.len() <= MAX_KEPT_RUNS);
        // Only the digits of ids and totals grow.
        let (at_bound, last) = (sizes[MAX_KEPT_RUNS], sizes[199]);
        assert!(last < at_bound + 100, "{at_bound} bytes, then {last}");
        // Only the last run keeps its final text.
        let kept: Vec<bool> = state
            .runs
            .iter()
            .map(|r| !r.summary.final_text.is_empty())
            .collect();
        assert_eq!(kept.iter().filter(|k| **k).count(), 1);
        assert!(kept[kept.len() - 1]);
        // The totals still cover every run.
        let (usage, cost) = state.run_totals();
        assert_eq!(usage.input_tokens, 2000);
        assert!((cost - 100.0).abs() < 1e-9);
        assert_eq!(state.earlier_runs.runs as usize, 200 - MAX_KEPT_RUNS);
        assert!(state.has_run());
    }
}
