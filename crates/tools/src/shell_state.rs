//! The shell's state for one session: its working directory, which persists
//! from one `bash` call to the next, and its background jobs.
//!
//! Invariants:
//! - At most [`MAX_RUNNING`] jobs run at once, and at most [`MAX_JOBS`] are
//!   remembered (the oldest finished ones are forgotten first).
//! - When the state is dropped (the session ends), every running job's
//!   process group is killed: no job outlives its session.
//! - Locks are std mutexes held for a few statements, never across an await.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::ToolError;
use crate::bash::job::Job;

/// How many background jobs may run at once.
pub const MAX_RUNNING: usize = 16;
/// How many background jobs (running or finished) are remembered.
pub const MAX_JOBS: usize = 64;

/// How a background job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    Running,
    /// The shell exited with this code.
    Exited(i32),
    /// The shell was killed by this signal, not by `kill_shell`.
    Signalled(i32),
    /// Stopped by `kill_shell` (or the session's end).
    Killed,
    /// The job could not be waited for; its state is unknown.
    Lost,
}

impl JobStatus {
    pub fn is_running(self) -> bool {
        self == JobStatus::Running
    }
}

impl std::fmt::Display for JobStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobStatus::Running => write!(f, "running"),
            JobStatus::Exited(code) => write!(f, "exited with code {code}"),
            JobStatus::Signalled(signal) => write!(f, "killed by signal {signal}"),
            JobStatus::Killed => write!(f, "killed"),
            JobStatus::Lost => write!(f, "lost (its state is unknown)"),
        }
    }
}

/// A background job, for display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// `shell_<n>`, what `bash_output` and `kill_shell` take.
    pub id: String,
    pub command: String,
    pub status: JobStatus,
}

/// The session's shell.
#[derive(Default)]
pub struct ShellState {
    /// `None` means the workspace root.
    cwd: Mutex<Option<PathBuf>>,
    jobs: Mutex<JobTable>,
}

#[derive(Default)]
struct JobTable {
    /// The number of the last job started.
    last_id: u64,
    jobs: Vec<Arc<Job>>,
}

impl std::fmt::Debug for ShellState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShellState")
            .field("cwd", &self.cwd())
            .field("jobs", &self.jobs())
            .finish()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl ShellState {
    /// The working directory the last command left, inside the workspace;
    /// `None` for the workspace root.
    pub fn cwd(&self) -> Option<PathBuf> {
        lock(&self.cwd).clone()
    }

    pub(crate) fn set_cwd(&self, dir: Option<PathBuf>) {
        *lock(&self.cwd) = dir;
    }

    /// The jobs remembered, oldest first.
    pub fn jobs(&self) -> Vec<JobInfo> {
        lock(&self.jobs)
            .jobs
            .iter()
            .map(|job| JobInfo {
                id: job.id.clone(),
                command: job.command.clone(),
                status: job.status(),
            })
            .collect()
    }

    /// Kills every running job's process group.
    pub fn kill_all(&self) {
        for job in &lock(&self.jobs).jobs {
            job.kill();
        }
    }

    /// The id for a new job, or an error when [`MAX_RUNNING`] jobs run.
    pub(crate) fn next_id(&self) -> Result<String, ToolError> {
        let mut table = lock(&self.jobs);
        let running: Vec<&str> = table
            .jobs
            .iter()
            .filter(|j| j.status().is_running())
            .map(|j| j.id.as_str())
            .collect();
        if running.len() >= MAX_RUNNING {
            return Err(ToolError::Failed(format!(
                "{} background jobs are already running ({}); stop one with kill_shell first",
                running.len(),
                running.join(", ")
            )));
        }
        table.last_id += 1;
        Ok(format!("shell_{}", table.last_id))
    }

    /// Remembers `job`, forgetting the oldest finished jobs beyond
    /// [`MAX_JOBS`].
    pub(crate) fn insert(&self, job: Arc<Job>) {
        let mut table = lock(&self.jobs);
        table.jobs.push(job);
        while table.jobs.len() > MAX_JOBS {
            match table.jobs.iter().position(|j| !j.status().is_running()) {
                Some(oldest_finished) => {
                    table.jobs.remove(oldest_finished);
                }
                None => break,
            }
        }
    }

    /// The job called `id`, or an error naming the known ones.
    pub(crate) fn job(&self, id: &str) -> Result<Arc<Job>, ToolError> {
        let table = lock(&self.jobs);
        let wanted = id.trim();
        if let Some(job) = table.jobs.iter().find(|j| j.id == wanted) {
            return Ok(job.clone());
        }
        let known: Vec<String> = table
            .jobs
            .iter()
            .map(|j| format!("{} ({})", j.id, j.status()))
            .collect();
        Err(ToolError::Failed(if known.is_empty() {
            format!(
                "there is no background shell `{id}`: none was started in this session \
                 (bash with run_in_background starts one)"
            )
        } else {
            format!(
                "there is no background shell `{id}`; known shells: {}",
                known.join(", ")
            )
        }))
    }
}

impl Drop for ShellState {
    fn drop(&mut self) {
        self.kill_all();
    }
}
