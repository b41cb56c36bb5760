//! Runs one child process and measures it: wall time, CPU time and peak RSS.
//!
//! Invariants:
//! - Only the spawned child is measured. CPU time and peak RSS come from the
//!   `rusage` that `wait4` returns for that child, which the kernel fills with
//!   the child's own usage plus that of the descendants it waited for (e.g. the
//!   `bash` a tool ran): CPU is their sum, peak RSS the largest single process.
//!   Other processes (the mock server) are never included.
//! - Wall time runs from just before `spawn` (fork + exec are part of a
//!   start-up) to the moment the child is known to have exited, observed with
//!   `waitid(WNOWAIT)` so the watchdog can still be stopped before the pid is
//!   reaped and could be reused.
//! - A child that outlives its time limit is killed with SIGKILL (with its
//!   process group) by a watchdog thread and reported as an error; a benchmark
//!   never hangs.
//!
//! stdout and stderr should go to files (set by the caller), not pipes: nobody
//! reads a pipe while the child runs, so a chatty child could block on it.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::memory::{Resident, Sampler};

/// What one run cost.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    pub wall: Duration,
    pub cpu: Duration,
    /// `ru_maxrss`, in KiB on Linux.
    pub max_rss_kib: u64,
    pub exit: ExitKind,
}

impl Measured {
    pub fn wall_ms(&self) -> f64 {
        self.wall.as_secs_f64() * 1e3
    }

    pub fn cpu_ms(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e3
    }

    /// Peak RSS in MiB (1024 KiB).
    pub fn max_rss_mib(&self) -> f64 {
        self.max_rss_kib as f64 / 1024.0
    }
}

/// How the child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitKind {
    Code(i32),
    Signal(i32),
}

impl std::fmt::Display for ExitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExitKind::Code(code) => write!(f, "exit code {code}"),
            ExitKind::Signal(signal) => write!(f, "killed by signal {signal}"),
        }
    }
}

/// Spawns `command`, waits for it (at most `limit`) and measures it.
pub fn run_measured(command: &mut Command, limit: Duration) -> anyhow::Result<Measured> {
    run(command, limit, false).map(|(m, _)| m)
}

/// As [`run_measured`], and samples where the child's resident pages are
/// while it runs (`memory::Sampler`): the largest sample, if one was taken.
/// The sampler competes for the CPU, so these runs are not the timed ones.
pub fn run_sampling_memory(
    command: &mut Command,
    limit: Duration,
) -> anyhow::Result<(Measured, Option<Resident>)> {
    run(command, limit, true)
}

fn run(
    command: &mut Command,
    limit: Duration,
    sample: bool,
) -> anyhow::Result<(Measured, Option<Resident>)> {
    // Its own process group, so a timeout kills what it started too (unless
    // that moved to a group of its own).
    command.process_group(0);
    let start = Instant::now();
    let child = command
        .spawn()
        .with_context(|| format!("cannot start {:?}", command.get_program()))?;
    let pid = libc::pid_t::try_from(child.id()).context("pid out of range")?;

    let (stop_watchdog, stopped) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || match stopped.recv_timeout(limit) {
        Err(mpsc::RecvTimeoutError::Timeout) => {
            kill_unreaped(pid);
            true
        }
        _ => false,
    });

    let sampler = sample.then(|| Sampler::start(pid));
    let exited = wait_for_exit_without_reaping(pid);
    let wall = start.elapsed();
    // Before the reap: the pid stays ours until then.
    let resident = sampler.and_then(Sampler::finish);
    if exited.is_err() {
        // Reaping below blocks until the child exits; make sure it does.
        kill_unreaped(pid);
    }
    drop(stop_watchdog);
    let timed_out = watchdog.join().unwrap_or(false);
    // Reap even when waiting failed, so no zombie is left behind.
    let reaped = reap_with_usage(pid);
    exited?;
    let (exit, usage) = reaped?;
    if timed_out {
        bail!(
            "{:?} ran longer than {limit:?} and was killed",
            command.get_program()
        );
    }
    let measured = Measured {
        wall,
        cpu: timeval(usage.ru_utime) + timeval(usage.ru_stime),
        max_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        exit,
    };
    Ok((measured, resident))
}

fn timeval(tv: libc::timeval) -> Duration {
    Duration::from_secs(u64::try_from(tv.tv_sec).unwrap_or(0))
        + Duration::from_micros(u64::try_from(tv.tv_usec).unwrap_or(0))
}

#[allow(unsafe_code)]
fn kill_unreaped(pid: libc::pid_t) {
    // SAFETY: plain syscall. `pid` is our child, leader of its own process
    // group, and has not been reaped yet (reaping happens only after the
    // watchdog is joined), so neither the pid nor the group id can name
    // anything else.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

#[allow(unsafe_code)]
fn wait_for_exit_without_reaping(pid: libc::pid_t) -> anyhow::Result<()> {
    let id = libc::id_t::try_from(pid).context("pid out of range")?;
    loop {
        // SAFETY: `info` is a valid, writable siginfo_t for the call's
        // duration; a zeroed siginfo_t is a valid value.
        let rc = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOWAIT)
        };
        if rc == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err).context("waitid");
        }
    }
}

#[allow(unsafe_code)]
fn reap_with_usage(pid: libc::pid_t) -> anyhow::Result<(ExitKind, libc::rusage)> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `status` and `usage` are valid, writable locals for the
        // call's duration; a zeroed rusage is a valid value.
        let (rc, usage) = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            let rc = libc::wait4(pid, &mut status, 0, &mut usage);
            (rc, usage)
        };
        if rc == pid {
            let exit = if libc::WIFSIGNALED(status) {
                ExitKind::Signal(libc::WTERMSIG(status))
            } else {
                ExitKind::Code(libc::WEXITSTATUS(status))
            };
            return Ok((exit, usage));
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err).context("wait4");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_a_real_child_and_its_exit_code() {
        let m = run_measured(
            Command::new("sh").args(["-c", "exit 3"]),
            Duration::from_secs(10),
        )
        .expect("runs");
        assert_eq!(m.exit, ExitKind::Code(3));
        assert!(m.max_rss_kib > 0);
        assert!(m.wall > Duration::ZERO);
    }

    #[test]
    fn a_child_over_its_limit_is_killed() {
        let start = Instant::now();
        let err = run_measured(Command::new("sleep").arg("30"), Duration::from_millis(200))
            .expect_err("killed");
        assert!(err.to_string().contains("was killed"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
