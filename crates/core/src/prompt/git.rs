//! A short `git status` for the environment layer of the prompt.
//!
//! Taken once per process (the prompt must not change from turn to turn),
//! by one `git` process with a short timeout, off the async runtime's
//! threads, and only inside a repository: outside one it costs nothing.
//! At most [`MAX_LINES`] lines enter the prompt; the rest is counted.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// Status lines the prompt carries at most.
pub const MAX_LINES: usize = 20;

/// How long `git status` may take before the prompt goes without it.
const TIMEOUT: Duration = Duration::from_secs(2);

/// `git status --short` of the repository holding `cwd` (`Some("")` when
/// clean), or `None` outside a repository, without git, or on a timeout.
pub async fn git_status(cwd: &Path) -> Option<String> {
    if !cwd.ancestors().any(|dir| dir.join(".git").exists()) {
        return None;
    }
    let mut command = tokio::process::Command::new("git");
    command
        .args(["status", "--porcelain=v1", "--untracked-files=normal"])
        .current_dir(cwd)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(TIMEOUT, command.output())
        .await
        .ok()?
        .ok()?;
    if !output.status.success() {
        return None;
    }
    Some(shorten(&String::from_utf8_lossy(&output.stdout)))
}

fn shorten(status: &str) -> String {
    let lines: Vec<&str> = status.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out = lines
        .iter()
        .take(MAX_LINES)
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    if lines.len() > MAX_LINES {
        out.push_str(&format!("\n… and {} more", lines.len() - MAX_LINES));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_statuses_are_cut_and_counted() {
        let status: String = (0..25).map(|i| format!(" M f{i}\n")).collect();
        let short = shorten(&status);
        assert_eq!(short.lines().count(), MAX_LINES + 1);
        assert!(short.ends_with("… and 5 more"));
        assert_eq!(shorten(""), "");
    }

    #[tokio::test]
    async fn outside_a_repository_there_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(git_status(dir.path()).await, None);
    }

    #[tokio::test]
    async fn a_repository_reports_its_changes() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .output()
                .unwrap()
        };
        git(&["init", "-q"]);
        assert_eq!(git_status(dir.path()).await.as_deref(), Some(""));
        std::fs::write(dir.path().join("new.txt"), "x").unwrap();
        assert_eq!(git_status(dir.path()).await.as_deref(), Some("?? new.txt"));
    }
}
