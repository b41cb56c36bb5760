//! Checkpoints of the workspace's files, in a shadow git store outside the
//! project, so a session can be rewound to how the files were before a
//! mutating tool ran.
//!
//! Invariants:
//! - The shadow store never touches the project's own `.git`: it has its
//!   own directory (under `$GYRE_HOME`), its own index, and git's plumbing
//!   commands only (`add -A`, `write-tree`, `read-tree`, `checkout-index`);
//!   no commits, refs, hooks or config of the user's are involved.
//! - A snapshot covers the files git would track: everything not ignored by
//!   the project's `.gitignore` files (the project's `.git` is never
//!   included). A tree id names it; the same files give the same id.
//! - Restoring a snapshot writes back every file of it and removes the files
//!   made since that it does not hold (ignored files are left alone).
//! - Snapshots of one store are taken one at a time within the process (git's
//!   index lock would refuse a second), and a lock left by a killed git is
//!   retried briefly.
//!
//! Cost: the first snapshot hashes every tracked file; later ones only stat
//! them (git's index), so a snapshot before each mutating call is cheap in
//! a project of ordinary size.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;
use tokio::sync::Mutex;

/// How long a snapshot may take before it is abandoned.
const GIT_TIMEOUT: Duration = Duration::from_secs(60);
/// Tries when another git holds the shadow index's lock.
const LOCK_RETRIES: u32 = 10;

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("could not run git for a checkpoint ({0}); is git installed?")]
    Spawn(std::io::Error),
    #[error("git {command} failed for a checkpoint: {stderr}")]
    Git { command: String, stderr: String },
    #[error("git {0} took too long for a checkpoint")]
    Timeout(String),
    #[error("could not write {path} for a checkpoint: {source}")]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What a restore changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// Files the snapshot holds, written back.
    pub written: usize,
    /// Files made after the snapshot, removed.
    pub removed: Vec<PathBuf>,
}

/// The shadow store of one workspace.
#[derive(Debug)]
pub struct Checkpointer {
    git_dir: PathBuf,
    work_tree: PathBuf,
    /// One git at a time on this store (its index has a lock).
    busy: Mutex<()>,
}

impl Checkpointer {
    /// A store for `work_tree` kept in `git_dir` (created on first use).
    pub fn new(git_dir: impl Into<PathBuf>, work_tree: impl Into<PathBuf>) -> Self {
        Self {
            git_dir: git_dir.into(),
            work_tree: work_tree.into(),
            busy: Mutex::new(()),
        }
    }

