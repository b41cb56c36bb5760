//! A session kept open by a long-lived frontend (the TUI, `gyre serve`,
//! `gyre acp`, `gyre mcp-server`): prompts in, one numbered stream of
//! updates out, any number of readers.
//!
//! Invariants:
//! - One run at a time: a prompt submitted while a run is busy waits in a
//!   queue and runs after it, in submission order (seed 001). Each submitted
//!   request gets a run number, 1, 2, … in submission order, which the
//!   updates of its run carry.
//! - Every update (a run's event, or a status change) gets a sequence number,
//!   1, 2, … without gaps; a reader sees updates in that order. A reader that
//!   starts after `seq` (an SSE client's `Last-Event-ID`) gets what followed
//!   it, as long as it is still kept.
//! - Memory is bounded: the last [`KEPT_UPDATES`] updates are kept for
//!   readers. A reader that falls further behind is told so
//!   ([`Lagged`]) and never silently skips updates.
//! - Every submitted request's run number gets exactly one
//!   [`Event::RunFinished`] (after its [`Event::RunStarted`]): a request
//!   dropped by [`Abort::Everything`] or [`LiveSession::close`] ends
//!   `cancelled`, one submitted to a closed session ends `failed`, without
//!   running. So a reader waiting for its run's end never waits forever.
//! - An abort that comes before the run has started (between `submit` and
//!   the run's first step, or while the run before it is being put away
//!   after its `RunFinished`) is kept and applied as the run starts.
//! - The status is `Idle` with no run and no queue, `WaitingForPermission`
//!   while a permission request of the running run (or of one of its
//!   subagents) is unanswered and its call has no result, `Busy`
//!   otherwise; each change is published as an update before the event that
//!   caused it is (so a reader sees `waiting_for_permission` before the
//!   request).
//! - The run's events are forwarded as they come: a reader's slowness never
//!   slows the run (readers pull from the kept updates), so the loop's own
//!   bounded channel is the only back-pressure.
//!
//! Trade-offs: readers are woken together ([`tokio::sync::Notify`]) and each
//! copies an `Arc` per update, which is cheaper than a channel per reader
//! and lets a late reader start from any kept sequence number. No lock is
//! held across an await.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::StreamExt;
use gyre_protocol::{Event, FinishReason, RunError, RunErrorKind, RunSummary, Usage};
use serde::Serialize;
use tokio::sync::Notify;

use crate::agent::{Agent, RunHandle, RunRequest};
use crate::approval::PermissionAnswer;
use crate::session::Session;

/// How many updates a live session keeps for readers that start late or
/// fall behind.
pub const KEPT_UPDATES: usize = 2048;

/// What a live session is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Idle,
    Busy,
    WaitingForPermission,
}

/// One item of a live session's stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// The session's status changed.
    Status(SessionStatus),
    /// An event of run number `run`.
    Event { run: u64, event: Event },
}

/// An update with its place in the stream.
#[derive(Debug, Clone)]
pub struct Numbered {
    pub seq: u64,
    pub update: Arc<Update>,
}

/// A reader fell more than [`KEPT_UPDATES`] behind: the updates after
/// `after` and before `resumes_at` are gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the reader fell behind: updates {} to {} are no longer kept", after + 1, resumes_at - 1)]
pub struct Lagged {
    pub after: u64,
    pub resumes_at: u64,
}

/// Whether a submitted request runs now or waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitted {
    /// Run number `run` started.
    Started { run: u64 },
    /// Run number `run` waits behind `ahead` others (the running one too).
    Queued { run: u64, ahead: usize },
}

impl Submitted {
    pub fn run(&self) -> u64 {
        match *self {
            Submitted::Started { run } | Submitted::Queued { run, .. } => run,
        }
    }
}

/// What [`LiveSession::abort`] stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Abort {
    /// The running run only; queued prompts go on after it.
    CurrentRun,
    /// The running run and every queued prompt.
    Everything,
}

struct Queued {
    run: u64,
    request: RunRequest,
}

struct Inner {
    agent: Arc<Agent>,
    /// `None` while a run holds the session.
    session: Option<Session>,
    queue: VecDeque<Queued>,
    current: Option<RunHandle>,
    next_run: u64,
    /// Whether a task is running the queue (it alone takes the session).
    driving: bool,
    status: SessionStatus,
    /// Unanswered permission requests of the running run (and its
    /// subagents): request id and call id.
    waiting: Vec<(String, String)>,
    /// An abort came before the run's handle existed.
    cancel_pending: bool,
    kept: VecDeque<Numbered>,
    next_seq: u64,
    closed: bool,
}

