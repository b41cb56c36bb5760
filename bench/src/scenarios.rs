//! The measured scenarios: `gyre --version`, and headless sessions against the
//! mock server.
//!
//! Invariants:
//! - Every run gets a fresh workspace and a fresh `GYRE_HOME` (the session
//!   store starts empty each time), made before the clock starts and deleted
//!   after it stops.
//! - The child's environment is cleared and rebuilt (PATH, HOME, GYRE_HOME, the
//!   provider's variables), so user config, proxies and log levels from the
//!   caller's shell cannot change what is measured.
//! - Every run is checked (exit 0, the expected result); the first failure ends
//!   the scenario with an error naming the run, its stdout and its stderr.
//! - One warm-up run (checked, not recorded) precedes each scenario, so a cold
//!   page cache for the binary does not land in the samples.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use serde_json::Value;

use crate::memory::Resident;
use crate::mock::MockServer;
use crate::runner::{ExitKind, Measured, run_measured, run_sampling_memory};
use crate::scripts;

/// `gyre --version` must be done well within this.
const VERSION_LIMIT: Duration = Duration::from_secs(5);
/// One whole session must be done within this.
const SESSION_LIMIT: Duration = Duration::from_secs(20);
/// How much of a failed run's output goes into its error.
const OUTPUT_EXCERPT_BYTES: usize = 1500;
/// The most of a child's stdout read back (its result JSON is small).
const MAX_STDOUT_BYTES: u64 = 1 << 20;

/// The samples of one scenario, one entry per recorded run.
#[derive(Debug, Default, Clone)]
pub struct Samples {
    pub wall_ms: Vec<f64>,
    pub cpu_ms: Vec<f64>,
    pub rss_mib: Vec<f64>,
    /// Filled only by sampled runs ([`session_resident`]): the largest
    /// sample's file-backed and anonymous (+ shmem) resident MiB.
    pub file_mib: Vec<f64>,
    pub anon_mib: Vec<f64>,
}

impl Samples {
    pub fn push(&mut self, m: &Measured) {
        self.wall_ms.push(m.wall_ms());
        self.cpu_ms.push(m.cpu_ms());
        self.rss_mib.push(m.max_rss_mib());
    }

    fn push_resident(&mut self, r: &Resident) {
        self.file_mib.push(r.file_kib as f64 / 1024.0);
        self.anon_mib
            .push((r.anon_kib + r.shmem_kib) as f64 / 1024.0);
    }
}

/// A headless session scenario.
pub struct Session {
    pub name: &'static str,
    pub prompt: &'static str,
    pub script: Value,
    /// `num_turns` in the result JSON.
    pub turns: u32,
    /// Fills the fresh workspace before a run.
    pub prepare: fn(&Path) -> anyhow::Result<()>,
    /// Checks the workspace after a successful run.
    pub verify: fn(&Path) -> anyhow::Result<()>,
}

impl Session {
    /// Read a file, run bash that writes a file, answer.
    pub fn three_step_task() -> Session {
        Session {
            name: "3-step task",
            prompt: "Read notes.txt, then build the thing.",
            script: scripts::three_step_task(),
            turns: 3,
            prepare: |ws| write(ws, scripts::TASK_NOTES_FILE, scripts::TASK_NOTES_TEXT),
            verify: |ws| {
                let path = ws.join(scripts::TASK_OUTPUT_FILE);
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("the bash step did not write {}", path.display()))?;
                ensure!(
                    text == scripts::TASK_OUTPUT_TEXT,
                    "{} holds {text:?}, not {:?}",
                    path.display(),
                    scripts::TASK_OUTPUT_TEXT
                );
                Ok(())
            },
        }
    }

    /// `turns - 1` turns reading a small file, then an answer.
    pub fn read_loop(name: &'static str, turns: u32) -> Session {
        Session {
            name,
            prompt: "Read small.txt until you are sure of it, then say done.",
            script: scripts::read_loop(turns.saturating_sub(1)),
            turns,
            prepare: |ws| write(ws, scripts::SMALL_FILE, scripts::SMALL_FILE_TEXT),
            verify: |_| Ok(()),
        }
    }
}

fn write(dir: &Path, name: &str, text: &str) -> anyhow::Result<()> {
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// The per-run directories: a workspace, a GYRE_HOME (also HOME) and the
/// child's captured output. Removed on drop.
pub struct RunDirs {
    root: tempfile::TempDir,
}

impl RunDirs {
    pub fn new() -> anyhow::Result<RunDirs> {
        let root = tempfile::Builder::new()
            .prefix("gyre-bench-")
            .tempdir()
            .context("cannot make a temp dir")?;
        for dir in ["workspace", "home"] {
            std::fs::create_dir(root.path().join(dir)).context("cannot make a run dir")?;
        }
        Ok(RunDirs { root })
    }
    pub fn workspace(&self) -> PathBuf {
        self.root.path().join("workspace")
    }
    pub fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }
    pub fn stdout(&self) -> PathBuf {
        self.root.path().join("stdout")
    }
    pub fn stderr(&self) -> PathBuf {
        self.root.path().join("stderr")
    }

    /// A command with a clean environment and its output going to files here.
    pub fn command(&self, gyre: &Path) -> anyhow::Result<Command> {
        let mut command = Command::new(gyre);
        command
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("HOME", self.home())
            .env("GYRE_HOME", self.home())
            .current_dir(self.workspace())
            .stdin(Stdio::null())
            .stdout(File::create(self.stdout()).context("cannot create the stdout file")?)
            .stderr(File::create(self.stderr()).context("cannot create the stderr file")?);
        Ok(command)
    }

    /// Why a run failed, with the head of its stdout and tail of its stderr.
    pub fn failure(&self, what: &str, run: &str) -> anyhow::Error {
        let stdout = read_bounded(&self.stdout()).unwrap_or_default();
        let stderr = read_bounded(&self.stderr()).unwrap_or_default();
        anyhow::anyhow!(
            "{run}: {what}\n  stdout: {}\n  stderr: {}",
            head(&stdout).trim(),
            tail(&stderr).trim()
        )
    }
}

