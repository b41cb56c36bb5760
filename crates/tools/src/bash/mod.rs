//! `bash`: run a shell command in the session's working directory, in the
//! foreground or as a background job.
//!
//! Invariants:
//! - A foreground command's whole process group is killed however the call
//!   ends (see [`process`]); a background job's when it is killed, when the
//!   session ends, or after its shell exited (see [`job`]).
//! - The working directory persists from one foreground command to the next
//!   and stays inside the workspace (see [`cwd`]); background jobs start in
//!   it but do not change it.
//! - What the model sees is bounded by the output budget: a long output
//!   keeps its first 40% and last 60% around a marker naming the file that
//!   holds all of it (when spilling is configured).
//! - Foreground commands and background jobs alike start through the
//!   session's [`Sandbox`](crate::Sandbox) (see [`crate::sandbox`]); a call
//!   the sandbox refuses never starts a process.
//! - A call is read-only (may run concurrently) only for a foreground
//!   command that [`is_read_only_command`] accepts.

mod cwd;
pub(crate) mod job;
mod lifeline;
pub(crate) mod process;
mod spill;

use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use futures::future::BoxFuture;
use gyre_protocol::Outcome;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::budget::{budget_bytes, spill_path};
use crate::readonly::is_read_only_command;
use crate::sandbox::Launch;
use crate::{ToolContext, ToolError, ToolKind, ToolOutput, TypedTool};
use job::Job;
use process::Finished;
use spill::SpillLog;

const NAME: &str = "bash";
const DEFAULT_TIMEOUT_MS: u64 = 120_000;
const MAX_TIMEOUT_MS: u64 = 600_000;
/// Room kept under the budget for the exit code and notes after the output.
const TRAILER_ROOM: usize = 1024;

const DESCRIPTION: &str = "Run a shell command with `bash -c` and return its combined stdout \
and stderr, followed by `Exit code: N` when it is not 0. The working directory persists \
between calls (`cd` works) and starts at the workspace root; it cannot leave the workspace. \
No stdin: interactive commands fail. Default timeout 120000 ms (max 600000 via `timeout_ms`); \
on timeout the command and everything it started are killed. Long output keeps its beginning \
and end, and the whole output is saved to a file the result names. Processes the command \
puts in the background with `&` are killed when it ends; for servers and watchers use \
`run_in_background: true`, then `bash_output` to read the job's output and `kill_shell` to \
stop it. Use read, grep, glob and ls rather than cat, grep, find and ls commands.";

#[derive(Deserialize, JsonSchema)]
pub struct BashArgs {
    /// The command line to run.
    command: String,
    /// Timeout in milliseconds (default 120000, max 600000); not for background jobs.
    timeout_ms: Option<u64>,
    /// Start the command as a background job and return its id at once.
    #[serde(default)]
    run_in_background: bool,
    /// A few words saying what the command does, for display.
    description: Option<String>,
}

/// The `bash` tool.
#[derive(Debug)]
pub struct BashTool {
    shell: PathBuf,
}

impl BashTool {
    /// Looks for `bash` on `PATH` once; without it, commands run with `sh`.
    pub fn new() -> Self {
        BashTool {
            shell: find_shell(),
        }
    }

    /// The shell commands run with.
    pub fn shell(&self) -> &Path {
        &self.shell
    }
}

impl Default for BashTool {
    fn default() -> Self {
        Self::new()
    }
}

