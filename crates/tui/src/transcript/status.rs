//! The status line's data: model, agent, context gauge, tokens, cost, the
//! retry countdown, busy/idle, queued prompts and the permission mode.
//!
//! Updated by [`crate::transcript::Transcript::apply`]; the app sets what
//! only it knows (agent, permission mode, queued count) through the public
//! fields. Token and cost totals add every turn of the session, subagents'
//! turns included (they are paid for too).

use std::time::Duration;

use gyre_protocol::{Event, Usage};
use tokio::time::Instant;

/// Whether a run is in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunState {
    #[default]
    Idle,
    /// A run started at this instant.
    Busy { since: Instant },
}

/// The context window's use, from the last `ContextUsage` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextGauge {
    pub used_tokens: u64,
    pub usable_tokens: u64,
    pub window: u64,
}

impl ContextGauge {
    /// Used share of the usable budget, in percent (0 when nothing is usable).
    pub fn percent(&self) -> u64 {
        (self.used_tokens * 100)
            .checked_div(self.usable_tokens)
            .unwrap_or(0)
    }
}

/// A failed request that will be tried again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryCountdown {
    pub attempt: u32,
    /// When the retry is due.
    pub due: Instant,
    pub reason: String,
}

/// Everything the status line shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatusInfo {
    pub model: String,
    /// The agent the app runs (the app sets it).
    pub agent: String,
    /// The permission mode in force (the app sets it), e.g. `ask`.
    pub permission_mode: String,
    /// The reasoning effort in force (`/effort`; empty: the provider's).
    pub effort: String,
    /// Prompts waiting for the run to end (the app sets it).
    pub queued: usize,
    pub session_id: Option<String>,
    pub context: Option<ContextGauge>,
    /// Tokens of the session so far (all turns, subagents included).
    pub usage: Usage,
    pub cost_usd: f64,
    pub run: RunState,
    pub retry: Option<RetryCountdown>,
}

impl StatusInfo {
    pub fn is_busy(&self) -> bool {
        matches!(self.run, RunState::Busy { .. })
    }

    /// Whole seconds until the pending retry (rounded up), if one is pending.
    pub fn retry_seconds_left(&self, now: Instant) -> Option<u64> {
        let retry = self.retry.as_ref()?;
        let left = retry.due.saturating_duration_since(now);
        Some(left.as_millis().div_ceil(1000) as u64)
    }

    /// How long the current run has been going.
    pub fn busy_for(&self, now: Instant) -> Option<Duration> {
        match self.run {
            RunState::Busy { since } => Some(now.saturating_duration_since(since)),
            RunState::Idle => None,
        }
    }

    /// Updates the status from one event of the parent run.
    pub fn apply(&mut self, event: &Event, now: Instant) {
        match event {
            Event::RunStarted {
                session_id, model, ..
            } => {
                self.model = model.clone();
                self.session_id = Some(session_id.clone());
                self.run = RunState::Busy { since: now };
                self.retry = None;
            }
            Event::TextDelta { .. }
            | Event::ReasoningDelta { .. }
            | Event::ToolCallStarted { .. } => self.retry = None,
            Event::TurnCompleted {
                usage, cost_usd, ..
            } => {
                self.add_turn(usage, *cost_usd);
                self.retry = None;
            }
            Event::ContextUsage {
                used_tokens,
                usable_tokens,
                window,
            } => {
                self.context = Some(ContextGauge {
                    used_tokens: *used_tokens,
                    usable_tokens: *usable_tokens,
                    window: *window,
                })
            }
            Event::RetryScheduled {
                attempt,
                delay_ms,
                reason,
                ..
            } => {
                self.retry = Some(RetryCountdown {
                    attempt: *attempt,
                    due: now + Duration::from_millis(*delay_ms),
                    reason: reason.clone(),
                })
            }
            Event::Subagent { inner, .. } => self.apply_subagent(inner),
            Event::RunFinished(_) => {
                self.run = RunState::Idle;
                self.retry = None;
            }
            _ => {}
        }
    }

    /// A subagent's turns count towards tokens and cost; nothing else of it
    /// shows in the status line.
    fn apply_subagent(&mut self, inner: &Event) {
        match inner {
            Event::TurnCompleted {
                usage, cost_usd, ..
            } => self.add_turn(usage, *cost_usd),
            Event::Subagent { inner, .. } => self.apply_subagent(inner),
            _ => {}
        }
    }

    fn add_turn(&mut self, usage: &Usage, cost_usd: Option<f64>) {
        self.usage.add(usage);
        self.cost_usd += cost_usd.unwrap_or(0.0);
    }
}
