//! Starting a shell in its own process group, and running one in the
//! foreground to its end, its timeout or its cancellation.
//!
//! Invariants:
//! - Every command runs in its own process group; whatever way a foreground
//!   call ends (exit, timeout, cancellation, or the future being dropped), the
//!   whole group is sent SIGKILL, so no process it started outlives the call.
//! - stdout and stderr share one pipe, so their lines keep the order in which
//!   they were written. The pipe is read asynchronously; memory is bounded by
//!   [`HeadTail`], which keeps the first and the last bytes, and the whole
//!   output goes to a [`SpillLog`] once it outgrows them.
//! - stdin is null and the provider API keys are removed from the child's
//!   environment.
//! - A watcher kills the command's group when gyre dies (see `lifeline`);
//!   its lifeline is held as long as the command may run.
//!
//! Trade-offs: jobs a foreground command puts in the background (`cmd &`)
//! are killed with the group when the shell exits — after a short grace
//! period to collect their last output — since nothing would ever reap them.
//! The final kill comes just after the shell is reaped; the group id could in
//! principle be reused in between, but only by a new group leader in the
//! same microseconds, which pid allocation makes practically impossible.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::pin::pin;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::time::Instant;

use super::spill::SpillLog;
use crate::sandbox::Launch;
use crate::truncate::{HeadTail, cut_marker};
use crate::{ToolContext, ToolError};

/// How long output is still collected after the shell exited while a
/// background process keeps the pipe open.
pub(crate) const EXIT_GRACE: Duration = Duration::from_millis(250);
/// How long output already in the pipe is collected after a kill.
const KILL_DRAIN: Duration = Duration::from_millis(200);
/// A SIGKILLed process is reaped within this time unless the kernel is stuck.
pub(crate) const REAP_WAIT: Duration = Duration::from_secs(5);
pub(crate) const READ_CHUNK: usize = 8 * 1024;

/// Variables the child must not see: the model could print them.
const SECRET_VARIABLES: [&str; 6] = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENROUTER_API_KEY",
    "GYRE_DATABASE_URL",
];

/// Variables that keep common programs from waiting for a terminal.
const NON_INTERACTIVE: [(&str, &str); 3] = [
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

/// A shell just started, and the read end of its output pipe.
pub(crate) struct Started {
    pub(crate) child: tokio::process::Child,
    pub(crate) pipe: pipe::Receiver,
    /// The process group, which the shell leads; `None` only if the pid
    /// could not be known (then there is nothing to kill either).
    pub(crate) pgid: Option<i32>,
    /// Held as long as the command may run: when it closes (it is dropped,
    /// or gyre dies) the command's group is killed (see `lifeline`).
    pub(crate) lifeline: std::io::PipeWriter,
}

/// Starts `shell -c script` in `cwd`, in a new process group, with stdin
/// null and stdout and stderr on one pipe; sandboxed, it starts the sandbox
/// helper, which becomes the shell (same process, so same group and pipe).
pub(crate) fn start(
    shell: &Path,
    script: &str,
    cwd: &Path,
    launch: &Launch,
) -> Result<Started, ToolError> {
    let spawn_failed = |e: std::io::Error| {
        ToolError::Failed(format!("could not start `{}`: {e}", shell.display()))
    };
    let (reader, writer) = std::io::pipe().map_err(spawn_failed)?;
    let (watched, lifeline) = std::io::pipe().map_err(spawn_failed)?;
    let script = super::lifeline::supervised(script);
    let script = script.as_str();
    let child = {
        let writer_for_stderr = writer.try_clone().map_err(spawn_failed)?;
        let mut cmd = match launch {
            Launch::Direct => {
                let mut cmd = tokio::process::Command::new(shell);
                cmd.arg("-c").arg(script);
                cmd
            }
            Launch::Sandboxed { helper, policy } => {
                let mut cmd = tokio::process::Command::new(helper);
                cmd.args(gyre_sandbox::exec_args(policy, shell, &["-c", script]));
                cmd
            }
        };
        cmd.current_dir(cwd)
            .stdin(Stdio::from(watched))
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
    // A group id of 0 or 1 would name our own group or init's: never.
    let pgid = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .filter(|&p| p > 1);
    let pipe = pipe::Receiver::from_owned_fd(OwnedFd::from(reader)).map_err(spawn_failed)?;
    Ok(Started {
        child,
        pipe,
        pgid,
        lifeline,
    })
}

/// What a finished foreground command left.
pub(crate) struct Finished {
    pub(crate) status: ExitStatus,
    /// The output, cut in the middle when long.
    pub(crate) output: String,
}

/// Runs a started shell to its end, its timeout or the cancellation of
/// `ctx`, keeping `kept` bytes of output (40% head, 60% tail) and spilling
/// the whole of it to `spill` when that is not enough.
pub(crate) async fn run_foreground(
    started: Started,
    timeout_ms: u64,
    kept: usize,
    spill: SpillLog,
    ctx: &ToolContext,
) -> Result<Finished, ToolError> {
    let Started {
        mut child,
        mut pipe,
        pgid,
        lifeline: _lifeline,
    } = started;
    let mut group = GroupGuard { pgid };
    let mut output = Collector::new(kept, spill);
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
                Ok(n) => output.push(&chunk[..n], ctx).await,
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
        output: output.finish().await,
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
            output.push(&chunk[..n], ctx).await;
        }
    };
    let _ = tokio::time::timeout(KILL_DRAIN, drain).await;
    output.finish().await
}

/// The output kept for the model, the spill file, and the progress stream
/// for display.
struct Collector {
    kept: HeadTail,
    spill: SpillLog,
    /// An incomplete UTF-8 sequence at the end of the last chunk (≤ 3 bytes),
    /// held back so that progress chunks are whole characters.
    carry: Vec<u8>,
}

impl Collector {
    fn new(kept: usize, spill: SpillLog) -> Self {
        let head = kept * 2 / 5;
        Collector {
            kept: HeadTail::split(head, kept - head),
            spill,
            carry: Vec::new(),
        }
    }

    async fn push(&mut self, bytes: &[u8], ctx: &ToolContext) {
        if self.spill.started() {
            self.spill.write(bytes).await;
        } else if self.spill.enabled() && self.kept.would_drop(bytes.len()) {
            // The first time anything would be dropped, all of it is still
            // here: it starts the file.
            if let Some(whole) = self.kept.whole() {
                self.spill.write(&whole).await;
            }
            self.spill.write(bytes).await;
        }
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

    async fn finish(mut self) -> String {
        self.spill.finish().await;
        let whereabouts = self.spill.whereabouts();
        self.kept
            .to_text_with(|lines, bytes| cut_marker(lines, bytes, &whereabouts))
    }
}

/// Owns the right to kill a foreground command's process group; kills it
/// when dropped (a call abandoned mid-run leaves nothing behind).
struct GroupGuard {
    pgid: Option<i32>,
}

impl GroupGuard {
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

/// Sends SIGKILL to process group `pgid` (> 1, led by a child of ours).
pub(crate) fn kill_group(pgid: i32) {
    // A group id of 0 or 1 (or below) would name our own group, init's or
    // every process: never.
    if pgid <= 1 {
        return;
    }
    let Some(group) = rustix::process::Pid::from_raw(pgid) else {
        return;
    };
    // An error (ESRCH: the group is already gone) is fine.
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
}
