//! The file-system seam of `read`, `write`, `edit` and `multi_edit`: where
//! text files are read and written when not on the disk (an editor's
//! unsaved buffers, through ACP's `fs/read_text_file` and
//! `fs/write_text_file`).
//!
//! Invariants:
//! - Without a [`WorkspaceFs`] in the tool context (the default) the tools
//!   use the disk as they always did; this module is not involved.
//! - With one, text goes through it and the same rules hold: the path is
//!   confined to the workspace, a file must have been read in this session
//!   and not changed since before it is changed (the content hash decides;
//!   a buffer has no modification time), the edits of one call apply all or
//!   nothing and the file is written once; the written text is recorded as
//!   seen.
//! - Images are still read from the disk (the seam carries text only).
//!
//! Trade-off: `read` through the seam takes the whole text in memory (the
//! editor sends it whole), bounded by the same output limits as on disk.

use std::fmt::Debug;
use std::path::Path;

use futures::future::BoxFuture;

use crate::edit::file::{Change, apply_changes, edit_report};
use crate::files::{ContentHasher, FileStamp, Freshness};
use crate::{ToolContext, ToolError, ToolOutput};

/// Where the tools read and write text files instead of the disk.
pub trait WorkspaceFs: Send + Sync + Debug {
    /// The text of the file at `path` (absolute); Err: one sentence why
    /// not (a missing file says "not found").
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<String, String>>;
    /// Replaces the text of the file at `path` (absolute) with `text`.
    fn write_text<'a>(&'a self, path: &'a Path, text: &'a str)
    -> BoxFuture<'a, Result<(), String>>;
}

const DEFAULT_LIMIT: usize = 2_000;
const MAX_LINE_CHARS: usize = 2_000;
const MAX_OUTPUT_BYTES: usize = 50_000;

/// Whether `read` of `file_path` goes through the seam (text, not images).
pub(crate) fn reads_text(file_path: &str) -> bool {
    let lower = file_path.to_ascii_lowercase();
    ![".png", ".jpg", ".jpeg", ".gif", ".webp"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

/// The stamp of a text that has no modification time: only its size, so
/// the content hash decides freshness.
fn stamp_of(text: &str) -> FileStamp {
    FileStamp {
        modified: None,
        len: text.len() as u64,
    }
}

fn failed(file_path: &str, why: String) -> ToolError {
    if why.to_ascii_lowercase().contains("not found") {
        ToolError::NotFound {
            path: file_path.to_owned(),
        }
    } else {
        ToolError::Failed(format!("cannot use `{file_path}` in the editor: {why}"))
    }
}

/// `read` through `fs`: numbered lines of a window, the file recorded as
/// seen.
pub(crate) async fn read(
    fs: &dyn WorkspaceFs,
    ctx: &ToolContext,
    file_path: &str,
    offset: Option<usize>,
    limit: Option<usize>,
) -> Result<ToolOutput, ToolError> {
    let path = ctx.workspace.resolve(file_path)?;
    let shown = ctx.workspace.relative(&path);
    let text = fs
        .read_text(&path)
        .await
        .map_err(|why| failed(file_path, why))?;
    ctx.session.files.record(
        &path,
        stamp_of(&text),
        Some(ContentHasher::of(text.as_bytes())),
    );
    let total = text.lines().count();
    if total == 0 {
        return Ok(ToolOutput::text(
            format!("read {shown} (empty)"),
            "(the file is empty)",
        ));
    }
    let first = offset.unwrap_or(1).max(1);
    if first > total {
        return Err(ToolError::invalid(
            "read",
            format!("offset {first} is past the end of `{shown}`, which has {total} lines"),
        ));
    }
    let last_wanted = first.saturating_add(limit.unwrap_or(DEFAULT_LIMIT)) - 1;
    let mut out = String::new();
    let mut last_shown = first - 1;
    for (n, line) in text.lines().enumerate().skip(first - 1) {
        let n = n + 1;
        if n > last_wanted || out.len() >= MAX_OUTPUT_BYTES {
            break;
        }
        let line: String = line.chars().take(MAX_LINE_CHARS).collect();
        out.push_str(&format!("{n:>6}\t{line}\n"));
        last_shown = n;
    }
    if last_shown < total {
        out.push_str(&format!(
            "\n[showing lines {first}-{last_shown} of {total}; call read with offset={} to continue]",
            last_shown + 1
        ));
    }
    Ok(ToolOutput::text(
        format!("read {shown} (lines {first}-{last_shown} of {total})"),
        out,
    ))
}

/// The current text of `path` if the session may change it (read, and not
/// changed since); `Ok(None)`: there is no such file (write may create it).
async fn fresh_text(
    fs: &dyn WorkspaceFs,
    ctx: &ToolContext,
    path: &Path,
    file_path: &str,
) -> Result<Option<String>, ToolError> {
    let text = match fs.read_text(path).await {
        Ok(text) => text,
        Err(why) => {
            return match failed(file_path, why) {
                ToolError::NotFound { .. } => Ok(None),
                other => Err(other),
            };
        }
    };
    let hash = ContentHasher::of(text.as_bytes());
    match ctx
        .session
        .files
        .freshness(path, stamp_of(&text), || Some(hash))
    {
        Freshness::Fresh => Ok(Some(text)),
        Freshness::NotRead => Err(ToolError::NotReadYet {
            path: file_path.to_owned(),
        }),
        Freshness::Changed(seen) => Err(ToolError::Stale {
            path: file_path.to_owned(),
            read_at: seen.at_display(),
        }),
    }
}

async fn store(
    fs: &dyn WorkspaceFs,
    ctx: &ToolContext,
    path: &Path,
    file_path: &str,
    text: &str,
) -> Result<(), ToolError> {
    fs.write_text(path, text)
        .await
        .map_err(|why| failed(file_path, why))?;
    ctx.session.files.record(
        path,
        stamp_of(text),
        Some(ContentHasher::of(text.as_bytes())),
    );
    Ok(())
}

/// `write` through `fs`.
pub(crate) async fn write(
    fs: &dyn WorkspaceFs,
    ctx: &ToolContext,
    file_path: &str,
    content: &str,
) -> Result<ToolOutput, ToolError> {
    let path = ctx.workspace.resolve(file_path)?;
    let shown = ctx.workspace.relative(&path);
    let existed = fresh_text(fs, ctx, &path, file_path).await?.is_some();
    store(fs, ctx, &path, file_path, content).await?;
    let lines = match content.lines().count() {
        1 => "1 line".to_owned(),
        n => format!("{n} lines"),
    };
    let verb = if existed { "overwrote" } else { "created" };
    Ok(ToolOutput::text(
        format!("write {shown} ({lines})"),
        format!("{verb} {shown}: wrote {} bytes ({lines})", content.len()),
    ))
}

/// `edit` and `multi_edit` through `fs`.
pub(crate) async fn change(
    fs: &dyn WorkspaceFs,
    ctx: &ToolContext,
    tool: &str,
    file_path: &str,
    changes: &[Change],
) -> Result<ToolOutput, ToolError> {
    let path = ctx.workspace.resolve(file_path)?;
    let shown = ctx.workspace.relative(&path);
    let Some(content) = fresh_text(fs, ctx, &path, file_path).await? else {
        return Err(ToolError::NotFound {
            path: file_path.to_owned(),
        });
    };
    let applied = apply_changes(&shown, &content, changes)?;
    store(fs, ctx, &path, file_path, &applied.text).await?;
    Ok(edit_report(tool, &shown, &content, &applied))
}
