//! `bash_output`: read what a background job printed since the last read.
//!
//! Invariants: each read returns only new output (the job's cursor moves
//! past it, also past lines a `filter` left out) and always the job's status;
//! what it returns is cut to the output budget, naming the job's spill file;
//! output the job's ring dropped before it was read is reported as dropped.
//! Waiting (`wait_ms`) ends at the first new output, the job's end, or
//! cancellation.

use std::time::Duration;

use futures::future::BoxFuture;
use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::budget::{budget_bytes, cut_to};
use crate::{ToolContext, ToolError, ToolKind, ToolOutput, TypedTool};

const NAME: &str = "bash_output";
const MAX_WAIT_MS: u64 = 600_000;

const DESCRIPTION: &str = "Read the output a background job (started with bash \
`run_in_background`) printed since the last read, and whether it still runs. `filter` keeps \
only the lines matching a regular expression (the others are discarded). `wait_ms` waits up \
to that long for new output or the job's end when there is none yet (default 0: return at \
once); prefer it to `sleep` commands.";

#[derive(Deserialize, JsonSchema)]
pub struct BashOutputArgs {
    /// The job's id, e.g. `shell_1`.
    shell_id: String,
    /// A regular expression; only matching lines are returned.
    filter: Option<String>,
    /// Milliseconds to wait for new output when there is none (default 0, max 600000).
    wait_ms: Option<u64>,
}

/// The `bash_output` tool.
#[derive(Debug, Default)]
pub struct BashOutputTool;

impl TypedTool for BashOutputTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = BashOutputArgs;

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::ReadOnly
    }

    fn call<'a>(
        &'a self,
        args: BashOutputArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let filter = args
                .filter
                .as_deref()
                .map(Regex::new)
                .transpose()
                .map_err(|e| ToolError::invalid(NAME, format!("invalid filter: {e}")))?;
            let job = ctx.session.shell.job(&args.shell_id)?;
            let wait = Duration::from_millis(args.wait_ms.unwrap_or(0).min(MAX_WAIT_MS));
            if !wait.is_zero() {
                tokio::select! {
                    () = ctx.cancel.cancelled() => {
                        return Err(ToolError::Cancelled { output: String::new() });
                    }
                    () = job.wait_for_news(wait) => {}
                }
            }
            let new = job.read_new();
            let mut output = String::from_utf8_lossy(&new.bytes).into_owned();
            if let Some(filter) = &filter {
                output = output
                    .lines()
                    .filter(|line| filter.is_match(line))
                    .flat_map(|line| [line, "\n"])
                    .collect();
            }
            let lines = output.lines().count();
            let mut text = format!("{}: {} ({})\n", job.id, new.status, job.command);
            if new.dropped > 0 {
                text.push_str(&format!(
                    "[... {} earlier bytes were dropped before they were read{} ...]\n",
                    new.dropped, new.whereabouts
                ));
            }
            if output.is_empty() {
                text.push_str("(no new output)\n");
            } else {
                text.push_str(&output);
            }
            let text = cut_to(&text, budget_bytes(&ctx.output), &new.whereabouts);
            Ok(ToolOutput::text(
                format!("bash_output {} ({}, {lines} new lines)", job.id, new.status),
                text,
            ))
        })
    }
}
