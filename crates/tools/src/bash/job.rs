//! Background jobs: a shell started by `bash` with `run_in_background`,
//! read by `bash_output`, stopped by `kill_shell` or the session's end.
//!
//! Invariants:
//! - A job's output is kept in a ring of the last [`MAX_KEPT`] bytes, with a
//!   read cursor so that each read returns only what is new; once the output
//!   outgrows the ring, all of it also goes to a spill file (if configured).
//! - The job's process group is killed by `kill_shell`, by the session's end
//!   (`ShellState`'s drop), when its task is dropped (the runtime ends), and
//!   after the shell exited (with a short grace for the last output), so no
//!   process of a job outlives it. The group id is forgotten, under the lock,
//!   once the group was killed after the shell's exit, so no later kill can
//!   hit a reused id.
//! - The status changes from running exactly once, after the output is
//!   collected; watchers are woken on every change (output or status).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio::time::Instant;

use super::process::{self, EXIT_GRACE, READ_CHUNK, Started};
use super::spill::SpillLog;
use crate::sandbox::Launch;
use crate::{JobStatus, ToolError};

/// How much of a job's output is kept in memory.
pub(crate) const MAX_KEPT: usize = 1024 * 1024;

/// A background job, shared by the session's table and the task running it.
pub(crate) struct Job {
    pub(crate) id: String,
    pub(crate) command: String,
    state: Mutex<JobState>,
    /// Bumped on every change of output or status.
    changes: watch::Sender<u64>,
}

struct JobState {
    output: Ring,
    status: JobStatus,
    /// The group to kill; `None` once it was killed after the shell's exit.
    pgid: Option<i32>,
    /// How far (in bytes since the start) the output was read.
    read_pos: u64,
    kill_requested: bool,
    /// Where the whole output is saved, for markers (empty if nowhere).
    whereabouts: String,
}

/// The last [`MAX_KEPT`] bytes of a stream.
struct Ring {
    bytes: VecDeque<u8>,
    total: u64,
}

impl Ring {
    fn push(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        let data = &data[data.len().saturating_sub(MAX_KEPT)..];
        let overflow = (self.bytes.len() + data.len()).saturating_sub(MAX_KEPT);
        self.bytes.drain(..overflow);
        self.bytes.extend(data);
    }

    /// The offset (since the start of the stream) of the first byte kept.
    fn start(&self) -> u64 {
        self.total - self.bytes.len() as u64
    }
}

/// Output read from a job.
pub(crate) struct NewOutput {
    pub(crate) bytes: Vec<u8>,
    /// How many unread bytes had already left the ring.
    pub(crate) dropped: u64,
    pub(crate) status: JobStatus,
    pub(crate) whereabouts: String,
}

impl Job {
    /// Starts `command` in `cwd` as job `id`, as `launch` says (sandboxed
    /// or not); its whole output is spilled to `spill` once it outgrows the
    /// ring.
    pub(crate) fn start(
        id: String,
        shell: &Path,
        command: &str,
        cwd: &Path,
        launch: &Launch,
        spill: Option<PathBuf>,
    ) -> Result<Arc<Job>, ToolError> {
        let started = process::start(shell, command, cwd, launch)?;
        let (changes, _) = watch::channel(0);
        let job = Arc::new(Job {
            id,
            command: command.to_owned(),
            state: Mutex::new(JobState {
                output: Ring {
                    bytes: VecDeque::new(),
                    total: 0,
                },
                status: JobStatus::Running,
                pgid: started.pgid,
                read_pos: 0,
                kill_requested: false,
                whereabouts: String::new(),
            }),
            changes,
        });
        tokio::spawn(run(job.clone(), started, SpillLog::new(spill)));
        Ok(job)
    }

