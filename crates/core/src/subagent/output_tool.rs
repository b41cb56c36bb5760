//! `task_output`: the state of a background task, or of any subagent this
//! session started (stored ones included), optionally waiting for its end.
//!
//! Invariant: reading a finished task's result here counts as delivering
//! it, so the model is not notified of it a second time.

use std::time::Duration;

use futures::future::BoxFuture;
use gyre_tools::{ToolContext, ToolError, ToolKind, ToolOutput, Typed, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::LoopScope;
use super::background::{TaskInfo, TaskState, status_word};
use crate::state::QueryState;

const NAME: &str = "task_output";
/// How long `block` waits by default, and at most.
const DEFAULT_WAIT_MS: u64 = 30_000;
const MAX_WAIT_MS: u64 = 600_000;

/// Arguments of `task_output`.
#[derive(Deserialize, JsonSchema)]
pub struct TaskOutputArgs {
    /// The id a `task` call returned.
    task_id: String,
    /// Wait until the task ends (up to `timeout_ms`). Default false.
    block: Option<bool>,
    /// How long `block` waits, in milliseconds (default 30000, at most 600000).
    timeout_ms: Option<u64>,
}

/// The `task_output` tool.
#[derive(Debug, Default)]
pub struct TaskOutputTool;

impl TaskOutputTool {
    pub fn new() -> Typed<TaskOutputTool> {
        Typed::new(TaskOutputTool)
    }
}

impl TypedTool for TaskOutputTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = "Read the state of a subagent task by its id: running or \
        how it ended, and its result. `block: true` waits for a running task to end (up to \
        `timeout_ms`).";
    type Args = TaskOutputArgs;

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::ReadOnly
    }

    fn call<'a>(
        &'a self,
        args: TaskOutputArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let scope = LoopScope::of(ctx)?;
            let id = args.task_id.trim();
            if args.block == Some(true) && scope.tasks.is_running(id) {
                let wait = args.timeout_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS);
                let ended = scope.tasks.wait_until_ended(id);
                tokio::select! {
                    biased;
                    _ = ctx.cancel.cancelled() => {
                        return Err(ToolError::Cancelled { output: String::new() });
                    }
                    _ = tokio::time::timeout(Duration::from_millis(wait), ended) => {}
                }
            }
            if let Some(info) = scope.tasks.get(id) {
                if matches!(info.state, TaskState::Finished(_)) {
                    scope.tasks.mark_delivered(id);
                }
                return Ok(render(&info));
            }
            stored(scope, ctx, id).await
        })
    }
}

fn render(info: &TaskInfo) -> ToolOutput {
    let (status, body) = match &info.state {
        TaskState::Running => ("running".to_string(), String::new()),
        TaskState::Interrupted => (
            "interrupted".to_string(),
            format!("\n{}", crate::run::interrupted_text(&info.id)),
        ),
        TaskState::Finished(summary) => {
            let mut body = format!("\nturns: {}\n", summary.num_turns);
            if let Some(error) = &summary.error {
                body.push_str(&format!("error: {}\n", error.message));
            }
            body.push_str(&format!("result:\n{}", summary.final_text.trim()));
            (status_word(summary.reason).to_string(), body)
        }
    };
    ToolOutput::text(
        format!("task_output {}: {status}", info.id),
        format!(
            "task {} ({} agent): {status}\ndescription: {}{body}",
            info.id, info.agent, info.description
        ),
    )
}

/// A subagent of this session that is not in memory (started by an earlier
/// process): its stored state says how its last run ended.
async fn stored(scope: &LoopScope, ctx: &ToolContext, id: &str) -> Result<ToolOutput, ToolError> {
    let store = scope.agent.store.as_ref();
    let unknown = || ToolError::Failed(format!("there is no task {id} started by this session"));
    let meta = store
        .get_session(id)
        .await
        .map_err(|e| ToolError::Failed(format!("could not read task {id}: {e}")))?
        .ok_or_else(unknown)?;
    if meta.parent_id.as_deref() != Some(ctx.session_id.as_str()) {
        return Err(unknown());
    }
    let state: QueryState = store
        .load_state(id)
        .await
        .map_err(|e| ToolError::Failed(format!("could not read task {id}: {e}")))?
        .and_then(|value| serde_json::from_value(value).ok())
        .unwrap_or_default();
    let info = TaskInfo {
        id: id.to_string(),
        agent: state.agent.clone().unwrap_or_else(|| "build".into()),
        description: meta.title,
        state: match state.runs.last() {
            Some(run) => TaskState::Finished(run.summary.clone()),
            // Stored but never finished: its process ended mid-run.
            None => {
                return Ok(ToolOutput::text(
                    format!("task_output {id}: interrupted"),
                    format!(
                        "task {id}: interrupted (the process running it ended before it \
                         finished); pass the id as `resume` to `task` to continue it"
                    ),
                ));
            }
        },
    };
    Ok(render(&info))
}