    /// Where the shadow store of `work_tree` lives under `root`: one
    /// directory per workspace, named by a hash of its path.
    pub fn dir_for(root: &Path, work_tree: &Path) -> PathBuf {
        // FNV-1a: stable across builds and platforms (std's hasher is not).
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in work_tree.as_os_str().as_encoded_bytes() {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        root.join(format!("{hash:016x}.git"))
    }

    /// Snapshots the workspace's files; returns the snapshot's id.
    pub async fn snapshot(&self) -> Result<String, CheckpointError> {
        let _one_at_a_time = self.busy.lock().await;
        self.ensure_store().await?;
        self.git(&["add", "--all", "--", "."]).await?;
        let tree = self.git(&["write-tree"]).await?;
        Ok(tree.trim().to_string())
    }

    /// Puts the workspace's files back as snapshot `tree` had them.
    pub async fn restore(&self, tree: &str) -> Result<Restored, CheckpointError> {
        let _one_at_a_time = self.busy.lock().await;
        self.ensure_store().await?;
        // The index becomes the files as they are now; what it holds beyond
        // the snapshot was made since, and goes.
        self.git(&["add", "--all", "--", "."]).await?;
        let added = self
            .git(&[
                "diff-index",
                "--cached",
                "--name-only",
                "--diff-filter=A",
                "-z",
                tree,
            ])
            .await?;
        let mut restored = Restored::default();
        for name in added.split('\0').filter(|n| !n.is_empty()) {
            let path = self.work_tree.join(name);
            match tokio::fs::remove_file(&path).await {
                Ok(()) => restored.removed.push(PathBuf::from(name)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(CheckpointError::File { path, source }),
            }
        }
        self.git(&["read-tree", tree]).await?;
        self.git(&["checkout-index", "--all", "--force"]).await?;
        let listed = self.git(&["ls-files", "-z"]).await?;
        restored.written = listed.split('\0').filter(|n| !n.is_empty()).count();
        Ok(restored)
    }

    /// Makes the shadow store on first use: the few files a git directory
    /// is (written directly, no `git init` process on the first call's path).
    async fn ensure_store(&self) -> Result<(), CheckpointError> {
        if self.git_dir.join("HEAD").exists() {
            return Ok(());
        }
        let file = |path: PathBuf| move |source| CheckpointError::File { path, source };
        for dir in ["objects", "refs/heads", "refs/tags"] {
            let path = self.git_dir.join(dir);
            tokio::fs::create_dir_all(&path)
                .await
                .map_err(file(path.clone()))?;
        }
        // Snapshots are loose trees no ref holds: never let git collect them;
        // files go in byte for byte.
        let config = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tautocrlf = false\n[gc]\n\tauto = 0\n";
        let path = self.git_dir.join("config");
        tokio::fs::write(&path, config)
            .await
            .map_err(file(path.clone()))?;
        // HEAD last: its presence says the store is whole.
        let path = self.git_dir.join("HEAD");
        tokio::fs::write(&path, "ref: refs/heads/main\n")
            .await
            .map_err(file(path.clone()))?;
        Ok(())
    }

    /// Runs one git command on the shadow store; returns its stdout.
    async fn git(&self, args: &[&str]) -> Result<String, CheckpointError> {
        let command = args.first().copied().unwrap_or("").to_string();
        for attempt in 0..=LOCK_RETRIES {
            let mut cmd = Command::new("git");
            cmd.args(args)
                .env("GIT_DIR", &self.git_dir)
                .env("GIT_WORK_TREE", &self.work_tree)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env_remove("GIT_INDEX_FILE")
                .env_remove("GIT_OBJECT_DIRECTORY")
                .current_dir(&self.work_tree)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            let output = tokio::time::timeout(GIT_TIMEOUT, cmd.output())
                .await
                .map_err(|_| CheckpointError::Timeout(command.clone()))?
                .map_err(CheckpointError::Spawn)?;
            if output.status.success() {
                return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
            }
            let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
            // Another process's git (or a killed one) holds the index lock.
            if stderr.contains("index.lock") && attempt < LOCK_RETRIES {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            return Err(CheckpointError::Git { command, stderr });
        }
        Err(CheckpointError::Git {
            command,
            stderr: "the shadow index stayed locked".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[tokio::test]
    async fn a_restore_brings_back_changed_and_deleted_files_and_removes_new_ones() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        write(ws.path(), "a.txt", "alpha\n");
        write(ws.path(), "sub/b.txt", "beta\n");
        write(ws.path(), ".gitignore", "*.log\n");
        write(ws.path(), "keep.log", "ignored\n");
        let store = Checkpointer::new(Checkpointer::dir_for(home.path(), ws.path()), ws.path());
        let tree = store.snapshot().await.unwrap();
        assert_eq!(store.snapshot().await.unwrap(), tree, "same files, same id");

        write(ws.path(), "a.txt", "changed\n");
        std::fs::remove_file(ws.path().join("sub/b.txt")).unwrap();
        write(ws.path(), "new.txt", "made later\n");
        write(ws.path(), "late.log", "ignored too\n");
        let restored = store.restore(&tree).await.unwrap();

        assert_eq!(
            std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
            "alpha\n"
        );
        assert_eq!(
            std::fs::read_to_string(ws.path().join("sub/b.txt")).unwrap(),
            "beta\n"
        );
        assert!(!ws.path().join("new.txt").exists());
        assert_eq!(restored.removed, vec![PathBuf::from("new.txt")]);
        assert_eq!(restored.written, 3);
        // Ignored files are not the checkpoint's business.
        assert!(ws.path().join("late.log").exists());
        assert!(ws.path().join("keep.log").exists());
        // The project's own git is untouched (there is none here, and the
        // shadow store lives outside the workspace).
        assert!(!ws.path().join(".git").exists());
    }

    #[tokio::test]
    async fn a_project_with_its_own_git_keeps_it() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(ws.path())
                .output()
                .unwrap()
        };
        git(&["init", "-q"]);
        write(ws.path(), "a.txt", "one\n");
        let store = Checkpointer::new(Checkpointer::dir_for(home.path(), ws.path()), ws.path());
        let tree = store.snapshot().await.unwrap();
        write(ws.path(), "a.txt", "two\n");
        store.restore(&tree).await.unwrap();
        assert_eq!(
            std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
            "one\n"
        );
        let status = String::from_utf8(git(&["status", "--porcelain"]).stdout).unwrap();
        assert_eq!(status, "?? a.txt\n", "the project's index was not touched");
    }
}
