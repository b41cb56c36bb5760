//! The IO of a custom command's expansion: `@file` inclusions read from
//! the workspace, `` !`command` `` inclusions run through the permission
//! check of a `bash` call.
//!
//! Invariants:
//! - A file outside the workspace, missing, a directory, binary or over
//!   [`MAX_FILE_BYTES`] is not included: the `@path` stays as written (the
//!   model may read it itself, under its own rules).
//! - A command runs only when the permissions (with the command file's
//!   `allowed-tools` added as allow rules) allow it as a `bash` call; one
//!   they would ask about or deny fails the expansion with the reason, and
//!   nothing runs. It runs in the workspace, bounded in time
//!   ([`COMMAND_TIMEOUT`]) and output ([`MAX_OUTPUT_BYTES`]).

use std::path::Path;
use std::time::Duration;

use gyre_core::{Decision, PermissionContext, Permissions, Rule};
use gyre_tools::{Registry, ToolKind, Workspace};
use serde_json::json;

use super::expand::{Piece, join};

/// The largest file an `@path` includes.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
/// How long an included command may run.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// The most of a command's output included.
pub const MAX_OUTPUT_BYTES: usize = 32 * 1024;

/// The pieces with their inclusions filled in.
pub async fn render(
    pieces: &[Piece],
    workspace: &Path,
    permissions: &Permissions,
    allowed_tools: &[String],
) -> Result<String, String> {
    let mut permissions = permissions.clone();
    if permissions.context.workspace_root.as_os_str().is_empty() {
        permissions.context = PermissionContext::new(workspace);
    }
    for item in allowed_tools {
        let rules = Rule::parse_list(item)
            .map_err(|e| format!("its allowed-tools `{item}` is not a rule: {e}"))?;
        permissions.allow.extend(rules);
    }
    let root = Workspace::new(workspace).map_err(|e| e.to_string())?;
    // In order, one per inclusion (what `join` asks for).
    let mut filled = Vec::with_capacity(pieces.len());
    for piece in pieces {
        match piece {
            Piece::Text(_) => {}
            Piece::File(path) => filled.push(include_file(&root, path).await),
            Piece::Shell(command) => filled.push(run(command, workspace, &permissions).await?),
        }
    }
    let mut outputs = filled.into_iter();
    Ok(join(pieces, |_| outputs.next().unwrap_or_default()))
}

async fn include_file(root: &Workspace, path: &str) -> String {
    let as_written = format!("@{path}");
    let Ok(resolved) = root.resolve(path) else {
        return as_written;
    };
    let read = tokio::task::spawn_blocking(move || {
        let meta = std::fs::metadata(&resolved).ok()?;
        if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
            return None;
        }
        String::from_utf8(std::fs::read(&resolved).ok()?).ok()
    })
    .await
    .ok()
    .flatten();
    match read {
        Some(text) => format!("<file path=\"{path}\">\n{}\n</file>", text.trim_end()),
        None => as_written,
    }
}

async fn run(command: &str, workspace: &Path, permissions: &Permissions) -> Result<String, String> {
    let args = json!({ "command": command });
    let kind = Registry::builtin()
        .get("bash")
        .map_or(ToolKind::Mutating, |bash| bash.kind(&args));
    let refused = |why: String| {
        format!(
            "`!{command}` was not run: {why}; allow it with the command file's `allowed-tools` \
             (e.g. `Bash({command})`) or a permission rule"
        )
    };
    match permissions.check("bash", kind, &args) {
        Decision::Allow => {}
        Decision::Deny(why) | Decision::Ask(why) => return Err(refused(why)),
    }
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(workspace)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(COMMAND_TIMEOUT, child).await {
        Err(_) => {
            return Err(format!(
                "`!{command}` did not finish within {}s",
                COMMAND_TIMEOUT.as_secs()
            ));
        }
        Ok(Err(e)) => return Err(format!("`!{command}` could not start: {e}")),
        Ok(Ok(output)) => output,
    };
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    if text.len() > MAX_OUTPUT_BYTES {
        let mut end = MAX_OUTPUT_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("\n[output cut]");
    }
    let mut text = text.trim_end().to_string();
    if !output.status.success() {
        let code = output
            .status
            .code()
            .map_or("a signal".to_string(), |c| c.to_string());
        text.push_str(&format!("\n(exit {code})"));
    }
    Ok(text)
}
