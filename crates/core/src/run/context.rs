//! Before each request: measure the context, warn, prune, compact; after
//! each answer: take the provider's count as the new baseline.
//!
//! The decisions are `crate::context`'s; this file only applies them to the
//! session and tells the frontends.

use gyre_protocol::{CompactTrigger, Event, Usage};
use gyre_store::StoreError;

use super::RunLoop;
use crate::context::{Baseline, Budget, Compaction, Meter, Pruning, apply_pruning, plan_pruning};

/// The smallest prune step worth breaking the cached prefix for.
const MIN_PRUNE_GAIN_TOKENS: u64 = 20_000;

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
        // A prune step that leaves less than the minimum gain of headroom
        // means the context is mostly what pruning cannot shrink: compact
        // now rather than prune again at every turn.
        let mut crowded = false;
        if self.agent.config.context.pruning == Pruning::On && used >= budget.prune_at {
            let min_gain = MIN_PRUNE_GAIN_TOKENS.min(budget.usable / 10);
            if let Some(post) = self.prune(budget, used, min_gain).await {
                used = post;
                crowded = post + min_gain > budget.prune_at;
            }
        }
        if self.agent.config.context.compaction == Compaction::Auto
            && (used >= budget.compact_at || crowded)
            && self.auto_compaction == AutoCompaction::Allowed
            && self.compact(CompactTrigger::Auto, None).await?.is_err()
        {
            self.auto_compaction = AutoCompaction::FailedThisRun;
        }
        Ok(())
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
