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
//! - Sibling abort (seed 002): read-only calls between two mutating calls form
//!   a concurrent batch. When a call of the batch fails (per [`SiblingAbort`]:
//!   a `bash` call by default), the batch's other calls that are still
//!   running or waiting are cancelled and reported as cancelled because of
//!   it; calls that already finished keep their results. A mutating call is
//!   never part of a batch: it runs alone, and its failure cancels nothing.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use gyre_protocol::{Outcome, ToolCall, ToolResult};
use gyre_tools::{ToolContext, ToolError, ToolKind, ToolOutput};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::approval::Approver;
use crate::hooks::{HookEvent, Hooks, PreToolUse};
use crate::permissions::Decision;
use crate::redact::Redactor;

/// How long a cancelled call may take to stop before it is reported as interrupted.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Which failing calls cancel the other calls of their concurrent batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SiblingAbort {
    /// A failing `bash` call (a shell error usually means later steps are moot).
    #[default]
    Bash,
    /// Any failing call.
    Any,
    /// Never.
    None,
}

impl SiblingAbort {
    fn applies_to(self, tool: &str) -> bool {
        match self {
            SiblingAbort::Bash => tool == "bash",
            SiblingAbort::Any => true,
            SiblingAbort::None => false,
        }
    }
}

/// A finished call: its result and a line for display.
#[derive(Debug, Clone)]
pub struct Finished {
    pub title: String,
    pub result: ToolResult,
    ending: Ending,
}

/// How a call came to its result; sibling abort depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// The tool ran to its end and succeeded.
    Succeeded,
    /// The tool ran and failed.
    Failed,
    /// The call never ran: refused, denied.
    Refused,
    /// Cancellation stopped it before it finished.
    Stopped,
}

