//! Confinement of every path a tool touches to the workspace root (and the
//! extra directories the configuration lists).
//!
//! Invariants:
//! - The root and the extra directories are canonical (symlinks resolved)
//!   from construction on.
//! - [`Workspace::resolve`] returns a path whose existing part is canonical and
//!   lies inside the root or an extra directory: symlinks are followed (also a
//!   dangling one, whose target is resolved in turn) before the check, so a
//!   link inside the workspace that points outside is refused.
//! - Relative paths are always relative to the root, never to an extra
//!   directory.
//! - Read-only directories (the skills' folders) are reached only through
//!   [`Workspace::resolve_read`], which the reading tools use; a tool that
//!   writes resolves with [`Workspace::resolve`] and is refused there.
//!
//! Trade-offs: `..` is normalised lexically before symlinks are resolved, so
//! `link/..` means the directory holding `link`, as a user reading the path
//! would expect (the shell's `cd` does the same). Resolution uses blocking
//! filesystem calls; async callers run it inside `spawn_blocking` together with
//! the rest of their file work. A path checked here could still be swapped for
//! a symlink by another process before it is opened; the workspace guards
//! against the model's mistakes, not against a hostile local user.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::ToolError;

/// How many symlinks may be followed while resolving one dangling path.
const MAX_SYMLINK_HOPS: usize = 40;

/// The directory tree tools may read and write.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    extra: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
}

impl Workspace {
    /// A workspace rooted at `root`, which must exist; it is canonicalised.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Workspace> {
        Ok(Workspace {
            root: canonical_dir(root.as_ref(), "workspace root")?,
            extra: Vec::new(),
            read_only: Vec::new(),
        })
    }

    /// A workspace rooted at `root` in which the directories `extra` may be
    /// read and written too. Each must exist; each is canonicalised.
    pub fn with_extra_dirs(root: impl AsRef<Path>, extra: Vec<PathBuf>) -> io::Result<Workspace> {
        let mut workspace = Workspace::new(root)?;
        for dir in extra {
            let dir = canonical_dir(&dir, "extra workspace directory")?;
            if !workspace.extra.contains(&dir) {
                workspace.extra.push(dir);
            }
        }
        Ok(workspace)
    }

    /// This workspace with the directories `dirs` readable too (not
    /// writable); those that do not exist are left out.
    pub fn with_read_only_dirs(mut self, dirs: impl IntoIterator<Item = PathBuf>) -> Workspace {
        for dir in dirs {
            if let Ok(dir) = canonical_dir(&dir, "read-only directory")
                && !self.read_only.contains(&dir)
            {
                self.read_only.push(dir);
            }
        }
        self
    }

    /// The canonical read-only directories, in the order given.
    pub fn read_only_dirs(&self) -> &[PathBuf] {
        &self.read_only
    }

    /// [`Workspace::resolve`] for a tool that only reads: the read-only
    /// directories are allowed too.
    pub fn resolve_read(&self, path: &str) -> Result<PathBuf, ToolError> {
        match self.resolve(path) {
            Err(ToolError::OutsideWorkspace { .. }) if !self.read_only.is_empty() => {
                let resolved = self.absolute(path)?;
                if self.read_only.iter().any(|dir| resolved.starts_with(dir)) {
                    Ok(resolved)
                } else {
                    Err(ToolError::OutsideWorkspace {
                        path: path.to_owned(),
                        root: self.root.clone(),
                    })
                }
            }
            other => other,
        }
    }

    /// `path` made absolute (relative to the root), normalised, with its
    /// symlinks resolved.
    fn absolute(&self, path: &str) -> Result<PathBuf, ToolError> {
        let given = Path::new(path);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.root.join(given)
        };
        resolve_symlinks(&normalise(&joined)).map_err(|e| ToolError::io(path, e))
    }

    /// The canonical extra directories, in the order given.
    pub fn extra_dirs(&self) -> &[PathBuf] {
        &self.extra
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The absolute, symlink-free path for `path` (absolute, or relative to the
    /// root), or [`ToolError::OutsideWorkspace`] when it lies outside the root
    /// and every extra directory.
    /// The path need not exist. An empty path means the root.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        let resolved = self.absolute(path)?;
        let allowed = resolved.starts_with(&self.root)
            || self.extra.iter().any(|dir| resolved.starts_with(dir));
        if allowed {
            Ok(resolved)
        } else {
            Err(ToolError::OutsideWorkspace {
                path: path.to_owned(),
                root: self.root.clone(),
            })
        }
    }

    /// `path` for display: relative to the root when inside it (`.` for the
    /// root itself), unchanged otherwise.
    pub fn relative(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

fn canonical_dir(dir: &Path, what: &str) -> io::Result<PathBuf> {
    let canonical = dunce::canonicalize(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("{what} {}: {e}", dir.display())))?;
    if !canonical.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{what} {} is not a directory", canonical.display()),
        ));
    }
    Ok(canonical)
}

/// Removes `.` and resolves `..` without touching the filesystem; `..` at the
/// filesystem root stays at the root.
pub fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Canonicalises the longest existing prefix of `path` (an absolute, normalised
/// path) and appends the rest. A dangling symlink on the way is replaced by its
/// target, so writing "through" it cannot escape the check.
fn resolve_symlinks(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    // Components below `current` that do not exist yet, innermost last.
    let mut missing: Vec<OsString> = Vec::new();
    let mut hops = 0;
    loop {
        match dunce::canonicalize(&current) {
            Ok(mut canonical) => {
                canonical.extend(missing.iter().rev());
                return Ok(canonical);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                let is_symlink = std::fs::symlink_metadata(&current)
                    .map(|m| m.file_type().is_symlink())
                    .unwrap_or(false);
                if is_symlink {
                    hops += 1;
                    if hops > MAX_SYMLINK_HOPS {
                        return Err(io::Error::other("too many levels of symbolic links"));
                    }
                    let target = std::fs::read_link(&current)?;
                    let base = current.parent().unwrap_or(Path::new("/"));
                    current = normalise(&base.join(target));
                    continue;
                }
                match (current.parent(), current.file_name()) {
                    (Some(parent), Some(name)) => {
                        missing.push(name.to_owned());
                        current = parent.to_path_buf();
                    }
                    _ => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_resolves_dots_lexically() {
        assert_eq!(normalise(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalise(Path::new("/../../x")), PathBuf::from("/x"));
    }

    #[test]
    fn missing_tail_is_appended_to_the_canonical_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let resolved = ws.resolve("new/deeper/file.txt").unwrap();
        assert_eq!(resolved, ws.root().join("new/deeper/file.txt"));
        assert_eq!(ws.relative(&resolved), "new/deeper/file.txt");
        assert_eq!(ws.relative(ws.root()), ".");
        assert_eq!(ws.resolve("").unwrap(), ws.root());
    }

    #[test]
    fn read_only_dirs_are_read_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let skills = tempfile::tempdir().unwrap();
        std::fs::write(skills.path().join("SKILL.md"), "x").unwrap();
        let ws = Workspace::new(dir.path())
            .unwrap()
            .with_read_only_dirs([skills.path().to_path_buf(), dir.path().join("missing")]);
        assert_eq!(ws.read_only_dirs().len(), 1);
        let file = skills.path().join("SKILL.md");
        let file = file.to_str().unwrap();
        assert!(ws.resolve_read(file).is_ok());
        assert!(matches!(
            ws.resolve(file),
            Err(ToolError::OutsideWorkspace { .. })
        ));
        assert!(ws.resolve_read("/etc/passwd").is_err());
        assert!(ws.resolve_read("inside.txt").is_ok());
    }
}
