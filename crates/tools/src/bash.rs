//! `bash`: run a shell command in the workspace root.
//!
//! Invariants:
//! - The command runs in its own process group; whatever way the call ends
//!   (exit, timeout, cancellation, or the future being dropped), the whole
//!   group is sent SIGKILL, so no process it started outlives the call.
//! - stdout and stderr share one pipe, so their lines keep the order in which
//!   they were written. The pipe is read asynchronously; memory is bounded by
//!   [`HeadTail`], which keeps the first and the last bytes.
//! - stdin is null and the provider API keys are removed from the child's
//!   environment.
//!
//! Trade-offs: background jobs (`cmd &`) are killed with the group when the
//! shell exits — after a short grace period to collect their last output —
//! since nothing would ever reap them. The final kill comes just after the
//! shell is reaped; the group id could in principle be reused in between, but
//! only by a new group leader in the same microseconds, which pid allocation
//! makes practically impossible.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use futures::future::BoxFuture;
use gyre_protocol::Outcome;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::time::Instant;

use crate::truncate::{DEFAULT_MAX_BYTES, HeadTail};
use crate::{ToolContext, ToolError, ToolKind, ToolOutput, TypedTool};

const NAME: &str = "bash";
const DEFAULT_TIMEOUT_MS: u64 = 120_000;
const MAX_TIMEOUT_MS: u64 = 600_000;
/// How long output is still collected after the shell exited while a
/// background process keeps the pipe open.
const EXIT_GRACE: Duration = Duration::from_millis(250);
/// How long output already in the pipe is collected after a kill.
const KILL_DRAIN: Duration = Duration::from_millis(200);
/// A SIGKILLed process is reaped within this time unless the kernel is stuck.
const REAP_WAIT: Duration = Duration::from_secs(5);
const READ_CHUNK: usize = 8 * 1024;

/// Variables the child must not see: the model could print them.
const SECRET_VARIABLES: [&str; 4] = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
];

/// Variables that keep common programs from waiting for a terminal.
const NON_INTERACTIVE: [(&str, &str); 3] = [
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

const DESCRIPTION: &str = "Run a shell command with `bash -c` in the workspace root and return \
its combined stdout and stderr, followed by `Exit code: N` when it is not 0. No stdin: \
interactive commands fail. Default timeout 120000 ms (max 600000 via `timeout_ms`); on timeout \
the command and everything it started are killed. Output over 30000 bytes keeps its beginning \
and end. Background jobs are killed when the command ends. Use read, grep, glob and ls \
rather than cat, grep, find and ls commands.";

#[derive(Deserialize, JsonSchema)]
pub struct BashArgs {
    /// The command line to run.
    command: String,
    /// Timeout in milliseconds (default 120000, max 600000).
    timeout_ms: Option<u64>,
    /// Not supported yet; must be false or absent.
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

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::Mutating
    }

    fn call<'a>(
        &'a self,
        args: BashArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            if args.run_in_background {
                return Err(ToolError::invalid(
                    NAME,
                    "run_in_background is not supported yet; run the command in the \
                     foreground (timeout_ms can be up to 600000)",
                ));
            }
            if args.command.trim().is_empty() {
                return Err(ToolError::invalid(NAME, "command is empty"));
            }
            let timeout_ms = match args.timeout_ms {
                None | Some(0) => DEFAULT_TIMEOUT_MS,
                Some(ms) => ms.min(MAX_TIMEOUT_MS),
            };
            let title = title_of(&args);
            let run = run_command(&self.shell, &args.command, timeout_ms, ctx).await?;
            Ok(render(title, run))
        })
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

/// What a finished command left.
struct Finished {
    status: ExitStatus,
    output: String,
}

fn render(title: String, run: Finished) -> ToolOutput {
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
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&note);
            output_title.push_str(&format!(" ({})", note.to_lowercase()));
            Outcome::Error
        }
    };
    let mut out = ToolOutput::text(output_title, text);
    out.outcome = outcome;
    out
}