impl TypedTool for BashTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = BashArgs;

    fn kind(&self, arguments: &Value) -> ToolKind {
        let background = arguments
            .get("run_in_background")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        match arguments.get("command").and_then(Value::as_str) {
            Some(command) if !background && is_read_only_command(command) => ToolKind::ReadOnly,
            _ => ToolKind::Mutating,
        }
    }

    fn call<'a>(
        &'a self,
        args: BashArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            if args.command.trim().is_empty() {
                return Err(ToolError::invalid(NAME, "command is empty"));
            }
            if ctx.cancel.is_cancelled() {
                return Err(ToolError::Cancelled {
                    output: String::new(),
                });
            }
            let title = title_of(&args);
            if args.run_in_background {
                return self.start_job(&args.command, title, ctx).await;
            }
            let timeout_ms = match args.timeout_ms {
                None | Some(0) => DEFAULT_TIMEOUT_MS,
                Some(ms) => ms.min(MAX_TIMEOUT_MS),
            };
            let (dir, start_note) = cwd::start_dir(ctx).await;
            let probe = cwd::CwdProbe::new().await?;
            let launch = ctx
                .sandbox
                .launch(&ctx.workspace, Some(probe.path()))
                .await?;
            let script = probe.script(&args.command)?;
            let started = process::start(&self.shell, &script, &dir, &launch)?;
            let pgid = started.pgid;
            if let Some(pgid) = pgid
                && let Some(ticks) = crate::process_start_ticks(pgid)
            {
                ctx.report_process(crate::ProcessEvent::Started {
                    pgid,
                    started: ticks,
                })
                .await;
            }
            // Leave room for the exit line and notes, so that the result
            // stays within the budget and is not cut (and spilled) again.
            let budget = budget_bytes(&ctx.output);
            let kept = budget.saturating_sub(TRAILER_ROOM).max(budget / 2);
            let spill = SpillLog::new(spill_path(
                &ctx.output,
                &ctx.session_id,
                &ctx.call_id,
                "log",
            ));
            let run = process::run_foreground(started, timeout_ms, kept, spill, ctx).await;
            if let Some(pgid) = pgid {
                ctx.report_process(crate::ProcessEvent::Ended { pgid })
                    .await;
            }
            let run = run?;
            let end_note = cwd::settle(ctx, &dir, probe.read().await).await;
            // A denial the model cannot explain would be retried blindly.
            let sandbox_note = match launch {
                Launch::Sandboxed { .. } if looks_denied(&run.output) => {
                    Some(ctx.sandbox.denial_note())
                }
                _ => None,
            };
            let notes: Vec<String> = start_note
                .into_iter()
                .chain(end_note)
                .chain(sandbox_note)
                .collect();
            Ok(render(title, run, &notes))
        })
    }
}

impl BashTool {
    async fn start_job(
        &self,
        command: &str,
        title: String,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let (dir, start_note) = cwd::start_dir(ctx).await;
        let launch = ctx.sandbox.launch(&ctx.workspace, None).await?;
        let shell = &ctx.session.shell;
        let id = shell.next_id()?;
        let spill = spill_path(&ctx.output, &ctx.session_id, &id, "log");
        let job = Job::start(id.clone(), &self.shell, command, &dir, &launch, spill)?;
        shell.insert(job);
        let mut text = format!(
            "Started in the background as {id}; read its output with bash_output \
             (shell_id \"{id}\") and stop it with kill_shell."
        );
        if let Some(note) = start_note {
            text.push('\n');
            text.push_str(&note);
        }
        Ok(ToolOutput::text(format!("{title} (background {id})"), text))
    }
}

fn find_shell() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .map(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("bash"))
                .find(|candidate| candidate.is_file())
        })
        .unwrap_or_default();
    on_path.unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

fn title_of(args: &BashArgs) -> String {
    let what = args
        .description
        .as_deref()
        .filter(|d| !d.trim().is_empty())
        .unwrap_or(&args.command);
    let first_line = what.lines().next().unwrap_or_default().trim();
    let short = crate::truncate::truncate_line(first_line, 80);
    format!("bash: {short}")
}

/// The output, then the exit code when not 0, then `notes`.
fn render(title: String, run: Finished, notes: &[String]) -> ToolOutput {
    let mut text = run.output;
    let code_note = match (run.status.code(), exit_signal(&run.status)) {
        (Some(0), _) => None,
        (Some(code), _) => Some(format!("Exit code: {code}")),
        (None, Some(signal)) => Some(format!("Killed by signal {signal}")),
        (None, None) => Some("Exit status unknown".to_owned()),
    };
    if text.is_empty() && code_note.is_none() {
        text.push_str("(no output)");
    }
    // The title says how the command ended and its last words, e.g.
    // `bash: Run the tests (exit 0): all tests passed`.
    let last_line = text.lines().rev().map(str::trim).find(|l| !l.is_empty());
    let mut output_title = match (run.status.code(), last_line) {
        (Some(0), Some(line)) => {
            format!(
                "{title} (exit 0): {}",
                crate::truncate::truncate_line(line, 60)
            )
        }
        (Some(0), None) => format!("{title} (exit 0)"),
        _ => title,
    };
    let outcome = match code_note {
        None => Outcome::Success,
        Some(note) => {
            push_line(&mut text, &note);
            output_title.push_str(&format!(" ({})", note.to_lowercase()));
            Outcome::Error
        }
    };
    for note in notes {
        push_line(&mut text, note);
    }
    let mut out = ToolOutput::text(output_title, text);
    out.outcome = outcome;
    out
}

/// Whether a command's output shows the errors a sandbox denial gives.
fn looks_denied(output: &str) -> bool {
    ["Permission denied", "Operation not permitted"]
        .iter()
        .any(|error| output.contains(error))
}

fn push_line(text: &mut String, line: &str) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(line);
}

fn exit_signal(status: &ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}
