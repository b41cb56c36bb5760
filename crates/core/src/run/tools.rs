//! The tools of one turn: the agent's built-in tools, then the late tools
//! (MCP servers' tools) it offers, as they were at the turn's boundary.
//!
//! Invariants:
//! - The set changes only at a turn boundary ([`RunLoop::refresh_tools`],
//!   before the turn's first request): every request of a turn, and every
//!   call its answers make, sees the same tools. A call resolves against
//!   the set that was offered with the request that made it.
//! - Late tools follow the built-in ones in join order, so a tool that
//!   joins is appended and the request prefix before it stays as it was.
//! - Each change is told to the frontends ([`Event::ToolsChanged`], one per
//!   source) before the request that carries it; the token estimate's
//!   fixed part follows the tool schemas.
//! - The status of MCP servers is forwarded as it is reported, by a task
//!   of the run a person started ([`StatusForwarder`]); it is stopped
//!   (and waited for) before the run's last event.

use std::sync::Arc;

use gyre_protocol::{Event, ToolSpec};
use gyre_tools::{LateSnapshot, Registry};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use super::RunLoop;
use crate::agent::Agent;
use crate::events::EventSink;
use crate::scheduler::Scheduler;

/// The system prompt's and the tool schemas' bytes of a request `agent`
/// would send now (the late tools it offers as they are).
pub(crate) fn fixed_request_bytes(agent: &Agent) -> u64 {
    TurnTools::of(agent).fixed_request_bytes
}

/// The tools offered in the current turn.
pub(super) struct TurnTools {
    /// Built-in, then late; what calls resolve against.
    pub registry: Registry,
    pub specs: Vec<ToolSpec>,
    /// The system prompt and the tool schemas, in bytes.
    pub fixed_request_bytes: u64,
    late: Arc<LateSnapshot>,
}

impl TurnTools {
    /// The agent's tools as they are now.
    pub fn of(agent: &Agent) -> Self {
        let late = agent
            .config
            .late_tools
            .as_ref()
            .map(|late| late.snapshot())
            .unwrap_or_default();
        Self::with(agent, late)
    }

    fn with(agent: &Agent, late: Arc<LateSnapshot>) -> Self {
        if late.is_empty() {
            return Self {
                registry: agent.tools.clone(),
                specs: agent.tool_specs.clone(),
                fixed_request_bytes: agent.fixed_request_bytes,
                late,
            };
        }
        let registry = agent.tools.with_late(&late, |tool| agent.offers_late(tool));
        let specs = registry.specs();
        let schema_bytes = serde_json::to_string(&specs).map_or(0, |json| json.len());
        Self {
            registry,
            specs,
            fixed_request_bytes: (agent.config.system_prompt.len() + schema_bytes) as u64,
            late,
        }
    }

    pub fn names(&self) -> Vec<String> {
        self.specs.iter().map(|s| s.name.clone()).collect()
    }
}

impl RunLoop<'_> {
    /// A scheduler for one round of calls, with the agent's concurrency
    /// and sibling-abort policy, under the run's cancellation.
    pub(super) fn scheduler(&self) -> Scheduler {
        let config = &self.agent.config;
        Scheduler::new(
            config.read_only_concurrency,
            config.sibling_abort,
            self.approver.clone(),
            self.cancel.clone(),
        )
    }

    /// The tools the model is offered: the registry's, and the provider's
    /// web search where the request asks for it and the API runs it.
    pub(super) fn offered_names(&self) -> Vec<String> {
        let mut names = self.tools.names();
        let config = &self.agent.config;
        if config.sampling.web_search.is_some()
            && (self.agent.client).offers_web_search(&config.model, !names.is_empty())
        {
            names.push(crate::WEB_SEARCH_TOOL.to_string());
        }
        names
    }

    /// The run's first events: [`Event::RunStarted`] with the tools offered
    /// now, then (for a run a person started) the MCP servers' states,
    /// forwarded from then on.
    pub(super) async fn announce_start(&mut self) {
        self.events
            .emit(Event::RunStarted {
                session_id: self.session.id().to_string(),
                model: self.agent.config.model.clone(),
                cwd: self.agent.workspace.root().display().to_string(),
                tools: self.offered_names(),
            })
            .await;
        if self.agent.config.depth == 0 {
            self.statuses = StatusForwarder::start(self.agent, self.events).await;
        }
    }

    /// At a turn boundary: takes the late tools as they are now and tells
    /// the frontends what changed.
    pub(super) async fn refresh_tools(&mut self) {
        let Some(late) = &self.agent.config.late_tools else {
            return;
        };
        if late.generation() == self.tools.late.generation() {
            return;
        }
        let next = TurnTools::with(self.agent, late.snapshot());
        let changes = next
            .late
            .changes_since(&self.tools.late, |tool| self.agent.offers_late(tool));
        let (before, after) = (self.tools.fixed_request_bytes, next.fixed_request_bytes);
        self.tools = next;
        // The provider's last count covered the old schemas: the estimate
        // follows the new ones.
        let meter = self.meter();
        if let Some(baseline) = &mut self.session.baseline {
            baseline.tokens = if after >= before {
                baseline.tokens + meter.tokens(after - before)
            } else {
                baseline.tokens.saturating_sub(meter.tokens(before - after))
            };
        }
        for change in changes {
            tracing::info!(
                source = %change.source,
                added = ?change.added,
                removed = ?change.removed,
                "the tools offered changed"
            );
            self.events
                .emit(Event::ToolsChanged {
                    source: change.source,
                    added: change.added,
                    removed: change.removed,
                })
                .await;
        }
    }
}

/// Forwards MCP servers' status reports to a run's events, from the
/// latest known at its start to its end.
pub(super) struct StatusForwarder {
    task: JoinHandle<()>,
}

impl StatusForwarder {
    /// Sends the latest status of each server, then forwards every later
    /// report until stopped. `None` when the agent has no late tools.
    pub async fn start(agent: &Agent, events: &EventSink) -> Option<Self> {
        let late = agent.config.late_tools.as_ref()?;
        let (now, mut reports) = late.watch();
        for status in now {
            events.emit(Event::McpServerStatus(status)).await;
        }
        let events = events.clone();
        let task = tokio::spawn(async move {
            loop {
                match reports.recv().await {
                    Ok(status) => events.emit(Event::McpServerStatus(status)).await,
                    Err(RecvError::Lagged(missed)) => {
                        tracing::debug!(missed, "MCP status reports dropped for a slow run");
                    }
                    Err(RecvError::Closed) => break,
                }
            }
        });
        Some(Self { task })
    }

    /// Stops forwarding; nothing is sent once this returns.
    pub async fn stop(mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
    }
}

impl Drop for StatusForwarder {
    /// A run dropped without finishing (its task aborted) leaves no
    /// forwarder behind.
    fn drop(&mut self) {
        self.task.abort();
    }
}