    fn lock(&self) -> MutexGuard<'_, JobState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn status(&self) -> JobStatus {
        self.lock().status
    }

    /// Kills the job's process group (if it still runs); the status becomes
    /// [`JobStatus::Killed`] once the task has collected the end.
    pub(crate) fn kill(&self) {
        let mut state = self.lock();
        // Without a group the job has already ended; only its status is
        // still to be set, and it is not "killed".
        if let Some(pgid) = state.pgid {
            state.kill_requested = state.status.is_running();
            process::kill_group(pgid);
        }
    }

    /// Kills the group once after the shell's exit and forgets it.
    fn kill_group_finally(&self) {
        if let Some(pgid) = self.lock().pgid.take() {
            process::kill_group(pgid);
        }
    }

    /// The output not read yet (all of what is still kept), moving the
    /// cursor past it. While the job runs, an incomplete UTF-8 sequence at
    /// the end is left for the next read.
    pub(crate) fn read_new(&self) -> NewOutput {
        let mut state = self.lock();
        let start = state.read_pos.max(state.output.start());
        let dropped = start - state.read_pos;
        let skip = usize::try_from(start - state.output.start()).unwrap_or(usize::MAX);
        let mut bytes: Vec<u8> = state.output.bytes.iter().skip(skip).copied().collect();
        if state.status.is_running() {
            let complete = match std::str::from_utf8(&bytes) {
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                _ => bytes.len(),
            };
            bytes.truncate(complete);
        }
        state.read_pos = start + bytes.len() as u64;
        NewOutput {
            bytes,
            dropped,
            status: state.status,
            whereabouts: state.whereabouts.clone(),
        }
    }

    /// Whether there is unread output, or the job has ended.
    fn has_news(&self) -> bool {
        let state = self.lock();
        state.read_pos < state.output.total || !state.status.is_running()
    }

    /// Waits until there is unread output or the job has ended, at most
    /// `timeout`.
    pub(crate) async fn wait_for_news(&self, timeout: Duration) {
        let mut changes = self.changes.subscribe();
        let _ = tokio::time::timeout(timeout, async {
            while !self.has_news() {
                if changes.changed().await.is_err() {
                    break;
                }
            }
        })
        .await;
    }

    /// Waits until the job has ended, at most `timeout`; its status then.
    pub(crate) async fn wait_for_end(&self, timeout: Duration) -> JobStatus {
        let mut changes = self.changes.subscribe();
        let _ = tokio::time::timeout(timeout, async {
            while self.status().is_running() {
                if changes.changed().await.is_err() {
                    break;
                }
            }
        })
        .await;
        self.status()
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Adds output, starting the spill file with the whole output the first
    /// time the ring would drop some.
    async fn push(&self, bytes: &[u8], spill: &mut SpillLog) {
        if spill.started() {
            spill.write(bytes).await;
        } else if spill.enabled() {
            let backlog = {
                let state = self.lock();
                (state.output.total + bytes.len() as u64 > MAX_KEPT as u64)
                    .then(|| state.output.bytes.iter().copied().collect::<Vec<u8>>())
            };
            if let Some(backlog) = backlog {
                spill.write(&backlog).await;
                spill.write(bytes).await;
            }
        }
        {
            let mut state = self.lock();
            state.output.push(bytes);
            if spill.started() {
                state.whereabouts = spill.whereabouts();
            }
        }
        self.changed();
    }
}

/// Kills the job's group if its task is dropped before the end (the
/// runtime shuts down).
struct KillOnDrop(Arc<Job>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.0.kill_group_finally();
    }
}

/// Collects the job's output until the shell has exited and the pipe is
/// closed (or the grace after the exit ran out), then kills what is left of
/// the group and sets the final status.
async fn run(job: Arc<Job>, started: Started, mut spill: SpillLog) {
    let guard = KillOnDrop(job);
    let job = &guard.0;
    let Started {
        mut child,
        mut pipe,
        pgid: _,
        lifeline: _lifeline,
    } = started;
    let mut chunk = vec![0u8; READ_CHUNK];
    let mut exited = None;
    let mut pipe_open = true;
    let mut grace = pin!(tokio::time::sleep(Duration::from_secs(86_400)));
    loop {
        tokio::select! {
            () = &mut grace, if exited.is_some() => break,
            read = pipe.read(&mut chunk), if pipe_open => match read {
                Ok(0) | Err(_) => pipe_open = false,
                Ok(n) => job.push(&chunk[..n], &mut spill).await,
            },
            status = child.wait(), if exited.is_none() => {
                exited = Some(status);
                grace.as_mut().reset(Instant::now() + EXIT_GRACE);
            }
        }
        if exited.is_some() && !pipe_open {
            break;
        }
    }
    job.kill_group_finally();
    spill.finish().await;
    {
        let mut state = job.lock();
        state.status = match exited {
            _ if state.kill_requested => JobStatus::Killed,
            Some(Ok(status)) => {
                use std::os::unix::process::ExitStatusExt;
                match (status.code(), status.signal()) {
                    (Some(code), _) => JobStatus::Exited(code),
                    (None, Some(signal)) => JobStatus::Signalled(signal),
                    (None, None) => JobStatus::Lost,
                }
            }
            _ => JobStatus::Lost,
        };
        if spill.started() {
            state.whereabouts = spill.whereabouts();
        }
    }
    job.changed();
}