fn exit_signal(status: &ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

/// Runs `command` to its end, its timeout, or the cancellation of `ctx`.
async fn run_command(
    shell: &Path,
    command: &str,
    timeout_ms: u64,
    ctx: &ToolContext,
) -> Result<Finished, ToolError> {
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled {
            output: String::new(),
        });
    }
    let spawn_failed = |e: std::io::Error| {
        ToolError::Failed(format!("could not start `{}`: {e}", shell.display()))
    };
    let (reader, writer) = std::io::pipe().map_err(spawn_failed)?;
    let mut child = {
        let writer_for_stderr = writer.try_clone().map_err(spawn_failed)?;
        let mut cmd = tokio::process::Command::new(shell);
        cmd.arg("-c")
            .arg(command)
            .current_dir(ctx.workspace.root())
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(writer_for_stderr)
            .process_group(0)
            .kill_on_drop(true);
        for key in SECRET_VARIABLES {
            cmd.env_remove(key);
        }
        cmd.envs(NON_INTERACTIVE);
        cmd.spawn().map_err(spawn_failed)?
        // `cmd` drops here with our copies of the write end, so the pipe
        // reaches end-of-file once every process of the command is gone.
    };
    let mut group = GroupGuard::new(child.id());
    let mut pipe = pipe::Receiver::from_owned_fd(OwnedFd::from(reader)).map_err(spawn_failed)?;

    let mut output = Collector::new();
    let mut chunk = vec![0u8; READ_CHUNK];
    let mut status: Option<ExitStatus> = None;
    let mut pipe_open = true;
    let mut deadline = pin!(tokio::time::sleep(Duration::from_millis(timeout_ms)));
    // Armed once the shell has exited; far away until then.
    let mut grace = pin!(tokio::time::sleep(Duration::from_secs(86_400)));

    loop {
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => {
                let output = stop(&mut group, &mut child, &mut pipe, output, ctx).await;
                return Err(ToolError::Cancelled { output });
            }
            () = &mut deadline, if status.is_none() => {
                let output = stop(&mut group, &mut child, &mut pipe, output, ctx).await;
                return Err(ToolError::Timeout { timeout_ms, output });
            }
            () = &mut grace, if status.is_some() => break,
            read = pipe.read(&mut chunk), if pipe_open => match read {
                Ok(0) | Err(_) => pipe_open = false,
                Ok(n) => output.push(&chunk[..n], ctx),
            },
            exited = child.wait(), if status.is_none() => {
                let exited = exited.map_err(|e| {
                    ToolError::Failed(format!("could not wait for the command: {e}"))
                })?;
                status = Some(exited);
                grace.as_mut().reset(Instant::now() + EXIT_GRACE);
            }
        }
        if let (Some(_), false) = (status, pipe_open) {
            break;
        }
    }
    // Background jobs still running go with the group.
    group.kill();
    let status = status.ok_or_else(|| ToolError::Failed("the command vanished".into()))?;
    Ok(Finished {
        status,
        output: output.finish(),
    })
}

/// Kills the group, reaps the shell and collects what is left in the pipe.
async fn stop(
    group: &mut GroupGuard,
    child: &mut tokio::process::Child,
    pipe: &mut pipe::Receiver,
    mut output: Collector,
    ctx: &ToolContext,
) -> String {
    group.kill();
    let _ = tokio::time::timeout(REAP_WAIT, child.wait()).await;
    let mut chunk = vec![0u8; READ_CHUNK];
    let drain = async {
        while let Ok(n) = pipe.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            output.push(&chunk[..n], ctx);
        }
    };
    let _ = tokio::time::timeout(KILL_DRAIN, drain).await;
    output.finish()
}

/// The output kept for the model plus the progress stream for display.
struct Collector {
    kept: HeadTail,
    /// An incomplete UTF-8 sequence at the end of the last chunk (≤ 3 bytes),
    /// held back so that progress chunks are whole characters.
    carry: Vec<u8>,
}

impl Collector {
    fn new() -> Self {
        Collector {
            kept: HeadTail::new(DEFAULT_MAX_BYTES),
            carry: Vec::new(),
        }
    }

    fn push(&mut self, bytes: &[u8], ctx: &ToolContext) {
        self.kept.push(bytes);
        if ctx.progress.is_none() {
            return;
        }
        self.carry.extend_from_slice(bytes);
        let complete = match std::str::from_utf8(&self.carry) {
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            _ => self.carry.len(),
        };
        let text = String::from_utf8_lossy(&self.carry[..complete]).into_owned();
        self.carry.drain(..complete);
        if !text.is_empty() {
            ctx.report_progress(&text);
        }
    }

    fn finish(self) -> String {
        self.kept.to_text()
    }
}

/// Owns the right to kill the command's process group; kills it when dropped
/// (a call abandoned mid-run leaves nothing behind).
struct GroupGuard {
    pgid: Option<libc::pid_t>,
}

impl GroupGuard {
    fn new(pid: Option<u32>) -> Self {
        // A group id of 0 or 1 would name our own group or init's: never.
        let pgid = pid
            .and_then(|p| libc::pid_t::try_from(p).ok())
            .filter(|&p| p > 1);
        GroupGuard { pgid }
    }

    /// Kills the group now; later calls and the drop do nothing.
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            kill_group(pgid);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

#[allow(unsafe_code)]
fn kill_group(pgid: libc::pid_t) {
    // SAFETY: killpg only sends a signal; it has no memory-safety
    // preconditions. `pgid` > 1 is the group our child leads (checked by
    // `GroupGuard::new`). An error (ESRCH: the group is already gone) is fine.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}
