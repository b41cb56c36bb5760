//! Before each request: measure the context, warn, prune, compact; after
//! each answer: take the provider's count as the new baseline.
//!
//! The decisions are `crate::context`'s; this file only applies them to the
//! session and tells the frontends.

use std::sync::Arc;

use gyre_protocol::{CompactTrigger, Event, Message, Usage};
use gyre_store::StoreError;

use super::RunLoop;
use crate::context::compact::{cached_request_text, split_point};
use crate::context::policy::{Candidate, Choice, OUTPUT, Pressure, READ, WRITE};
use crate::context::{
    Baseline, Budget, Compaction, Meter, Pruning, apply_pruning, latest_round_bytes, message_bytes,
    next_change_point, plan_pruning,
};

/// The summary's size before the session has one to go by.
const DEFAULT_SUMMARY_TOKENS: u64 = 1_000;

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
        let usable = self.budget().map_or(u64::MAX, |b| b.usable);
        self.meter()
            .estimate_request(
                &self.session.history,
                self.session.baseline,
                self.agent.config.context.tokenizer,
                usable,
            )
            .await
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
        // change on), chosen by price: from the prune line, the cheaper of a
        // deep prune and a compaction (its summary request served from the
        // cache) per turn of the cycle it starts, taken once the context
        // reaches that cycle's line. Between steps every request is a pure
        // append.
        let pruning = self.agent.config.context.pruning == Pruning::On;
        let auto = self.agent.config.context.compaction == Compaction::Auto
            && self.auto_compaction == AutoCompaction::Allowed;
        let step = if used >= budget.prune_at {
            self.choose_step(budget, used, pruning, auto)
        } else {
            Step::None
        };
        if step == Step::Prune {
            let round = self
                .meter()
                .tokens(latest_round_bytes(&self.session.history));
            let min_gain = self.min_prune_gain(round.max(1));
            if let Some(post) = self.prune(budget, used, min_gain).await {
                used = post;
            }
        }
        // Before the first answer there is nothing to summarise: the size
        // is the system prompt, the tools and the prompt (an estimate that
        // a server whose template drops the tools counts far lower), and a
        // summary request would be wasted. The request goes; a real
        // overflow is the overflow path's.
        let has_answer = self
            .session
            .history
            .iter()
            .any(|m| m.role == gyre_protocol::Role::Assistant);
        if auto
            && has_answer
            && (step == Step::Compact || used >= budget.compact_at)
            && self.compact(CompactTrigger::Auto, None).await?.is_err()
        {
            self.auto_compaction = AutoCompaction::FailedThisRun;
        }
        Ok(())
    }

    /// Where a cache entry should end in the request of `messages`: before
    /// the next prune step's change point, so that step reads everything
    /// before it (Anthropic reads only entries a breakpoint wrote; the
    /// request after the step marks the same message, see `answer`). None
    /// without pruning, and none for eager pruning, the naive strategy,
    /// which plans nothing.
    pub(super) fn cache_point(&self, messages: &[Arc<Message>]) -> Option<usize> {
        let context = &self.agent.config.context;
        (context.pruning == Pruning::On && !context.eager_pruning)
            .then(|| next_change_point(messages))
            .flatten()
    }

    /// Which step to take at `used` tokens, past the prune line: the
    /// cheaper of a deep prune and a compaction per turn of the cycle it
    /// starts, once the context reaches that cycle's line
    /// (`context::policy`). Pruning every turn (`eager_pruning`) is the
    /// naive strategy kept for comparison.
    fn choose_step(&self, budget: Budget, used: u64, pruning: bool, auto: bool) -> Step {
        let meter = self.meter();
        let history = &self.session.history;
        let bytes = |tokens: u64| (tokens as f64 * meter.bytes_per_token) as u64;
        let round = meter.tokens(latest_round_bytes(history)).max(1);
        let min_gain = self.min_prune_gain(round);
        let plan = pruning
            .then(|| plan_pruning(history, bytes(budget.protect_recent), bytes(min_gain)))
            .flatten();
        if self.agent.config.context.eager_pruning && plan.is_some() {
            return Step::Prune;
        }
        let prune = plan.map(|plan| {
            let saved = meter.tokens(plan.saved_bytes);
            let after: u64 = history[plan.first..].iter().map(|m| message_bytes(m)).sum();
            let rewrite = meter
                .tokens(after.saturating_sub(plan.saved_bytes))
                .saturating_sub(round);
            Candidate {
                post: used.saturating_sub(saved),
                cost: (WRITE - READ) * rewrite as f64,
                extra_requests: 0,
            }
        });
        let compact = auto
            .then(|| self.compaction_candidate(budget, used, round))
            .flatten();
        let pressure = Pressure {
            used,
            round,
            prune_at: budget.prune_at,
            compact_at: budget.compact_at,
        };
        match pressure.choose(prune, compact) {
            Choice::None => Step::None,
            Choice::Prune => Step::Prune,
            Choice::Compact => Step::Compact,
        }
    }

    /// A compaction now, priced: its summary request (a cache read of the
    /// conversation in the cached form), the summary as output, the new
    /// short prompt written.
    fn compaction_candidate(&self, budget: Budget, used: u64, round: u64) -> Option<Candidate> {
        let meter = self.meter();
        let history = &self.session.history;
        let bytes = |tokens: u64| (tokens as f64 * meter.bytes_per_token) as u64;
        let split = split_point(history, bytes(budget.keep_recent)).ok()?;
        let kept = meter.tokens(history[split..].iter().map(|m| message_bytes(m)).sum());
        let summary = history
            .first()
            .filter(|m| m.compact_boundary().is_some())
            .map_or(DEFAULT_SUMMARY_TOKENS, |m| meter.tokens(message_bytes(m)));
        let config = &self.agent.config;
        let cached = config.context.cached_compaction
            && config
                .context
                .compaction_model
                .as_ref()
                .is_none_or(|m| m == &config.model);
        let read = if cached { READ } else { 1.0 };
        let instruction = meter.tokens(cached_request_text(0, &[], None).len() as u64);
        Some(Candidate {
            post: meter.tokens(meter.fixed_bytes) + summary + kept,
            cost: read * used as f64
                + WRITE * instruction as f64
                + OUTPUT * summary as f64
                + WRITE * (summary + kept).saturating_sub(round) as f64,
            extra_requests: 1,
        })
    }

    /// The smallest saving a prune step is taken for: a round like the
    /// latest (less would be taken again at the next request).
    fn min_prune_gain(&self, round: u64) -> u64 {
        if self.agent.config.context.eager_pruning {
            1
        } else {
            round
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
