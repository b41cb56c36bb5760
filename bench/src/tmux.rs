//! The `gyre` terminal UI in a detached tmux session (a real pty of a
//! fixed size), and what `/proc` says of its process.
//!
//! Invariants:
//! - Each session has a tmux server of its own (a socket in the run's temp
//!   dir), killed on drop, so nothing outlives a scenario.
//! - gyre runs with a clean environment (PATH, HOME, TERM and what the
//!   caller adds); the pane's shell writes gyre's exit status to a file.
//! - Every wait is bounded; a timeout is an error naming what was awaited
//!   and the screen at the time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

const POLL: Duration = Duration::from_millis(10);

/// A `gyre` in tmux.
pub struct TuiSession {
    socket: PathBuf,
    status: PathBuf,
    /// gyre's own pid (a child of the pane's shell).
    pub pid: u32,
    /// When tmux was asked to start it.
    pub started: Instant,
}

impl Drop for TuiSession {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

impl TuiSession {
    /// Starts `gyre ARGS` in `dir` (the workspace) in a `width`×`height`
    /// window; `env` is added to a clean environment; `scratch` holds the
    /// socket and the exit status.
    pub fn start(
        gyre: &Path,
        args: &[&str],
        dir: &Path,
        env: &[(&str, String)],
        size: (u16, u16),
        scratch: &Path,
    ) -> anyhow::Result<TuiSession> {
        // A socket per session: a killed server's may linger for a moment.
        static SESSIONS: AtomicUsize = AtomicUsize::new(0);
        let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
        let socket = scratch.join(format!("tmux-{n}.sock"));
        let status = scratch.join("exit-status");
        let _ = std::fs::remove_file(&status);
        let mut line = String::from("env -i TERM=tmux-256color");
        for (name, value) in [
            (
                "PATH",
                std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
            ),
            ("HOME", scratch.display().to_string()),
        ]
        .iter()
        .map(|(n, v)| (*n, v.clone()))
        .chain(env.iter().map(|(n, v)| (*n, v.clone())))
        {
            line.push_str(&format!(" {name}={}", quote(&value)));
        }
        line.push_str(&format!(" {}", quote(&gyre.display().to_string())));
        for arg in args {
            line.push_str(&format!(" {}", quote(arg)));
        }
        line.push_str(&format!(
            "; echo $? > {}; sleep 60",
            quote(&status.display().to_string())
        ));
        let started = Instant::now();
        let mut session = TuiSession {
            socket,
            status,
            pid: 0,
            started,
        };
        session.tmux(&[
            "new-session",
            "-d",
            "-s",
            "gyre",
            "-x",
            &size.0.to_string(),
            "-y",
            &size.1.to_string(),
            "-c",
            &dir.display().to_string(),
            &line,
        ])?;
        let shell = session.tmux(&["display-message", "-p", "-t", "gyre", "#{pane_pid}"])?;
        let shell = shell.trim();
        let deadline = Instant::now() + Duration::from_secs(10);
        session.pid = loop {
            let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children"))
                .unwrap_or_default();
            if let Some(pid) = children.split_whitespace().next() {
                break pid.parse().context("a pid")?;
            }
            if Instant::now() > deadline {
                bail!("gyre did not start under tmux's shell {shell}");
            }
            std::thread::sleep(POLL);
        };
        Ok(session)
    }

    fn tmux(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .context("cannot run tmux (the `tui` group needs it: apt-get install tmux)")?;
        if !out.status.success() {
            bail!(
                "tmux {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    pub fn screen(&self) -> anyhow::Result<String> {
        self.tmux(&["capture-pane", "-p", "-t", "gyre"])
    }

    /// Types `text` literally, then presses Enter.
    pub fn send(&self, text: &str) -> anyhow::Result<()> {
        self.tmux(&["send-keys", "-t", "gyre", "-l", text])?;
        // A separate key, so it is not read with the text as a paste.
        std::thread::sleep(Duration::from_millis(50));
        self.tmux(&["send-keys", "-t", "gyre", "Enter"])?;
        Ok(())
    }

    /// Waits (at most `limit`) until the screen shows all of `needles`;
    /// returns when it did.
    pub fn wait_for(&self, needles: &[&str], limit: Duration) -> anyhow::Result<Instant> {
        let deadline = Instant::now() + limit;
        loop {
            let screen = self.screen()?;
            if needles.iter().all(|n| screen.contains(n)) {
                return Ok(Instant::now());
            }
            if Instant::now() > deadline {
                bail!("waited {limit:?} for {needles:?}; the screen:\n{screen}");
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits for gyre to exit; its status.
    pub fn wait_exit(&self, limit: Duration) -> anyhow::Result<i32> {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(text) = std::fs::read_to_string(&self.status)
                && text.ends_with('\n')
            {
                return text.trim().parse().context("an exit status");
            }
            if Instant::now() > deadline {
                bail!("gyre did not exit within {limit:?}");
            }
            std::thread::sleep(POLL);
        }
    }
}

/// What `/proc` says of a process at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcSample {
    /// user + system time of the process (all its threads, dead ones too).
    pub cpu: Duration,
    /// Context switches of its live threads (each wake-up is one).
    pub switches: u64,
    pub rss_kib: u64,
}

/// Clock ticks per second of `/proc/PID/stat` times (USER_HZ, 100 on Linux).
const USER_HZ: u64 = 100;

pub fn sample(pid: u32) -> anyhow::Result<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("process {pid} is gone"))?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .context("/proc/PID/stat has a command name")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat: 12 and 13 after `)`.
    let ticks = |i: usize| -> anyhow::Result<u64> {
        fields
            .get(i)
            .context("a stat field")?
            .parse::<u64>()
            .context("a number of ticks")
    };
    let cpu_ticks = ticks(11)? + ticks(12)?;
    let mut switches = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))?.flatten() {
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        for line in status.lines() {
            if let Some(count) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                switches += count.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("VmRSS in /proc/PID/status")?;
    Ok(ProcSample {
        cpu: Duration::from_millis(cpu_ticks * 1000 / USER_HZ),
        switches,
        rss_kib,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_can_be_sampled() {
        let me = sample(std::process::id()).expect("a sample");
        assert!(me.rss_kib > 0);
        assert!(me.switches > 0);
    }

    #[test]
    fn quoting_survives_quotes() {
        assert_eq!(quote("it's"), "'it'\\''s'");
    }
}
