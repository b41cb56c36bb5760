//! The persistent working directory: where a foreground command starts, and
//! where the next one will.
//!
//! How the directory comes back: the shell runs
//! `trap 'pwd -P >| FILE' EXIT; COMMAND`, so it writes its final directory to
//! a private temp file however it ends — falling off the end, `exit N`, `set -e`
//! — and the EXIT trap leaves the exit status alone. Subshells do not inherit
//! the trap, so `(cd x)` changes nothing, as in a terminal.
//!
//! Invariants: the session's directory is always inside the workspace (a
//! command that ends outside it resets it to the root, and says so) and
//! exists when a command starts (a deleted one is reset to the root, and the
//! result says so).
//!
//! Trade-offs: a command that sets its own EXIT trap, `exec`s another
//! program, or is killed (timeout, cancel) leaves the directory as it was.
//! The temp file is created and removed off the runtime; if the call is
//! abandoned mid-run, dropping it unlinks the file on the spot.

use std::path::{Path, PathBuf};

use tempfile::TempPath;

use crate::{ToolContext, ToolError};

/// The directory a command starts in, and a note when the session's
/// directory had to be reset first.
pub(crate) async fn start_dir(ctx: &ToolContext) -> (PathBuf, Option<String>) {
    let root = ctx.workspace.root().to_path_buf();
    let Some(dir) = ctx.session.shell.cwd() else {
        return (root, None);
    };
    let probe = dir.clone();
    let exists = tokio::task::spawn_blocking(move || probe.is_dir())
        .await
        .unwrap_or(false);
    if exists {
        return (dir, None);
    }
    ctx.session.shell.set_cwd(None);
    let note = format!(
        "Note: the working directory `{}` no longer exists; the command ran in the workspace \
         root `{}`.",
        dir.display(),
        root.display()
    );
    (root, Some(note))
}

/// The temp file the command's final directory is written to.
pub(crate) struct CwdProbe {
    file: TempPath,
}

impl CwdProbe {
    pub(crate) async fn new() -> Result<CwdProbe, ToolError> {
        let file = tokio::task::spawn_blocking(|| {
            tempfile::Builder::new()
                .prefix("gyre-cwd-")
                .tempfile()
                .map(tempfile::NamedTempFile::into_temp_path)
        })
        .await
        .map_err(|e| ToolError::Failed(format!("the tool crashed: {e}")))?
        .map_err(|e| ToolError::Failed(format!("could not create a temp file: {e}")))?;
        Ok(CwdProbe { file })
    }

    /// The temp file (a sandboxed command must be allowed to write it).
    pub(crate) fn path(&self) -> &Path {
        &self.file
    }

    /// `command` preceded by the trap that reports its final directory.
    pub(crate) fn script(&self, command: &str) -> Result<String, ToolError> {
        let quote = |s: &str| {
            shlex::try_quote(s)
                .map(|q| q.into_owned())
                .map_err(|e| ToolError::Failed(format!("could not quote a temp path: {e}")))
        };
        let path = self.file.to_string_lossy();
        let action = format!("pwd -P >| {} 2>/dev/null", quote(&path)?);
        // One line with the command, so that bash reports its line numbers as
        // the model wrote them.
        Ok(format!("trap {} EXIT; {command}", quote(&action)?))
    }

    /// The directory the shell reported (none if it never ran the trap), and
    /// the temp file removed.
    pub(crate) async fn read(self) -> Option<PathBuf> {
        tokio::task::spawn_blocking(move || {
            let text = std::fs::read_to_string(&self.file).ok()?;
            drop(self.file);
            let dir = text.strip_suffix('\n').unwrap_or(&text);
            (!dir.is_empty()).then(|| PathBuf::from(dir))
        })
        .await
        .ok()
        .flatten()
    }
}

/// Keeps `reported` as the session's directory when it is inside the
/// workspace; otherwise resets to the root and returns a note saying so.
pub(crate) async fn settle(
    ctx: &ToolContext,
    started_in: &Path,
    reported: Option<PathBuf>,
) -> Option<String> {
    let reported = reported?;
    if reported == started_in {
        return None;
    }
    let workspace = ctx.workspace.clone();
    let shown = reported.clone();
    let resolved =
        tokio::task::spawn_blocking(move || workspace.resolve(&reported.to_string_lossy()).ok())
            .await
            .ok()
            .flatten();
    match resolved {
        Some(dir) if dir == ctx.workspace.root() => {
            ctx.session.shell.set_cwd(None);
            None
        }
        Some(dir) => {
            ctx.session.shell.set_cwd(Some(dir));
            None
        }
        None => {
            ctx.session.shell.set_cwd(None);
            Some(format!(
                "Note: the command ended in `{}`, outside the workspace; the next command \
                 starts in the workspace root `{}`.",
                shown.display(),
                ctx.workspace.root().display()
            ))
        }
    }
}
