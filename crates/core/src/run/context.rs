//! Before each request: measure the context, warn, prune, compact; after
//! each answer: take the provider's count as the new baseline.
//!
//! The decisions are `crate::context`'s; this file only applies them to the
//! session and tells the frontends.

use gyre_protocol::{CompactTrigger, Event, Usage};
use gyre_store::StoreError;

use super::RunLoop;
use crate::context::{
    Baseline, Budget, Compaction, Meter, Pruning, apply_pruning, latest_round_bytes, plan_pruning,
};

/// The smallest prune step worth breaking the cached prefix for.
const MIN_PRUNE_GAIN_TOKENS: u64 = 20_000;
/// Below the compaction line, a prune step is taken only when it makes room
/// for this many rounds like the latest one.
const ROUNDS_WORTH_A_STEP: u64 = 4;

/// The step taken before a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    None,
    Prune,
    Compact,
}

/// Whether the loop may still compact before a request in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AutoCompaction {
    Allowed,
    /// An automatic compaction failed: not again this run (each try would
    /// cost a request); an overflow may still compact once per turn.
    FailedThisRun,
}

impl RunLoop<'_> {
    pub(super) fn meter(&self) -> Meter {
        Meter::new(
            self.tools.fixed_request_bytes,
            self.session.state.context.bytes_per_token,
        )
    }

    pub(super) fn budget(&self) -> Option<Budget> {
        self.agent
            .config
            .context
            .budget(self.agent.config.max_output_tokens)
    }

    /// The estimated prompt tokens of a request sending the history now.
    pub(super) async fn estimate(&self) -> u64 {
        let meter = self.meter();
        let history = &self.session.history;
        match self.session.baseline {
            Some(_) => meter.estimate(history, self.session.baseline),
            None => {
                let usable = self.budget().map_or(u64::MAX, |b| b.usable);
                let tokenizer = self.agent.config.context.tokenizer;
                meter.estimate_fresh(history, tokenizer, usable).await
            }
        }
    }

    /// Warns, prunes and compacts as the budget says, before a request.
    pub(super) async fn manage_context(&mut self) -> Result<(), StoreError> {
        let Some(budget) = self.budget() else {
            return Ok(());
        };
        let mut used = self.estimate().await;
        let (usable_tokens, window) = (budget.usable, budget.window);
        self.events
            .emit(Event::ContextUsage {
                used_tokens: used,
                usable_tokens,
                window,
            })
            .await;
        if used >= budget.warn_at && !self.session.state.context.warned {
            self.session.state.context.warned = true;
            self.events
                .emit(Event::ContextWarning {
                    used_tokens: used,
                    usable_tokens,
                    window,
                })
                .await;
        }
        // Few, deep steps (each one rewrites the cached prompt from its first
        // change on): from the prune line a prune is taken only when it frees
        // room for several more rounds at once; otherwise nothing happens
        // until the next round would pass the compaction line, and then a
        // compaction (its summary request served from the cache). Between
        // steps every request is a pure append.
        let pruning = self.agent.config.context.pruning == Pruning::On;
        let auto = self.agent.config.context.compaction == Compaction::Auto
            && self.auto_compaction == AutoCompaction::Allowed;
        let step = if used >= budget.prune_at {
            self.choose_step(budget, used, pruning, auto)
        } else {
            Step::None
        };
        if step == Step::Prune {
            let min_gain = self.min_prune_gain(budget);
            if let Some(post) = self.prune(budget, used, min_gain).await {
                used = post;
            }
        }
        if auto
            && (step == Step::Compact || used >= budget.compact_at)
            && self.compact(CompactTrigger::Auto, None).await?.is_err()
        {
            self.auto_compaction = AutoCompaction::FailedThisRun;
        }
        Ok(())
    }

    /// Which step to take at `used` tokens, past the prune line.
    fn choose_step(&self, budget: Budget, used: u64, pruning: bool, auto: bool) -> Step {
        let meter = self.meter();
        let history = &self.session.history;
        let bytes = |tokens: u64| (tokens as f64 * meter.bytes_per_token) as u64;
        let round = meter.tokens(latest_round_bytes(history)).max(1);
        let min_gain = self.min_prune_gain(budget);
        let post_prune = if pruning {
            plan_pruning(history, bytes(budget.protect_recent), bytes(min_gain))
                .map(|plan| used.saturating_sub(meter.tokens(plan.saved_bytes)))
        } else {
            None
        };
        let rounds = |post: u64| budget.compact_at.saturating_sub(post) / round;
        let eager = self.agent.config.context.eager_pruning;
        if let Some(post) = post_prune
            && (eager || rounds(post) >= ROUNDS_WORTH_A_STEP)
        {
            return Step::Prune;
        }
        // Wait while the next round still fits under the compaction line;
        // then compact while the conversation still fits a summary request
        // that the provider serves from its cache (a prune that frees less
        // than a few rounds would be taken again soon).
        if used + round <= budget.compact_at {
            return Step::None;
        }
        match (auto, post_prune) {
            (true, _) => Step::Compact,
            (false, Some(_)) => Step::Prune,
            (false, None) => Step::None,
        }
    }

    /// The smallest saving a prune step is taken for.
    fn min_prune_gain(&self, budget: Budget) -> u64 {
        if self.agent.config.context.eager_pruning {
            1
        } else {
            MIN_PRUNE_GAIN_TOKENS.min(budget.usable / 10)
        }
    }

    /// One prune step, when it saves at least `min_gain` tokens; returns
    /// the new estimate.
    async fn prune(&mut self, budget: Budget, used: u64, min_gain: u64) -> Option<u64> {
        let meter = self.meter();
        let bytes = |tokens: u64| (tokens as f64 * meter.bytes_per_token) as u64;
        let plan = plan_pruning(
            &self.session.history,
            bytes(budget.protect_recent),
            bytes(min_gain),
        )?;
        let pruned = apply_pruning(&mut self.session.history, plan.through);
        self.session.state.context.pruned_through =
            Some(self.session.history[plan.through].id.clone());
        self.session.baseline = None;
        self.session.validated.reset();
        let post = self.estimate().await;
        tracing::debug!(pruned, pre = used, post, "pruned old tool outputs");
        self.events
            .emit(Event::ContextPruned {
                pruned_results: pruned,
                pre_tokens: used,
                post_tokens: post,
            })
            .await;
        Some(post)
    }

    /// After an answer: the provider's count of the request (plus the
    /// answer) is the baseline for the next estimate, and calibrates the
    /// bytes per token.
    pub(super) fn measured(&mut self, usage: &Usage, request_bytes: u64) {
        let prompt = usage.prompt_tokens();
        if prompt == 0 {
            self.session.baseline = None;
            return;
        }
        self.session.baseline = Some(Baseline {
            tokens: prompt + usage.output_tokens,
            len: self.session.history.len(),
        });
        if let Some(ratio) = Meter::calibrate(request_bytes, prompt) {
            self.session.state.context.bytes_per_token = Some(ratio);
        }
    }
}