/// A session that stays open between prompts.
pub struct LiveSession {
    id: String,
    inner: Mutex<Inner>,
    wake: Notify,
}

impl std::fmt::Debug for LiveSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveSession")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl LiveSession {
    /// Opens `session` for runs of `agent`. Nothing runs until a prompt is
    /// submitted.
    pub fn new(agent: Arc<Agent>, session: Session) -> Arc<Self> {
        Arc::new(Self {
            id: session.id().to_string(),
            inner: Mutex::new(Inner {
                agent,
                session: Some(session),
                queue: VecDeque::new(),
                current: None,
                next_run: 1,
                driving: false,
                status: SessionStatus::Idle,
                waiting: Vec::new(),
                cancel_pending: false,
                kept: VecDeque::with_capacity(64),
                next_seq: 1,
                closed: false,
            }),
            wake: Notify::new(),
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind: go on.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The agent the next run uses.
    pub fn agent(&self) -> Arc<Agent> {
        self.lock().agent.clone()
    }

    /// Runs after the current one use `agent` (another model, say).
    pub fn set_agent(&self, agent: Arc<Agent>) {
        self.lock().agent = agent;
    }

    pub fn status(&self) -> SessionStatus {
        self.lock().status
    }

    /// The sequence number of the newest update (0: none yet).
    pub fn last_seq(&self) -> u64 {
        self.lock().next_seq - 1
    }

    /// The prompts waiting behind the running run, in order.
    pub fn queued(&self) -> Vec<String> {
        self.lock()
            .queue
            .iter()
            .map(|q| q.request.prompt.clone().unwrap_or_default())
            .collect()
    }

    /// Reads the session while no run holds it (`None` while one does).
    pub fn with_session<T>(&self, read: impl FnOnce(&Session) -> T) -> Option<T> {
        self.lock().session.as_ref().map(read)
    }

    /// Runs `request` now, or after the runs before it.
    pub fn submit(self: &Arc<Self>, request: RunRequest) -> Submitted {
        self.submit_and_read(request).0
    }

    /// Submits `request` and returns a reader that starts right before it,
    /// so it sees every update of the new run.
    pub fn submit_and_read(self: &Arc<Self>, request: RunRequest) -> (Submitted, Reader) {
        let mut inner = self.lock();
        let reader = Reader {
            live: self.clone(),
            after: inner.next_seq - 1,
        };
        let run = inner.next_run;
        inner.next_run += 1;
        if inner.closed {
            // Nothing will run it: its end is told at once.
            self.finish_unrun(
                &mut inner,
                run,
                FinishReason::Failed,
                "this session is closed here (closed, or lost when a run failed); open it again to go on",
            );
            return (Submitted::Queued { run, ahead: 0 }, reader);
        }
        if inner.driving {
            let ahead = inner.queue.len() + usize::from(inner.driving);
            inner.queue.push_back(Queued { run, request });
            return (Submitted::Queued { run, ahead }, reader);
        }
        // Nothing runs the queue: this request starts it, and the session
        // is busy from now on (not only once the task is scheduled).
        inner.driving = true;
        self.set_status(&mut inner, SessionStatus::Busy);
        drop(inner);
        tokio::spawn(self.clone().drive(Queued { run, request }));
        (Submitted::Started { run }, reader)
    }

    /// A reader of the updates after `after` (0: from the first kept one).
    pub fn read_after(self: &Arc<Self>, after: u64) -> Reader {
        Reader {
            live: self.clone(),
            after,
        }
    }

    /// Answers a permission request of the running run; false when none
    /// with that id is waiting.
    pub fn answer_permission(&self, request_id: &str, answer: PermissionAnswer) -> bool {
        let mut inner = self.lock();
        let Some(handle) = inner.current.clone() else {
            return false;
        };
        if !handle.answer_permission(request_id, answer) {
            return false;
        }
        inner.waiting.retain(|(id, _)| id != request_id);
        if inner.waiting.is_empty() && inner.status == SessionStatus::WaitingForPermission {
            self.set_status(&mut inner, SessionStatus::Busy);
        }
        true
    }

    /// Stops the running run (it records what happened so far); with
    /// [`Abort::Everything`] the queue is dropped too. Returns the prompts
    /// that were dropped.
    pub fn abort(&self, what: Abort) -> Vec<String> {
        let mut inner = self.lock();
        self.abort_locked(&mut inner, what)
    }

    fn abort_locked(&self, inner: &mut Inner, what: Abort) -> Vec<String> {
        let dropped: Vec<Queued> = match what {
            Abort::CurrentRun => Vec::new(),
            Abort::Everything => inner.queue.drain(..).collect(),
        };
        for queued in &dropped {
            self.finish_unrun(
                inner,
                queued.run,
                FinishReason::Cancelled,
                "cancelled before it started",
            );
        }
        match &inner.current {
            Some(handle) => handle.cancel(),
            // Submitted, not started yet: the run is cancelled as it starts.
            None if inner.driving => inner.cancel_pending = true,
            None => {}
        }
        dropped
            .into_iter()
            .map(|q| q.request.prompt.unwrap_or_default())
            .collect()
    }

    /// Whether the session takes no more runs: [`LiveSession::close`] was
    /// called, or a run ended without a session to go on with (its task
    /// failed and the store could not give the session back). Open it
    /// again from the store to go on.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Whether a run is going on or waiting.
    pub fn is_busy(&self) -> bool {
        self.status() != SessionStatus::Idle
    }

    /// Stops everything and refuses new runs; waits for the running run to
    /// record its end.
    pub async fn close(self: &Arc<Self>) {
        {
            // One lock: no submit slips in between the abort and the close.
            let mut inner = self.lock();
            inner.closed = true;
            self.abort_locked(&mut inner, Abort::Everything);
        }
        self.idle().await;
    }

    /// Waits until no run is going on or queued.
    pub async fn idle(self: &Arc<Self>) {
        loop {
            let woken = self.wake.notified();
            if self.status() == SessionStatus::Idle {
                return;
            }
            woken.await;
        }
    }

    /// Takes the session and runs `first`, then the queue until it is empty.
    async fn drive(self: Arc<Self>, first: Queued) {
        let mut first = Some(first);
        loop {
            let (agent, session, next) = {
                let mut inner = self.lock();
                let next = if inner.closed {
                    None
                } else {
                    first.take().or_else(|| inner.queue.pop_front())
                };
                // The session is taken only when there is a run for it.
                let Some((next, session)) =
                    next.and_then(|next| inner.session.take().map(|s| (next, s)))
                else {
                    inner.driving = false;
                    inner.cancel_pending = false;
                    self.set_status(&mut inner, SessionStatus::Idle);
                    return;
                };
                (inner.agent.clone(), session, next)
            };
            let session_id = session.id().to_string();
            let store = agent.store().clone();
            let mut run = agent.start(session, next.request);
            {
                let mut inner = self.lock();
                inner.current = Some(run.handle.clone());
                inner.waiting.clear();
                if std::mem::take(&mut inner.cancel_pending) {
                    run.handle.cancel();
                }
                self.set_status(&mut inner, SessionStatus::Busy);
            }
            while let Some(event) = run.events.next().await {
                let mut inner = self.lock();
                self.track_permissions(&mut inner, &event);
                if matches!(event, Event::RunFinished(_)) {
                    // Over for whoever reads it: an abort from now on is
                    // for the next run (kept until it starts), not this one.
                    inner.current = None;
                    inner.waiting.clear();
                }
                self.publish(
                    &mut inner,
                    Update::Event {
                        run: next.run,
                        event,
                    },
                );
            }
            let session = match run.finish().await {
                Ok(session) => Some(session),
                // The run's task panicked: what it stored is the truth.
                Err(_) => Session::load(store.as_ref(), &session_id).await.ok(),
            };
            let mut inner = self.lock();
            inner.current = None;
            inner.waiting.clear();
            match session {
                Some(session) => inner.session = Some(session),
                None => {
                    // Without a session nothing more can run here.
                    inner.closed = true;
                    inner.driving = false;
                    inner.cancel_pending = false;
                    let queued: Vec<Queued> = inner.queue.drain(..).collect();
                    for queued in queued {
                        self.finish_unrun(
                            &mut inner,
                            queued.run,
                            FinishReason::Failed,
                            "the session was lost when the run before this one failed; open it again to go on",
                        );
                    }
                    self.set_status(&mut inner, SessionStatus::Idle);
                    return;
                }
            }
        }
    }

    /// Keeps the status in step with permission requests, the subagents'
    /// included: waiting from a request until it is answered or its call
    /// has a result (a request withdrawn by a cancel or a sibling's abort).
    fn track_permissions(&self, inner: &mut Inner, event: &Event) {
        let mut event = event;
        while let Event::Subagent { inner: nested, .. } = event {
            event = nested;
        }
        match event {
            Event::PermissionRequested {
                request_id, call, ..
            } => {
                inner.waiting.push((request_id.clone(), call.id.clone()));
                self.set_status(inner, SessionStatus::WaitingForPermission);
            }
            Event::ToolResult { result, .. } if !inner.waiting.is_empty() => {
                inner.waiting.retain(|(_, call)| call != &result.call_id);
                if inner.waiting.is_empty() && inner.status == SessionStatus::WaitingForPermission {
                    self.set_status(inner, SessionStatus::Busy);
                }
            }
            _ => {}
        }
    }

    /// Tells the end of run `run`, which never ran: its start and its
    /// finish, with `reason` and one sentence.
    fn finish_unrun(&self, inner: &mut Inner, run: u64, reason: FinishReason, message: &str) {
        let agent = inner.agent.clone();
        let started = Event::RunStarted {
            session_id: self.id.clone(),
            model: agent.config().model.clone(),
            cwd: agent.workspace_root().display().to_string(),
            tools: agent.tool_names(),
        };
        self.publish(
            inner,
            Update::Event {
                run,
                event: started,
            },
        );
        let kind = match reason {
            FinishReason::Cancelled => RunErrorKind::Cancelled,
            _ => RunErrorKind::Store,
        };
        let finished = Event::RunFinished(RunSummary {
            reason,
            final_text: String::new(),
            num_turns: 0,
            usage: Usage::default(),
            cost_usd: 0.0,
            duration_ms: 0,
            error: Some(RunError {
                kind,
                message: message.to_string(),
            }),
        });
        self.publish(
            inner,
            Update::Event {
                run,
                event: finished,
            },
        );
    }

    fn set_status(&self, inner: &mut Inner, status: SessionStatus) {
        if inner.status != status {
            inner.status = status;
            self.publish(inner, Update::Status(status));
        }
    }

    fn publish(&self, inner: &mut Inner, update: Update) {
        let seq = inner.next_seq;
        inner.next_seq += 1;
        if inner.kept.len() == KEPT_UPDATES {
            inner.kept.pop_front();
        }
        inner.kept.push_back(Numbered {
            seq,
            update: Arc::new(update),
        });
        self.wake.notify_waiters();
    }
}

/// Reads a live session's updates in order, from a sequence number on.
#[derive(Debug, Clone)]
pub struct Reader {
    live: Arc<LiveSession>,
    /// The last sequence number this reader has seen.
    after: u64,
}

impl Reader {
    /// The last sequence number this reader has seen.
    pub fn position(&self) -> u64 {
        self.after
    }

    /// The next update, waiting for it; `Err` when it is no longer kept (the
    /// reader then goes on from the oldest kept one).
    pub async fn next(&mut self) -> Result<Numbered, Lagged> {
        let live = self.live.clone();
        loop {
            let woken = live.wake.notified();
            if let Some(found) = self.try_next() {
                return found;
            }
            woken.await;
        }
    }

    /// The next update if there is one now.
    pub fn try_next(&mut self) -> Option<Result<Numbered, Lagged>> {
        let inner = self.live.lock();
        let oldest = inner.kept.front()?.seq;
        let wanted = self.after + 1;
        if wanted < oldest {
            let lagged = Lagged {
                after: self.after,
                resumes_at: oldest,
            };
            self.after = oldest - 1;
            return Some(Err(lagged));
        }
        let index = usize::try_from(wanted - oldest).ok()?;
        let found = inner.kept.get(index)?.clone();
        self.after = found.seq;
        Some(Ok(found))
    }

    /// Reads until the end of run number `run` and returns its last event
    /// ([`Event::RunFinished`]'s summary); every update read on the way is
    /// given to `each`. `Err` when the reader fell behind on the way.
    pub async fn until_finished(
        &mut self,
        run: u64,
        mut each: impl FnMut(&Numbered),
    ) -> Result<gyre_protocol::RunSummary, Lagged> {
        loop {
            let numbered = self.next().await?;
            each(&numbered);
            if let Update::Event {
                run: of,
                event: Event::RunFinished(summary),
            } = numbered.update.as_ref()
                && *of == run
            {
                return Ok(summary.clone());
            }
        }
    }
}