/// Run 0 is the warm-up.
pub fn run_label(scenario: &str, run: usize, runs: usize) -> String {
    if run == 0 {
        format!("{scenario}, warm-up run")
    } else {
        format!("{scenario}, run {run} of {runs}")
    }
}

pub fn read_bounded(path: &Path) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    File::open(path)?
        .take(MAX_STDOUT_BYTES)
        .read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn head(text: &str) -> &str {
    let mut end = text.len().min(OUTPUT_EXCERPT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn tail(text: &str) -> &str {
    let mut start = text.len().saturating_sub(OUTPUT_EXCERPT_BYTES);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// `gyre --version`, `runs` times (after one warm-up).
pub fn version(gyre: &Path, runs: usize) -> anyhow::Result<Samples> {
    let mut samples = Samples::default();
    for run in 0..=runs {
        let dirs = RunDirs::new()?;
        let mut command = dirs.command(gyre)?;
        command.arg("--version");
        let label = run_label("gyre --version", run, runs);
        let m = run_measured(&mut command, VERSION_LIMIT).context(label.clone())?;
        if m.exit != ExitKind::Code(0) {
            return Err(dirs.failure(&m.exit.to_string(), &label));
        }
        let out = read_bounded(&dirs.stdout())?;
        if !out.starts_with("gyre ") {
            return Err(dirs.failure("the output is not a version", &label));
        }
        if run > 0 {
            samples.push(&m);
        }
    }
    Ok(samples)
}

/// The version line `gyre --version` prints.
pub fn version_line(gyre: &Path) -> anyhow::Result<String> {
    let out = Command::new(gyre)
        .arg("--version")
        .output()
        .with_context(|| format!("cannot run {}", gyre.display()))?;
    ensure!(out.status.success(), "{} --version failed", gyre.display());
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// One session scenario, `runs` times (after one warm-up), against a mock
/// server started for it and killed when it ends.
pub fn session(gyre: &Path, session: &Session, runs: usize) -> anyhow::Result<Samples> {
    session_runs(gyre, session, runs, false)
}

/// As [`session`], sampling where gyre's resident pages are while it runs
/// (`memory::Sampler`); a run without a sample is a failure.
pub fn session_resident(gyre: &Path, session: &Session, runs: usize) -> anyhow::Result<Samples> {
    session_runs(gyre, session, runs, true)
}

fn session_runs(
    gyre: &Path,
    session: &Session,
    runs: usize,
    sample: bool,
) -> anyhow::Result<Samples> {
    let script_dir = tempfile::Builder::new()
        .prefix("gyre-bench-script-")
        .tempdir()
        .context("cannot make a temp dir")?;
    let script_path = script_dir.path().join("script.json");
    std::fs::write(&script_path, session.script.to_string()).context("cannot write the script")?;
    let mock = MockServer::start(gyre, &script_path)?;

    let mut samples = Samples::default();
    for run in 0..=runs {
        let dirs = RunDirs::new()?;
        (session.prepare)(&dirs.workspace())?;
        let mut command = dirs.command(gyre)?;
        command
            .args([
                "run",
                session.prompt,
                "--provider",
                "anthropic",
                "--model",
                "m",
            ])
            .arg("--cwd")
            .arg(dirs.workspace())
            .args([
                "--permission-mode",
                "bypassPermissions",
                "--output-format",
                "json",
            ])
            .env("ANTHROPIC_API_KEY", "bench")
            .env("ANTHROPIC_BASE_URL", mock.anthropic_base_url());
        let label = run_label(session.name, run, runs);
        let (m, resident) = if sample {
            run_sampling_memory(&mut command, SESSION_LIMIT).context(label.clone())?
        } else {
            (
                run_measured(&mut command, SESSION_LIMIT).context(label.clone())?,
                None,
            )
        };
        check_session(&m, &dirs, session).map_err(|e| dirs.failure(&format!("{e:#}"), &label))?;
        if sample && resident.is_none() {
            return Err(dirs.failure("no sample of its resident memory was taken", &label));
        }
        if run > 0 {
            samples.push(&m);
            if let Some(r) = &resident {
                samples.push_resident(r);
            }
        }
    }
    Ok(samples)
}

fn check_session(m: &Measured, dirs: &RunDirs, session: &Session) -> anyhow::Result<()> {
    if m.exit != ExitKind::Code(0) {
        bail!("{}", m.exit);
    }
    let out = read_bounded(&dirs.stdout())?;
    let result: Value =
        serde_json::from_str(out.trim()).context("stdout is not one JSON result")?;
    ensure!(
        result["subtype"] == "success",
        "subtype is {}, not \"success\"",
        result["subtype"]
    );
    ensure!(
        result["num_turns"] == session.turns,
        "num_turns is {}, not {}",
        result["num_turns"],
        session.turns
    );
    ensure!(
        result["result"] == scripts::FINAL_ANSWER,
        "the final answer is {}",
        result["result"]
    );
    (session.verify)(&dirs.workspace())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_respect_char_boundaries() {
        let text = "é".repeat(OUTPUT_EXCERPT_BYTES);
        assert!(head(&text).len() <= OUTPUT_EXCERPT_BYTES);
        assert!(tail(&text).len() <= OUTPUT_EXCERPT_BYTES);
        assert_eq!(head("short"), "short");
        assert_eq!(tail("short"), "short");
    }
}
