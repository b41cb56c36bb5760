//! The loop of one run, as named steps over the session's explicit state.
//!
//! ```text
//! [answer calls a crash left pending] ─▶ [compact first] ─▶ record prompt ─▶
//!   ┌─ budget check (cost, tokens) ─▶ context: warn, prune, compact
//!   │  turn: validate + repair history (store what is made up)
//!   │        build request (borrowing the repaired history) ─▶ stream answer
//!   │        each completed part: store it, then act on it
//!   │        (a tool call is validated, checked and started)
//!   │        overflow error: compact once, ask again
//!   │   collect results in call order, store each
//!   │   checkpoint: state saved, store synced (turn boundary)
//!   └─ decide (`run::decide`, pure, once per turn) over the turn's outcome:
//!      continue (tools ran; an unusable answer asked again; cut off by the
//!      output limit; a background subagent ended while idle; a completion
//!      reminder; a Stop hook) or end; the transition is recorded in one
//!      place, in the loop
//! ```
//!
//! Invariants:
//! - Append before act: a part reaches the store before the loop acts on it
//!   (a tool call is stored before it starts; a result before the next request).
//! - Every tool call of a stored assistant message gets exactly one stored
//!   result, also when the run is cancelled or the stream breaks; a crash
//!   leaves calls without one, which the next run answers first
//!   (`run::resume`: read-only ones run again, mutating ones never). What
//!   is sent is checked and repaired before every request anyway
//!   (`run::repair`), so a damaged history cannot brick a session.
//! - Every tool result passes the agent's [`crate::Redactor`] before it is
//!   stored, announced or sent (`run::results`).
//! - The run ends with exactly one `RunFinished` event, whatever happens.
//! - A background subagent's end is told to the model once, at a turn
//!   boundary; a text-only answer while some still run waits for the next
//!   to end instead of ending the run; in completion mode only
//!   `attempt_completion` ends it, after bounded reminders (`run::idle`).
//!   Subagents never outlive the run that started them, and what they
//!   spend counts in its totals and budgets.
//! - What carries over from turn to turn lives in `QueryState` (saved at every
//!   turn boundary) and the history; a turn's own outcome (the answer, its
//!   error, cancellation, what the loop guard said, a completion) is one
//!   value (`run::decide::TurnOutcome`), gathered after the turn and read
//!   only by the decision out of that turn. The run, not the session, owns
//!   the background subagents' handles.
//! - A request that fails transiently before any tool started is asked again
//!   (per [`crate::RetryPolicy`], each wait an event); the cut answer is
//!   discarded from the store first, so no half answer is ever in the
//!   history. Once a tool started, the answer stands (a tool never runs
//!   twice): its results go back and the next request carries on. Three
//!   turns in a row that end in an error end the run.
//!
//! This module holds the run's entry (`drive`), the loop and its state
//! (`RunLoop`) and the store-before-act helpers; one turn is `run::turn`,
//! its retries `run::retries`, and each other step its own child module.

mod answer;
mod budget;
mod checkpoints;
mod commands;
mod compaction;
mod context;
mod decide;
mod dual;
mod end;
mod flight;
mod guard;
mod hooked;
mod idle;
mod lease;
mod lost_tasks;
mod message;
mod prompt;
pub(crate) use flight::{LEASE, TAKEN_OVER, host_name};
pub(crate) use idle::interrupted_text;
pub(crate) use lease::Lease;
pub(crate) use tools::fixed_request_bytes;
mod recovery;
mod repair;
mod results;
mod resume;
mod retries;
mod schema;
mod tools;
mod turn;

use std::sync::Arc;
use std::time::Instant;

use gyre_protocol::{
    CompactTrigger, Event, FinishReason, Message, Part, RunErrorKind, RunSummary, Usage,
};
use gyre_store::{SessionStore, StoreError};
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, RunRequest};
use crate::approval::Approver;
use crate::context::CompactError;
use crate::events::EventSink;
use crate::prompt::WRAP_UP_NOTICE;
use crate::session::Session;
use crate::state::{RunRecord, Transition};
use crate::subagent::background::BackgroundTasks;
use crate::subagent::{LoopScope, Spent};
use answer::{Attempt, ToolUse};
use context::AutoCompaction;
use decide::{Cancelled, Limits, Next, Step, TurnOutcome, decide};
use end::End;
use message::MessageInProgress;
use tools::{StatusForwarder, TurnTools};

/// What a turn led to, once its decision was carried out.
enum Turned {
    /// Another request follows; the loop records why.
    Next(Transition),
    End(End),
}

