//! What a run spends, and the budgets that end it (seed 003's
//! `task_budget`): checked before each turn, so the turn in progress always
//! finishes and no new request starts once one is crossed.

use gyre_protocol::Usage;

use super::{End, RunLoop};

impl RunLoop<'_> {
    /// Adds a response's usage to the run's and the session's totals;
    /// returns what it cost, when the prices are known.
    pub(super) fn account(&mut self, usage: &Usage) -> Option<f64> {
        self.usage.add(usage);
        self.session.state.usage.add(usage);
        let cost = self.agent.config.pricing.map(|prices| prices.cost(usage));
        self.cost_usd += cost.unwrap_or(0.0);
        cost
    }

    /// Adds what subagents spent since the last call to the run's and the
    /// session's totals (their usage is their own sessions' too).
    pub(super) fn add_subagent_spending(&mut self) {
        let (usage, cost) = self.spent.take();
        self.usage.add(&usage);
        self.session.state.usage.add(&usage);
        self.cost_usd += cost;
    }

    /// The run's end when a budget was crossed (checked before each turn;
    /// decided by `run::decide::over_budget`).
    pub(super) fn over_budget(&self) -> Option<End> {
        super::decide::over_budget(&self.agent.config.limits, &self.usage, self.cost_usd)
    }
}
