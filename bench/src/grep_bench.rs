//! gyre's `grep` tool against ripgrep (`rg`) on the generated tree (see
//! `tree`), in two output modes.
//!
//! Invariants:
//! - Both search the same tree for the same pattern with the same ignore
//!   semantics: `.gitignore` honoured outside a git repository (gyre always;
//!   `rg --no-require-git`), hidden files and binary files skipped, links not
//!   followed, no config file (`rg --no-config`).
//! - gyre's tool runs in-process (see `inproc`): no process start-up. `rg` is a
//!   process (see `runner`): its wall time includes fork + exec and writing its
//!   output to a file. rg searches with its default threads (one per core);
//!   gyre's walk is sequential and sorted. CPU is reported for both so the
//!   difference in parallelism is visible.
//! - Every run is checked: gyre's output is not cut and lists exactly the
//!   number of files the tree's manifest expects; every run of either tool
//!   must report the same sorted lines as gyre's warm-up run.
//! - One warm-up run per tool and mode (checked, not recorded); it also warms
//!   the page cache, so this measures searching a tree in memory.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use serde_json::json;

use crate::inproc::{Tools, process_cpu};
use crate::runner::{ExitKind, run_measured};
use crate::tree::{PATTERN, Tree};

/// One `rg` run must be done within this.
const RG_LIMIT: Duration = Duration::from_secs(60);
/// The most of rg's output read back (the expected output is ~20 KB).
const MAX_RG_OUTPUT: u64 = 8 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    FilesWithMatches,
    Content,
}

impl Mode {
    pub fn label(self) -> &'static str {
        match self {
            Mode::FilesWithMatches => "files_with_matches",
            Mode::Content => "content",
        }
    }

    fn rg_flags(self) -> &'static [&'static str] {
        match self {
            Mode::FilesWithMatches => &["--files-with-matches"],
            Mode::Content => &["--line-number", "--no-heading", "--with-filename"],
        }
    }
}

/// Wall and CPU times of one tool in one mode.
#[derive(Debug, Default, Clone)]
pub struct Timings {
    pub wall_ms: Vec<f64>,
    pub cpu_ms: Vec<f64>,
}

/// gyre's `grep` in `mode`; returns the timings and the sorted output lines
/// of the warm-up run (the reference rg must reproduce).
pub fn gyre(
    tools: &Tools,
    tree: &Tree,
    mode: Mode,
    runs: usize,
) -> anyhow::Result<(Timings, Vec<String>)> {
    let mut timings = Timings::default();
    let mut reference = Vec::new();
    for run in 0..=runs {
        let arguments = json!({"pattern": PATTERN, "output_mode": mode.label()});
        let cpu_before = process_cpu();
        let (wall, text) = tools.timed("grep", arguments)?;
        let cpu = process_cpu().saturating_sub(cpu_before);
        let label = run_label("gyre grep", mode, run, runs);
        let lines = sorted_lines(&text);
        if let Some(cut) = lines.iter().find(|l| l.starts_with('[')) {
            bail!("{label}: the output was cut ({cut}), so the search stopped early");
        }
        let files = distinct_files(&lines, mode);
        ensure!(
            files == tree.matching_files,
            "{label}: {files} files reported, the tree has {} matching files",
            tree.matching_files
        );
        if run == 0 {
            reference = lines;
        } else {
            ensure!(
                lines == reference,
                "{label}: the output differs from the warm-up run's"
            );
            timings.wall_ms.push(wall.as_secs_f64() * 1e3);
            timings.cpu_ms.push(cpu.as_secs_f64() * 1e3);
        }
    }
    Ok((timings, reference))
}

/// `rg` in `mode`; every run must print exactly `reference` (sorted).
pub fn rg(tree: &Tree, mode: Mode, runs: usize, reference: &[String]) -> anyhow::Result<Timings> {
    let rg = which("rg").context(
        "`rg` (ripgrep) is not on PATH, so gyre's grep has nothing to be compared with; \
         install it (Debian: apt-get install ripgrep)",
    )?;
    let out_dir = tempfile::Builder::new()
        .prefix("gyre-bench-rg-")
        .tempdir()
        .context("cannot make a temp dir")?;
    let stdout_path = out_dir.path().join("stdout");
    let stderr_path = out_dir.path().join("stderr");
    let mut timings = Timings::default();
    for run in 0..=runs {
        let mut command = Command::new(&rg);
        command
            .args(["--no-config", "--no-require-git", "--color", "never"])
            .args(mode.rg_flags())
            .arg("--")
            .arg(PATTERN)
            .current_dir(&tree.root)
            .env_remove("RIPGREP_CONFIG_PATH")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout_path).context("cannot create rg's stdout")?)
            .stderr(std::fs::File::create(&stderr_path).context("cannot create rg's stderr")?);
        let label = run_label("rg", mode, run, runs);
        let m = run_measured(&mut command, RG_LIMIT).context(label.clone())?;
        if m.exit != ExitKind::Code(0) {
            let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            bail!("{label}: {} ({})", m.exit, stderr.trim());
        }
        let text = read_bounded(&stdout_path)?;
        let lines = sorted_lines(&text);
        if lines != reference {
            bail!(
                "{label}: rg reports {} lines in {} files, gyre {} lines in {} files (or \
                 different ones), so the two searches are not equivalent",
                lines.len(),
                distinct_files(&lines, mode),
                reference.len(),
                distinct_files(reference, mode)
            );
        }
        if run > 0 {
            timings.wall_ms.push(m.wall_ms());
            timings.cpu_ms.push(m.cpu_ms());
        }
    }
    Ok(timings)
}

fn run_label(tool: &str, mode: Mode, run: usize, runs: usize) -> String {
    if run == 0 {
        format!("{tool} {}, warm-up run", mode.label())
    } else {
        format!("{tool} {}, run {run} of {runs}", mode.label())
    }
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// Files named by the output lines (`path` or `path:line:text`).
fn distinct_files(lines: &[String], mode: Mode) -> usize {
    let mut files: Vec<&str> = lines
        .iter()
        .map(|l| match mode {
            Mode::FilesWithMatches => l.as_str(),
            Mode::Content => l.split(':').next().unwrap_or(""),
        })
        .collect();
    files.sort_unstable();
    files.dedup();
    files.len()
}

fn read_bounded(path: &Path) -> anyhow::Result<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .with_context(|| format!("cannot open {}", path.display()))?
        .take(MAX_RG_OUTPUT)
        .read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The first executable `name` on PATH.
fn which(name: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| {
            std::fs::metadata(path)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_files_in_both_modes() {
        let lines: Vec<String> = ["a/b.rs:3:x", "a/b.rs:9:y", "c.rs:1:z"]
            .map(String::from)
            .to_vec();
        assert_eq!(distinct_files(&lines, Mode::Content), 2);
        assert_eq!(distinct_files(&lines, Mode::FilesWithMatches), 3);
        assert_eq!(sorted_lines("b\n\na\n"), vec!["a", "b"]);
    }

    #[test]
    fn finds_programs_on_path() {
        assert!(which("sh").is_some());
        assert!(which("no-such-program-gyre-bench").is_none());
    }
}