/// Runs the loop to its end and reports it; gives the session back.
pub(crate) async fn drive(
    agent: Arc<Agent>,
    mut session: Session,
    request: RunRequest,
    events: EventSink,
    approver: Approver,
    cancel: CancellationToken,
) -> Session {
    let started = Instant::now();
    let session_id = session.id().to_string();
    let todo_revision = session.tools.todos.revision();
    // The run's own token: losing the session's lock cancels the run (and
    // its tools) without cancelling the frontend's token.
    let cancel = cancel.child_token();
    // The run owns its background subagents: they never outlive it.
    let tasks = Arc::new(BackgroundTasks::default());
    let spent = Arc::new(Spent::default());
    let scope: gyre_tools::LoopScope = Arc::new(LoopScope {
        agent: agent.clone(),
        events: events.clone(),
        approver: approver.clone(),
        cancel: cancel.clone(),
        tasks: tasks.clone(),
        provider: session.meta.provider.clone(),
        spent: spent.clone(),
    });
    let mut run = RunLoop {
        agent: &agent,
        scope,
        spent,
        tasks: tasks.clone(),
        limits: Limits::of(&agent.config),
        store: agent.store.clone(),
        session: &mut session,
        events: &events,
        approver: &approver,
        cancel: &cancel,
        usage: Usage::default(),
        cost_usd: 0.0,
        todo_revision,
        final_text: String::new(),
        auto_compaction: AutoCompaction::Allowed,
        compaction_failure: None,
        flight: None,
        first_message: None,
        tools: TurnTools::of(&agent),
        statuses: None,
    };
    let mut end = run.run(request).await;
    let refused = end
        .error
        .as_ref()
        .is_some_and(|e| e.message.starts_with(TAKEN_OVER));
    let lost = run.flight.as_ref().is_some_and(flight::Flight::is_lost);
    if lost && !refused {
        end = End::taken_over(None);
    }
    let taken_over = lost || refused;
    if let Some(forwarder) = run.statuses.take() {
        forwarder.stop().await;
    }
    run.add_subagent_spending();
    hooked::session_end_hook(&agent, &session_id, end.reason).await;
    // Background subagents live as long as the run that started them (a
    // run that completes waited for them; any other end stops them).
    tasks.cancel_all();
    let usage = run.usage;
    let cost_usd = run.cost_usd;
    let final_text = end
        .final_text
        .unwrap_or_else(|| std::mem::take(&mut run.final_text));
    let flight = run.flight.take();
    let store = run.store.clone();
    let first_message = run.first_message.take();
    let tool_names = run.offered_names();
    session.state.transition = Transition::Finished(end.reason);
    let summary = RunSummary {
        reason: end.reason,
        final_text,
        num_turns: session.state.turn_count,
        usage,
        cost_usd,
        duration_ms: started.elapsed().as_millis() as u64,
        error: end.error,
    };
    session.state.record_run(RunRecord {
        from_message: first_message,
        model: agent.config.model.clone(),
        cwd: agent.workspace.root().display().to_string(),
        tools: tool_names,
        summary: summary.clone(),
    });
    // The run is over either way; a store that fails now was reported
    // already. Only a run that holds the lock writes its end (through its
    // fenced store); a run taken over writes nothing more: the session is
    // the other run's.
    if let Some(flight) = flight {
        let holder = flight.land();
        if !taken_over {
            if let Ok(state) = serde_json::to_value(&session.state) {
                let _ = store.save_state(session.id(), &state).await;
            }
            let _ = store.sync().await;
            if let Err(error) = agent.store.unlock(session.id(), &holder).await {
                tracing::warn!("could not release the session's lock: {error}");
            }
        }
    }
    if let Some(error) = &summary.error {
        tracing::info!(reason = ?summary.reason, kind = ?error.kind, "run ended: {}", error.message);
    }
    events.emit(Event::RunFinished(summary)).await;
    session
}

struct RunLoop<'a> {
    agent: &'a Arc<Agent>,
    /// What `task` and `task_output` need of this run (see `subagent`).
    scope: gyre_tools::LoopScope,
    /// What this run's subagents spent (shared with `scope`).
    spent: Arc<Spent>,
    /// The background subagents this run started.
    tasks: Arc<BackgroundTasks>,
    /// What of the configuration the turn's decision depends on.
    limits: Limits,
    /// Where the run writes: the agent's store, its session's writes fenced
    /// by the lock's generation once the run holds the lock.
    store: Arc<dyn SessionStore>,
    session: &'a mut Session,
    events: &'a EventSink,
    approver: &'a Approver,
    cancel: &'a CancellationToken,
    usage: Usage,
    cost_usd: f64,
    /// The todo list's revision last announced to the frontends.
    todo_revision: u64,
    final_text: String,
    auto_compaction: AutoCompaction,
    /// Why the run's last compaction failed, for the message that ends it.
    compaction_failure: Option<CompactError>,
    /// The session's lock while the run holds it.
    flight: Option<flight::Flight>,
    /// The first message the run added to the session (for replays).
    first_message: Option<String>,
    /// The tools of the current turn (taken at each turn boundary).
    tools: TurnTools,
    /// Forwards MCP servers' status reports (the top-level run only).
    statuses: Option<StatusForwarder>,
}

