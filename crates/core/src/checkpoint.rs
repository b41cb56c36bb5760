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
//! - Nothing a killed git leaves can wedge the store: every snapshot and
//!   restore works on a private copy of the shared index (its own file, so
//!   its own `.lock`), which replaces the shared index atomically when the
//!   operation succeeds (so later snapshots keep git's stat cache). A
//!   private index (or lock) a killed git left behind is removed once it is
//!   older than any git of ours may run, as is a stale `index.lock` of the
//!   shared index (left by gyre versions that locked it).
//! - Within the process, operations on one store still run one at a time.
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
/// The prefix of a private index's file name in the shadow store.
const PRIVATE_INDEX: &str = "index-gyre-";

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
        let index = self.private_index().await?;
        let tree = async {
            self.git(&index, &["add", "--all", "--", "."]).await?;
            self.git(&index, &["write-tree"]).await
        }
        .await;
        let tree = self.settle_index(index, tree).await?;
        Ok(tree.trim().to_string())
    }

    /// Puts the workspace's files back as snapshot `tree` had them.
    pub async fn restore(&self, tree: &str) -> Result<Restored, CheckpointError> {
        let _one_at_a_time = self.busy.lock().await;
        self.ensure_store().await?;
        let index = self.private_index().await?;
        let restored = self.restore_with(&index, tree).await;
        self.settle_index(index, restored).await
    }

    async fn restore_with(&self, index: &Path, tree: &str) -> Result<Restored, CheckpointError> {
        // The index becomes the files as they are now; what it holds beyond
        // the snapshot was made since, and goes.
        self.git(index, &["add", "--all", "--", "."]).await?;
        let added = self
            .git(
                index,
                &[
                    "diff-index",
                    "--cached",
                    "--name-only",
                    "--diff-filter=A",
                    "-z",
                    tree,
                ],
            )
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
        self.git(index, &["read-tree", tree]).await?;
        self.git(index, &["checkout-index", "--all", "--force"])
            .await?;
        let listed = self.git(index, &["ls-files", "-z"]).await?;
        restored.written = listed.split('\0').filter(|n| !n.is_empty()).count();
        Ok(restored)
    }

    /// A private copy of the shared index (none yet: a new, empty one), after
    /// clearing what killed gits left behind.
    async fn private_index(&self) -> Result<PathBuf, CheckpointError> {
        self.clear_leftovers().await;
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let private = self
            .git_dir
            .join(format!("{PRIVATE_INDEX}{}-{n}", std::process::id()));
        match tokio::fs::copy(self.git_dir.join("index"), &private).await {
            Ok(_) => Ok(private),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(private),
            Err(source) => Err(CheckpointError::File {
                path: private,
                source,
            }),
        }
    }

    /// Makes a private index the shared one when `outcome` succeeded;
    /// removes it either way.
    async fn settle_index<T>(
        &self,
        private: PathBuf,
        outcome: Result<T, CheckpointError>,
    ) -> Result<T, CheckpointError> {
        if outcome.is_ok() && private.exists() {
            let shared = self.git_dir.join("index");
            if let Err(source) = tokio::fs::rename(&private, &shared).await {
                let _ = tokio::fs::remove_file(&private).await;
                return Err(CheckpointError::File {
                    path: shared,
                    source,
                });
            }
        } else {
            let _ = tokio::fs::remove_file(&private).await;
        }
        outcome
    }

    /// Removes private indexes, their locks, and a lock of the shared index
    /// older than any git of ours may run: their git was killed.
    async fn clear_leftovers(&self) {
        let Ok(mut entries) = tokio::fs::read_dir(&self.git_dir).await else {
            return;
        };
        while let Ok(Some(entry)) = entries.next_entry().await {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !(name.starts_with(PRIVATE_INDEX) || name == "index.lock") {
                continue;
            }
            let old = entry
                .metadata()
                .await
                .and_then(|m| m.modified())
                .ok()
                .and_then(|at| at.elapsed().ok())
                .is_some_and(|age| age > GIT_TIMEOUT);
            if old {
                tracing::info!(file = %name, "removing a checkpoint index a killed git left");
                let _ = tokio::fs::remove_file(entry.path()).await;
            }
        }
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

    /// Runs one git command on the shadow store with `index`; returns its
    /// stdout.
    async fn git(&self, index: &Path, args: &[&str]) -> Result<String, CheckpointError> {
        let command = args.first().copied().unwrap_or("").to_string();
        let mut cmd = Command::new("git");
        cmd.args(args)
            .env("GIT_DIR", &self.git_dir)
            .env("GIT_WORK_TREE", &self.work_tree)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_INDEX_FILE", index)
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
        Err(CheckpointError::Git { command, stderr })
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

    #[tokio::test]
    async fn a_stale_lock_left_by_a_killed_git_wedges_nothing() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        write(ws.path(), "a.txt", "one\n");
        let dir = Checkpointer::dir_for(home.path(), ws.path());
        let store = Checkpointer::new(&dir, ws.path());
        store.snapshot().await.unwrap();
        // What a git killed during `add` leaves: the shared index's lock and
        // a private index with its lock, all fresh.
        for name in ["index.lock", "index-gyre-1-0", "index-gyre-1-0.lock"] {
            std::fs::write(dir.join(name), "half written").unwrap();
        }
        write(ws.path(), "a.txt", "two\n");
        let tree = store.snapshot().await.unwrap();
        write(ws.path(), "a.txt", "three\n");
        let restored = store.restore(&tree).await.unwrap();
        assert_eq!(restored.written, 1);
        assert_eq!(
            std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
            "two\n"
        );
        // Once older than any git may run, the leftovers are cleared.
        let old = std::time::SystemTime::now() - GIT_TIMEOUT * 2;
        for name in ["index.lock", "index-gyre-1-0", "index-gyre-1-0.lock"] {
            let file = std::fs::File::options()
                .write(true)
                .open(dir.join(name))
                .unwrap();
            file.set_modified(old).unwrap();
        }
        store.snapshot().await.unwrap();
        for name in ["index.lock", "index-gyre-1-0", "index-gyre-1-0.lock"] {
            assert!(!dir.join(name).exists(), "{name} was cleared");
        }
        assert!(
            dir.join("index").exists(),
            "the shared index keeps the stat cache"
        );
    }
}
