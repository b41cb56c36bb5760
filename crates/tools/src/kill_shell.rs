//! `kill_shell`: stop a background job.
//!
//! Invariant: the job's whole process group is sent SIGKILL, and the call
//! returns once the job is reaped (or after a bounded wait), with its status.
//! Killing a job that already ended is not an error: the result says how it
//! ended.

use std::time::Duration;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::{JobStatus, ToolContext, ToolError, ToolKind, ToolOutput, TypedTool};

const NAME: &str = "kill_shell";
/// A SIGKILLed group is reaped within this time unless the kernel is stuck.
const REAP_WAIT: Duration = Duration::from_secs(5);

const DESCRIPTION: &str = "Stop a background job started with bash `run_in_background`: \
the job and every process it started are killed. Its output so far can still be read with \
bash_output.";

#[derive(Deserialize, JsonSchema)]
pub struct KillShellArgs {
    /// The job's id, e.g. `shell_1`.
    shell_id: String,
}

/// The `kill_shell` tool.
#[derive(Debug, Default)]
pub struct KillShellTool;

impl TypedTool for KillShellTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = KillShellArgs;

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::Mutating
    }

    fn call<'a>(
        &'a self,
        args: KillShellArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let job = ctx.session.shell.job(&args.shell_id)?;
            let before = job.status();
            if !before.is_running() {
                return Ok(ToolOutput::text(
                    format!("kill_shell {}: already {before}", job.id),
                    format!("{} is not running (status: {before}).", job.id),
                ));
            }
            job.kill();
            let after = job.wait_for_end(REAP_WAIT).await;
            let text = match after {
                JobStatus::Running => format!(
                    "{} was sent SIGKILL but has not ended yet; check with bash_output.",
                    job.id
                ),
                JobStatus::Killed => format!("{} was killed.", job.id),
                ended => format!("{} ended before it could be killed: {ended}.", job.id),
            };
            Ok(ToolOutput::text(
                format!("kill_shell {}: {after}", job.id),
                text,
            ))
        })
    }
}