impl Finished {
    pub fn error(call: &ToolCall, message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            title: format!("{} refused: {}", call.name, first_line(&message)),
            result: ToolResult::text(&call.id, &call.name, message, Outcome::Error),
            ending: Ending::Refused,
        }
    }

    /// A call stopped by cancellation.
    fn stopped(call: &ToolCall, message: impl Into<String>) -> Self {
        Self {
            ending: Ending::Stopped,
            ..Self::error(call, message)
        }
    }

    fn from_run(call: &ToolCall, outcome: Result<ToolOutput, ToolError>) -> Self {
        match outcome {
            Ok(output) => Self {
                title: output.title,
                ending: match output.outcome {
                    Outcome::Success => Ending::Succeeded,
                    Outcome::Error => Ending::Failed,
                },
                result: ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: output.content,
                    is_error: output.outcome == Outcome::Error,
                    // Set with the redacted title when it is recorded.
                    title: String::new(),
                },
            },
            Err(err) => {
                let message = err.to_string();
                Self {
                    title: format!("{} failed: {}", call.name, first_line(&message)),
                    ending: match err {
                        ToolError::Cancelled { .. } => Ending::Stopped,
                        _ => Ending::Failed,
                    },
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
    /// Applied to the output before it is cut to the budget, so that
    /// neither the result nor the spilled whole output holds a secret.
    pub redactor: Arc<Redactor>,
    /// Awaited right before the tool runs (after permission): a checkpoint
    /// of the files a mutating call may change.
    pub before: Option<BeforeRun>,
    /// The PreToolUse and PostToolUse hooks, when any are configured.
    pub hooks: Option<Arc<Hooks>>,
    /// The run's hold on its session's lock, confirmed right before the tool
    /// starts (`None` for a run without one).
    pub(crate) lease: Option<Arc<crate::run::Lease>>,
}

/// Work done just before a call runs, in the call's order.
pub type BeforeRun = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// The read-only calls submitted since the last mutating one.
#[derive(Clone)]
struct Batch {
    /// Cancelled when a call of the batch fails (a child of the run's token).
    token: CancellationToken,
    /// What failed, for the cancelled siblings' results.
    cause: Arc<OnceLock<String>>,
}

impl Batch {
    fn new(run: &CancellationToken) -> Self {
        Self {
            token: run.child_token(),
            cause: Arc::new(OnceLock::new()),
        }
    }

    fn abort(&self, cause: String) {
        let _ = self.cause.set(cause);
        self.token.cancel();
    }

    /// Why the batch was aborted, when it was (and the run was not cancelled).
    fn aborted_because(&self, run: &CancellationToken) -> Option<&str> {
        if run.is_cancelled() {
            return None;
        }
        self.cause.get().map(String::as_str)
    }
}

pub struct Scheduler {
    /// Submitted calls whose results have not been taken yet, in call order.
    slots: VecDeque<(ToolCall, SharedResult)>,
    last_mutating: Option<SharedResult>,
    read_only_permits: Arc<Semaphore>,
    sibling_abort: SiblingAbort,
    batch: Batch,
    approver: Approver,
    cancel: CancellationToken,
}

impl Scheduler {
    pub fn new(
        read_only_limit: usize,
        sibling_abort: SiblingAbort,
        approver: Approver,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            slots: VecDeque::new(),
            last_mutating: None,
            read_only_permits: Arc::new(Semaphore::new(read_only_limit.max(1))),
            sibling_abort,
            batch: Batch::new(&cancel),
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
    pub fn submit(&mut self, mut runnable: Runnable) {
        let call = runnable.call.clone();
        let kind = runnable.kind;
        let prerequisites: Vec<SharedResult> = match kind {
            ToolKind::Mutating => self.slots.iter().map(|(_, r)| r.clone()).collect(),
            ToolKind::ReadOnly => self.last_mutating.iter().cloned().collect(),
        };
        // A mutating call ends the batch before it; it belongs to none.
        let batch = match kind {
            ToolKind::ReadOnly => {
                runnable.ctx.cancel = self.batch.token.child_token();
                Some(self.batch.clone())
            }
            ToolKind::Mutating => {
                self.batch = Batch::new(&self.cancel);
                None
            }
        };
        let aborts_siblings = self.sibling_abort.applies_to(&call.name);
        let run_cancel = self.cancel.clone();
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
            let call = runnable.call.clone();
            let finished = execute(runnable, approver).await;
            let Some(batch) = batch else {
                return finished;
            };
            if finished.ending == Ending::Stopped
                && let Some(cause) = batch.aborted_because(&run_cancel)
            {
                return Finished::error(
                    &call,
                    format!("cancelled: {cause}, so this call in the same batch was stopped"),
                );
            }
            if finished.ending == Ending::Failed && aborts_siblings {
                batch.abort(format!("`{}` ({}) failed", call.name, call.id));
            }
            finished
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
            _ = given_up => Some(Arc::new(Finished::stopped(
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
        redactor,
        before,
        hooks,
        lease,
        ..
    } = runnable;
    if ctx.cancel.is_cancelled() {
        return Finished::stopped(
            &call,
            "interrupted: the run was cancelled before this call started",
        );
    }
    let (decision, mut arguments) =
        match before_hooks(hooks.as_deref(), &call, decision, arguments, &ctx).await {
            Ok(decided) => decided,
            Err(message) => return Finished::error(&call, message),
        };
    match decision {
        Decision::Allow => {}
        Decision::Deny(reason) => {
            return Finished::error(
                &call,
                format!("{}{reason}", crate::permissions::DENIED_PREFIX),
            );
        }
        Decision::Ask(question) => match approver
            .ask(&call, &arguments, &question, &ctx.cancel)
            .await
        {
            Ok(None) => {}
            // A permission prompt may change the input, as a hook may.
            Ok(Some(updated)) => arguments = updated,
            Err(reason) => {
                return Finished::error(
                    &call,
                    format!("{}{reason}", crate::permissions::DENIED_PREFIX),
                );
            }
        },
    }
    if let Some(before) = before {
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => {
                return Finished::stopped(
                    &call,
                    "interrupted: the run was cancelled before this call started",
                );
            }
            _ = before => {}
        }
    }
    // Fencing: a run that lost its session (paused past its lease and taken
    // over) starts nothing more; its result is never stored either.
    if let Some(lease) = lease
        && !lease.confirm().await
    {
        return Finished::stopped(&call, "not run: the session was taken over by another run");
    }
    // A tool stops on its own when cancelled and reports what it had done; one
    // that does not is dropped after the grace period (dropping a tool's future
    // kills what it started: tools guarantee it).
    let cancel = ctx.cancel.clone();
    let given_up = async move {
        cancel.cancelled().await;
        tokio::time::sleep(CANCEL_GRACE).await;
    };
    let input_for_hooks = hooks.is_some().then(|| arguments.clone());
    let run = async {
        let mut outcome = tool.run(arguments, &ctx).await;
        if let (Some(hooks), Some(input), Ok(output)) =
            (hooks.as_deref(), input_for_hooks.as_ref(), outcome.as_mut())
        {
            after_hooks(hooks, &call, input, output, &ctx).await;
        }
        // No result larger than the budget enters the history (the whole
        // output is spilled to a file the cut result names).
        if let Ok(output) = &mut outcome {
            let mut content = std::mem::take(&mut output.content);
            redactor.redact_content(&mut content);
            output.content =
                gyre_tools::enforce_budget(content, &ctx.output, &ctx.session_id, &ctx.call_id)
                    .await;
        }
        outcome
    };
    tokio::select! {
        biased;
        outcome = run => Finished::from_run(&call, outcome),
        _ = given_up => Finished::stopped(
            &call,
            "interrupted: the run was cancelled while this call ran; check the workspace",
        ),
    }
}

/// The PreToolUse hooks' say on a call: the decision and input it runs
/// with, or the refusal the model sees. A deny rule stays a deny.
async fn before_hooks(
    hooks: Option<&Hooks>,
    call: &ToolCall,
    decision: Decision,
    arguments: serde_json::Value,
    ctx: &ToolContext,
) -> Result<(Decision, serde_json::Value), String> {
    let Some(hooks) = hooks.filter(|h| h.has(HookEvent::PreToolUse, Some(&call.name))) else {
        return Ok((decision, arguments));
    };
    let said = hooks
        .pre_tool_use(&ctx.session_id, &call.name, &arguments, &ctx.cancel)
        .await;
    Ok(match (said, decision) {
        (PreToolUse::Deny(reason), _) => {
            return Err(format!("blocked by a PreToolUse hook: {reason}"));
        }
        (_, Decision::Deny(reason)) => (Decision::Deny(reason), arguments),
        (PreToolUse::Continue, decision) => (decision, arguments),
        (PreToolUse::Ask(question), _) => (
            Decision::Ask(format!("a PreToolUse hook asks: {question}")),
            arguments,
        ),
        (PreToolUse::Allow { updated_input }, _) => {
            (Decision::Allow, updated_input.unwrap_or(arguments))
        }
    })
}

/// The PostToolUse hooks' feedback, added to the result the model sees.
async fn after_hooks(
    hooks: &Hooks,
    call: &ToolCall,
    input: &serde_json::Value,
    output: &mut ToolOutput,
    ctx: &ToolContext,
) {
    if !hooks.has(HookEvent::PostToolUse, Some(&call.name)) {
        return;
    }
    let response: String = output
        .content
        .iter()
        .filter_map(|c| match c {
            gyre_protocol::ToolResultContent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    if let Some(feedback) = hooks
        .post_tool_use(&ctx.session_id, &call.name, input, &response, &ctx.cancel)
        .await
    {
        output.content.push(gyre_protocol::ToolResultContent::Text {
            text: format!(
                "\n<system-reminder>A PostToolUse hook says: {feedback}</system-reminder>"
            ),
        });
    }
}