impl RunLoop<'_> {
    async fn run(&mut self, request: RunRequest) -> End {
        self.announce_start().await;
        match self.take_flight().await {
            Ok(Some(flight)) => {
                self.store = flight.fenced(self.agent.store.clone(), self.session.id());
                self.flight = Some(flight);
            }
            Ok(None) => return End::cancelled(),
            Err(err) => return End::store(err),
        }
        self.session.state.start_run();
        // Calls a crash left without results are answered before anything
        // else is recorded.
        if let Err(err) = self.resume_pending().await {
            return End::store(err);
        }
        // Background tasks an earlier process left untold are told with the
        // run's first user-side message.
        self.find_lost_tasks().await;

        if let Some(manual) = &request.compact {
            let compacted = self
                .compact(CompactTrigger::Manual, manual.instructions.as_deref())
                .await;
            match compacted {
                Err(err) => return End::store(err),
                Ok(Err(CompactError::Cancelled)) => return End::cancelled(),
                // Reported as an event; a prompt after it still runs.
                Ok(Err(error)) if request.prompt.is_none() => {
                    return End::with_error(
                        FinishReason::Failed,
                        RunErrorKind::ContextOverflow,
                        format!("could not compact the conversation: {error}"),
                    );
                }
                Ok(_) => {}
            }
        }
        let Some(prompt) = request.prompt else {
            return End::completed();
        };

        if let Err(end) = self.record_prompt(prompt, request.images).await {
            return end;
        }

        loop {
            if self.cancel.is_cancelled() {
                return End::cancelled();
            }
            self.add_subagent_spending();
            if let Some(end) = self.over_budget() {
                return end;
            }
            let turn = self.session.state.turn_count + 1;
            self.session.state.turn_count = turn;
            self.refresh_tools().await;
            let turned = match self.turn(turn).await {
                Ok(turned) => turned,
                Err(err) => return End::store(err),
            };
            // The one place a turn's transition is recorded (the run's end
            // records `Finished` in `drive`).
            if let Turned::Next(transition) = turned {
                self.session.state.transition = transition;
            }
            if let Err(err) = self.checkpoint().await {
                return End::store(err);
            }
            if let Turned::End(end) = turned {
                return end;
            }
        }
    }

    /// Adds the wrap-up notice when the next turn is the last, then the
    /// message to the history.
    async fn push_notice(
        &mut self,
        mut note: MessageInProgress,
        wrap_up_next: bool,
    ) -> Result<(), StoreError> {
        if wrap_up_next {
            self.record(&mut note, Part::text(WRAP_UP_NOTICE)).await?;
        }
        self.push_message(note).await;
        Ok(())
    }

    /// Stores a part (creating its message with the first one), then keeps it.
    async fn record(
        &mut self,
        message: &mut MessageInProgress,
        part: Part,
    ) -> Result<(), StoreError> {
        let store = &self.store;
        let session_id = self.session.id();
        if !message.stored {
            let first = Message::new(message.message.id.clone(), message.message.role, vec![part])
                .with_origin(message.message.origin.clone());
            store.append_message(session_id, &first).await?;
            message.message = first;
            message.stored = true;
        } else {
            store
                .append_part(session_id, &message.message.id, &part)
                .await?;
            message.message.parts.push(part);
        }
        Ok(())
    }

    /// Adds a recorded message to the history and tells the frontends.
    async fn push_message(&mut self, message: MessageInProgress) {
        if let Some(message) = message.finish() {
            self.first_message.get_or_insert_with(|| message.id.clone());
            self.session.history.push(message.clone());
            self.events.emit(Event::MessageAppended { message }).await;
        }
    }

    /// The turn boundary: state saved, everything synced to disk.
    async fn checkpoint(&mut self) -> Result<(), StoreError> {
        let state = serde_json::to_value(&self.session.state).unwrap_or_default();
        self.store.save_state(self.session.id(), &state).await?;
        self.store.sync().await
    }
}
