//! The tool scheduler: starts each call as soon as the model has finished
//! writing it, and hands results back in call order.
//!
//! Invariants:
//! - A call is started (spawned) the moment it is submitted, while the model may
//!   still be streaming later calls: tool time hides behind model time.
//! - Read-only calls run concurrently, at most `read_only_limit` at once; a
//!   mutating call starts only after every earlier call has finished, and every
//!   later call waits for it. So edits are strictly ordered and a read after an
//!   edit sees the edit.
//! - [`Scheduler::results`] yields results in call order, whatever order they
//!   finish in. Every submitted call yields exactly one result: refusals,
//!   failures, panics and cancellations become error results, never gaps.
//! - Cancelling the run's token cancels every call; a call that ignores its
//!   token is given up on after [`CANCEL_GRACE`] and reported as interrupted.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use gyre_protocol::{Outcome, ToolCall, ToolResult};
use gyre_tools::{ToolContext, ToolError, ToolKind, ToolOutput};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::approval::Approver;
use crate::permissions::Decision;

/// How long a cancelled call may take to stop before it is reported as interrupted.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// A finished call: its result and a line for display.
#[derive(Debug, Clone)]
pub struct Finished {
    pub title: String,
    pub result: ToolResult,
}

impl Finished {
    pub fn error(call: &ToolCall, message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            title: format!("{} refused: {}", call.name, first_line(&message)),
            result: ToolResult::text(&call.id, &call.name, message, Outcome::Error),
        }
    }

    fn from_run(call: &ToolCall, outcome: Result<ToolOutput, ToolError>) -> Self {
        match outcome {
            Ok(output) => Self {
                title: output.title,
                result: ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: output.content,
                    is_error: output.outcome == Outcome::Error,
                },
            },
            Err(err) => {
                let message = err.to_string();
                Self {
                    title: format!("{} failed: {}", call.name, first_line(&message)),
                    result: ToolResult::text(&call.id, &call.name, message, Outcome::Error),
                }
            }
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

type SharedResult = Shared<BoxFuture<'static, Arc<Finished>>>;

/// A call ready to run: the tool, its parsed arguments and its context.
pub struct Runnable {
    pub call: ToolCall,
    pub tool: Arc<dyn gyre_tools::Tool>,
    pub arguments: serde_json::Value,
    pub kind: ToolKind,
    pub decision: Decision,
    pub ctx: ToolContext,
}

pub struct Scheduler {
    /// Submitted calls whose results have not been taken yet, in call order.
    slots: VecDeque<(ToolCall, SharedResult)>,
    last_mutating: Option<SharedResult>,
    read_only_permits: Arc<Semaphore>,
    approver: Approver,
    cancel: CancellationToken,
}

impl Scheduler {
    pub fn new(read_only_limit: usize, approver: Approver, cancel: CancellationToken) -> Self {
        Self {
            slots: VecDeque::new(),
            last_mutating: None,
            read_only_permits: Arc::new(Semaphore::new(read_only_limit.max(1))),
            approver,
            cancel,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Records a call that will not run, with the error result the model sees.
    pub fn refuse(&mut self, call: ToolCall, message: String) {
        let finished = Arc::new(Finished::error(&call, message));
        let ready = futures::future::ready(finished).boxed().shared();
        self.slots.push_back((call, ready));
    }

    /// Starts a call (after the calls it must wait for).
    pub fn submit(&mut self, runnable: Runnable) {
        let call = runnable.call.clone();
        let kind = runnable.kind;
        let prerequisites: Vec<SharedResult> = match kind {
            ToolKind::Mutating => self.slots.iter().map(|(_, r)| r.clone()).collect(),
            ToolKind::ReadOnly => self.last_mutating.iter().cloned().collect(),
        };
        let permits = self.read_only_permits.clone();
        let approver = self.approver.clone();
        let task = tokio::spawn(async move {
            for earlier in prerequisites {
                earlier.await;
            }
            let _permit = match kind {
                ToolKind::ReadOnly => permits.acquire_owned().await.ok(),
                ToolKind::Mutating => None,
            };
            execute(runnable, approver).await
        });
        let call_for_panic = call.clone();
        let result = async move {
            match task.await {
                Ok(finished) => Arc::new(finished),
                Err(join_error) => Arc::new(Finished::error(
                    &call_for_panic,
                    format!(
                        "the tool crashed ({join_error}); the call had no effect that gyre knows of"
                    ),
                )),
            }
        }
        .boxed()
        .shared();
        if kind == ToolKind::Mutating {
            self.last_mutating = Some(result.clone());
        }
        self.slots.push_back((call, result));
    }

    /// The next result in call order. Waits for the call; after the run is
    /// cancelled, waits a bounded time (a safety net: calls already give up
    /// after [`CANCEL_GRACE`]).
    pub async fn next_in_order(&mut self) -> Option<Arc<Finished>> {
        let (call, result) = self.slots.pop_front()?;
        let cancel = self.cancel.clone();
        let given_up = async move {
            cancel.cancelled().await;
            tokio::time::sleep(CANCEL_GRACE * 2).await;
        };
        tokio::select! {
            biased;
            finished = result => Some(finished),
            _ = given_up => Some(Arc::new(Finished::error(
                &call,
                "interrupted: the run was cancelled before this call finished; check the workspace",
            ))),
        }
    }
}

async fn execute(runnable: Runnable, approver: Approver) -> Finished {
    let Runnable {
        call,
        tool,
        arguments,
        decision,
        ctx,
        ..
    } = runnable;
    if ctx.cancel.is_cancelled() {
        return Finished::error(
            &call,
            "interrupted: the run was cancelled before this call started",
        );
    }
    match decision {
        Decision::Allow => {}
        Decision::Deny(reason) => {
            return Finished::error(&call, format!("permission denied: {reason}"));
        }
        Decision::Ask(question) => {
            if let Err(reason) = approver.ask(&call, &question, &ctx.cancel).await {
                return Finished::error(&call, format!("permission denied: {reason}"));
            }
        }
    }
    // A tool stops on its own when cancelled and reports what it had done; one
    // that does not is dropped after the grace period (dropping a tool's future
    // kills what it started: tools guarantee it).
    let cancel = ctx.cancel.clone();
    let given_up = async move {
        cancel.cancelled().await;
        tokio::time::sleep(CANCEL_GRACE).await;
    };
    tokio::select! {
        biased;
        outcome = tool.run(arguments, &ctx) => Finished::from_run(&call, outcome),
        _ = given_up => Finished::error(
            &call,
            "interrupted: the run was cancelled while this call ran; check the workspace",
        ),
    }
}
