//! `write`: create or overwrite a file with the given content.
//!
//! Invariants: the target is resolved inside the workspace; missing parent
//! directories are created; a directory is never replaced. The content is
//! written as given, byte for byte (no newline added or converted).

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::{ToolContext, ToolError, ToolKind, ToolOutput, TypedTool, Workspace};

const NAME: &str = "write";

const DESCRIPTION: &str = "Write a file, replacing it if it exists; missing parent \
directories are created. The content is written exactly as given. To change part of an \
existing file prefer `edit`, which sends only the change.";

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

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::Mutating
    }

    fn call<'a>(
        &'a self,
        args: WriteArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let workspace = ctx.workspace.clone();
            crate::blocking_to_completion(move || write(&workspace, &args)).await
        })
    }
}

fn write(workspace: &Workspace, args: &WriteArgs) -> Result<ToolOutput, ToolError> {
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
        Ok(_) => true,
        Err(_) => false,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| ToolError::io(&args.file_path, e))?;
    }
    std::fs::write(&path, &args.content).map_err(|e| ToolError::io(&args.file_path, e))?;
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
