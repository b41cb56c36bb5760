//! The context window: how full it is, and what the loop does about it.
//!
//! ```text
//! before each request:  estimate ─▶ warn (80 %) ─▶ prune (70 %) ─▶ compact (90 %)
//! on an overflow error: compact once per turn, then ask again
//! ```
//!
//! Invariants:
//! - The session's `history` is the *model-visible* context: a summary
//!   message first when the session was compacted, then the messages kept or
//!   added since; pruned tool outputs appear there as short markers. The store
//!   keeps every message whole; nothing here deletes anything.
//! - Pruning moves one watermark forward (saved in [`ContextState`]); it never
//!   moves back and changes nothing between two steps, so between prune steps
//!   and compactions each request is a byte prefix-extension of the one before
//!   (the provider's prompt cache survives).
//! - A compaction is one summarising request with no tools; its result is
//!   stored as one summary message (the compact boundary) before the history
//!   is replaced, so a crash leaves either the old context or the new one.
//! - Estimates err high: the provider's reported usage is the ground truth for
//!   what was sent; only what was added since is estimated, from a
//!   bytes-per-token figure calibrated on that usage.
//!
//! Thresholds are shares of the *usable* budget: the window less the output
//! reserved for the answer and a safety margin.

pub(crate) mod compact;
mod meter;
mod o200k;
pub(crate) mod policy;
mod prune;
pub(crate) mod transcript;

use gyre_protocol::Event;
use serde::{Deserialize, Serialize};

use crate::LiveSession;

pub(crate) use compact::{CompactError, visible_from_boundary};
pub(crate) use meter::{Baseline, Meter, message_bytes};
pub(crate) use prune::{apply_pruning, latest_round_bytes, next_change_point, plan_pruning};

/// Whether the history is ever summarised.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compaction {
    /// Before a request that passes the threshold, and after an overflow.
    #[default]
    Auto,
    /// Never: an overflow ends the run with a clear message.
    Off,
}

/// Whether old tool outputs are replaced by markers in what is sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pruning {
    #[default]
    On,
    Off,
}

/// How tokens are counted before the provider reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Tokenizer {
    /// Bytes per token, calibrated from each response's usage.
    #[default]
    Calibrated,
    /// OpenAI's o200k BPE (tiktoken) for a whole history nothing was
    /// reported for yet; calibrated bytes per token otherwise. The BPE costs
    /// ~45 MB and ~0.2 s to load, so it loads only when a decision depends
    /// on it.
    O200k,
}

/// How the context is managed (`[context]` in the config).
#[derive(Debug, Clone)]
pub struct ContextConfig {
    /// The model's context window in tokens; `None`: unknown, so nothing is
    /// done before a request (an overflow error still compacts).
    pub window: Option<u64>,
    pub compaction: Compaction,
    pub pruning: Pruning,
    /// Shares of the usable budget.
    pub warn_at: f64,
    pub prune_at: f64,
    pub compact_at: f64,
    /// Tokens held back beside the reserved output (estimates are estimates).
    pub margin_tokens: Option<u64>,
    /// Recent tokens kept verbatim after a compaction; default: a quarter of
    /// the usable budget, at most 20k.
    pub keep_recent_tokens: Option<u64>,
    /// Recent tokens whose tool outputs are never pruned; default: a fifth
    /// of the usable budget, at most 40k (the latest tool round is never
    /// pruned, whatever its size).
    pub protect_recent_tokens: Option<u64>,
    /// The model that writes summaries; default: the session's.
    pub compaction_model: Option<String>,
    pub tokenizer: Tokenizer,
    /// Ask for a summary after the conversation as last sent (served from
    /// the provider's prompt cache) when the session's model summarises and
    /// it fits; `false`: always send a plain-text transcript.
    pub cached_compaction: bool,
    /// Prune at every request past the prune line whatever the step frees
    /// (one shallow step per turn, each a prompt-cache miss): the naive
    /// strategy, kept for comparison; `false` (the default): few, deep steps.
    pub eager_pruning: bool,
}

