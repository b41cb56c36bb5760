//! `write`: create or overwrite a file with the given content.
//!
//! Invariants: the target is resolved inside the workspace; missing parent
//! directories are created; a directory is never replaced. The content is
//! written as given, byte for byte (no newline added or converted).
//!
//! An existing file is overwritten only when the session has read it and it
//! has not changed since (see [`crate::FileTracker`]): the model must not
//! replace what it has not seen. A new file needs no read. What was written
//! is recorded as seen, so the model may go on to edit it.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::files::{ContentHasher, FileStamp, Freshness};
use crate::{FileTracker, ToolContext, ToolError, ToolKind, ToolOutput, TypedTool, Workspace};

const NAME: &str = "write";

/// Above this size the current content of a file about to be overwritten is
/// not hashed again; its mtime and size decide whether it changed.
const MAX_HASHED_BYTES: u64 = 16 * 1024 * 1024;

const DESCRIPTION: &str = "Write a file, replacing it if it exists; missing parent \
directories are created. The content is written exactly as given. An existing file must have \
been read in this session first. To change part of an existing file prefer `edit`, which sends \
only the change.";

#[derive(Deserialize, JsonSchema)]
pub struct WriteArgs {
    /// Path of the file, absolute or relative to the workspace root.
    file_path: String,
    /// The complete new content of the file.
    content: String,
}

/// The `write` tool.
#[derive(Debug, Default)]
pub struct WriteTool;

impl TypedTool for WriteTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = WriteArgs;

    fn touches<'a>(&self, args: &'a Self::Args) -> Option<(&'a str, crate::FileUse)> {
        Some((&args.file_path, crate::FileUse::Changed))
    }

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::Mutating
    }

    fn call<'a>(
        &'a self,
        args: WriteArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            if let Some(fs) = &ctx.fs {
                let (path, content) = (&args.file_path, &args.content);
                return crate::workspace_fs::write(fs.as_ref(), ctx, path, content).await;
            }
            let workspace = ctx.workspace.clone();
            let session = ctx.session.clone();
            crate::blocking_to_completion(move || write(&workspace, &session.files, &args)).await
        })
    }
}

fn write(
    workspace: &Workspace,
    files: &FileTracker,
    args: &WriteArgs,
) -> Result<ToolOutput, ToolError> {
    let path = workspace.resolve(&args.file_path)?;
    let shown = workspace.relative(&path);
    let existed = match std::fs::metadata(&path) {
        Ok(m) if m.is_dir() => {
            return Err(ToolError::IsADirectory {
                path: args.file_path.clone(),
            });
        }
        Ok(m) if !m.is_file() => {
            // Opening a FIFO for writing would wait for a reader forever.
            return Err(ToolError::Failed(format!(
                "`{shown}` is not a regular file (a pipe, socket or device); write only writes files"
            )));
        }
        Ok(m) => {
            let current = || {
                (m.len() <= MAX_HASHED_BYTES)
                    .then(|| std::fs::read(&path).ok())
                    .flatten()
                    .map(|bytes| ContentHasher::of(&bytes))
            };
            match files.freshness(&path, FileStamp::of(&m), current) {
                Freshness::Fresh => true,
                // `read` refuses binary files, so "read it first" would lead
                // nowhere: say what the file is instead.
                Freshness::NotRead if looks_binary(&path) => {
                    return Err(ToolError::Binary {
                        path: args.file_path.clone(),
                    });
                }
                Freshness::NotRead => {
                    return Err(ToolError::NotReadYet {
                        path: args.file_path.clone(),
                    });
                }
                Freshness::Changed(seen) => {
                    return Err(ToolError::Stale {
                        path: args.file_path.clone(),
                        read_at: seen.at_display(),
                    });
                }
            }
        }
        Err(_) => false,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| ToolError::io(&args.file_path, e))?;
    }
    std::fs::write(&path, &args.content).map_err(|e| ToolError::io(&args.file_path, e))?;
    let written = std::fs::metadata(&path).map_err(|e| ToolError::io(&args.file_path, e))?;
    files.record(
        &path,
        FileStamp::of(&written),
        Some(ContentHasher::of(args.content.as_bytes())),
    );
    let lines = args.content.lines().count();
    let bytes = args.content.len();
    let verb = if existed { "overwrote" } else { "created" };
    let lines = if lines == 1 {
        "1 line".to_owned()
    } else {
        format!("{lines} lines")
    };
    Ok(ToolOutput::text(
        format!("write {shown} ({lines})"),
        format!("{verb} {shown}: wrote {bytes} bytes ({lines})"),
    ))
}

/// Whether the file at `path` starts like a binary file.
fn looks_binary(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut head = Vec::with_capacity(8 * 1024);
    std::fs::File::open(path)
        .and_then(|f| f.take(8 * 1024).read_to_end(&mut head))
        .is_ok_and(|_| content_inspector::inspect(&head).is_binary())
}