impl Default for ContextConfig {
    fn default() -> Self {
        Self {
            window: None,
            compaction: Compaction::Auto,
            pruning: Pruning::On,
            warn_at: 0.8,
            prune_at: 0.7,
            compact_at: 0.9,
            margin_tokens: None,
            keep_recent_tokens: None,
            protect_recent_tokens: None,
            compaction_model: None,
            tokenizer: Tokenizer::Calibrated,
            cached_compaction: true,
            eager_pruning: false,
        }
    }
}

/// The budget of one model's requests, in tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Budget {
    pub window: u64,
    /// The window less the reserved output and the margin.
    pub usable: u64,
    pub warn_at: u64,
    pub prune_at: u64,
    pub compact_at: u64,
    pub keep_recent: u64,
    pub protect_recent: u64,
}

impl ContextConfig {
    /// The budget when the window is known.
    pub(crate) fn budget(&self, max_output_tokens: u32) -> Option<Budget> {
        let window = self.window?;
        let margin = self
            .margin_tokens
            .unwrap_or((window / 50).clamp(256, 4_000));
        let usable = window
            .saturating_sub(u64::from(max_output_tokens))
            .saturating_sub(margin)
            .max(window / 4);
        let share = |f: f64| (usable as f64 * f.clamp(0.05, 1.0)) as u64;
        Some(Budget {
            window,
            usable,
            warn_at: share(self.warn_at),
            prune_at: share(self.prune_at),
            compact_at: share(self.compact_at),
            keep_recent: self.keep_recent_tokens.unwrap_or((usable / 4).min(20_000)),
            protect_recent: self
                .protect_recent_tokens
                .unwrap_or((usable / 5).min(40_000)),
        })
    }
}

/// What the context management carries from turn to turn (part of
/// [`crate::QueryState`], so a resumed session sends what it sent before).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextState {
    /// Tool outputs in the model-visible history up to and including this
    /// message are sent as markers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pruned_through: Option<String>,
    /// Bytes per token, calibrated from the provider's usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_token: Option<f64>,
    /// Whether the warning went out since the last compaction.
    #[serde(default)]
    pub warned: bool,
    /// Compactions over the session.
    #[serde(default)]
    pub compactions: u32,
}

/// The [`Event::ContextUsage`] the loop would emit before a request of
/// `live`'s session now: the same estimate (the provider's last count while
/// it holds, else the history counted afresh) against the budget of the
/// agent the next run uses. For a frontend that shows a session it opened,
/// rewound or switched to before any request. `None` when the window is
/// unknown, or while a run holds the session (its own events tell).
pub async fn usage_now(live: &LiveSession) -> Option<Event> {
    let agent = live.agent();
    let config = &agent.config;
    let budget = config.context.budget(config.max_output_tokens)?;
    let (history, baseline, calibrated) = live.with_session(|session| {
        (
            session.history.clone(),
            session.baseline,
            session.state.context.bytes_per_token,
        )
    })?;
    let meter = Meter::new(crate::run::fixed_request_bytes(&agent), calibrated);
    let used = meter
        .estimate_request(&history, baseline, config.context.tokenizer, budget.usable)
        .await;
    Some(Event::ContextUsage {
        used_tokens: used,
        usable_tokens: budget.usable,
        window: budget.window,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_reserves_output_and_margin() {
        let config = ContextConfig {
            window: Some(32_000),
            ..ContextConfig::default()
        };
        let budget = config.budget(4_096).unwrap();
        assert_eq!(budget.usable, 32_000 - 4_096 - 640);
        assert_eq!(budget.compact_at, (budget.usable as f64 * 0.9) as u64);
        assert!(budget.prune_at < budget.warn_at && budget.warn_at < budget.compact_at);
        assert_eq!(budget.keep_recent, budget.usable / 4);
        assert!(ContextConfig::default().budget(4_096).is_none());
        // A huge output limit still leaves a quarter of the window to use.
        let tiny = ContextConfig {
            window: Some(8_000),
            ..ContextConfig::default()
        };
        assert_eq!(tiny.budget(32_000).unwrap().usable, 2_000);
    }
}
