//! `!command`: a shell command the user runs directly in the workspace, not
//! through the model.
//!
//! It runs through gyre's own `bash` tool, so it gets the same process
//! handling as the model's commands: its own process group, killed whole
//! when stopped (Esc), output bounded (head and tail kept), a time limit of
//! [`TIME_LIMIT_MS`]. It runs unsandboxed: the user typed it.
//!
//! The transcript shows it as a `bash` tool cell (live output tail while it
//! runs, then how it ended) followed by its output. The output is not sent
//! to the model.

use std::sync::Arc;

use gyre_protocol::{Outcome, ToolCall, ToolResult};
use gyre_tools::{Tool, ToolContext, ToolError, Workspace};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::app::Background;

/// The longest a `!command` may run (the bash tool's maximum).
pub const TIME_LIMIT_MS: u64 = 600_000;

/// A running `!command`.
#[derive(Debug)]
pub struct ShellJob {
    pub call_id: String,
    cancel: CancellationToken,
}

impl ShellJob {
    /// Stops the command (its whole process group).
    pub fn kill(&self) {
        self.cancel.cancel();
    }
}

/// How a `!command` ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ShellDone {
    pub call_id: String,
    /// One line (`exit 1`, `stopped`).
    pub title: String,
    pub result: ToolResult,
}

/// The call the transcript shows for `command`.
pub fn call_of(call_id: &str, command: &str) -> ToolCall {
    let arguments = serde_json::json!({ "command": command });
    ToolCall::new(call_id, "bash", arguments.to_string())
}

/// Starts `command` in `workspace`; its output and end come as
/// [`Background`] messages on `tx`.
pub fn start(
    workspace: Arc<Workspace>,
    call_id: String,
    command: String,
    tx: mpsc::Sender<Background>,
) -> ShellJob {
    let cancel = CancellationToken::new();
    let progress_tx = tx.clone();
    let progress_id = call_id.clone();
    let ctx = ToolContext {
        workspace,
        session_id: String::new(),
        call_id: call_id.clone(),
        cancel: cancel.clone(),
        // Display only: a chunk that finds the channel full is dropped.
        progress: Some(Arc::new(move |chunk: &str| {
            let _ = progress_tx.try_send(Background::ShellOutput {
                call_id: progress_id.clone(),
                chunk: chunk.to_string(),
            });
        })),
        session: Arc::default(),
        images: gyre_tools::ImageSupport::default(),
        output: Arc::default(),
        sandbox: Arc::default(),
        loop_scope: None,
        processes: None,
        fs: None,
        diagnostics: None,
    };
    let id = call_id.clone();
    tokio::spawn(async move {
        let tool = gyre_tools::Typed::new(gyre_tools::BashTool::new());
        let arguments = serde_json::json!({ "command": command, "timeout_ms": TIME_LIMIT_MS });
        let done = match tool.run(arguments, &ctx).await {
            Ok(output) => {
                let text = output
                    .content
                    .iter()
                    .filter_map(|c| match c {
                        gyre_protocol::ToolResultContent::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                // The cell already shows the command: keep how it ended,
                // `(exit 0): last line` of the tool's `bash: CMD (exit 0): …`.
                let title = match output.title.find(" (exit") {
                    Some(at) => output.title[at + 1..].to_string(),
                    None => output.title,
                };
                ShellDone {
                    call_id: id.clone(),
                    title,
                    result: ToolResult::text(id, "bash", text, output.outcome),
                }
            }
            // The transcript calls a result that begins so interrupted.
            Err(ToolError::Cancelled { output }) => ShellDone {
                call_id: id.clone(),
                title: "interrupted (Esc)".into(),
                result: ToolResult::text(
                    id,
                    "bash",
                    format!("interrupted\n{output}"),
                    Outcome::Error,
                ),
            },
            Err(e) => ShellDone {
                call_id: id.clone(),
                title: e.to_string(),
                result: ToolResult::text(id, "bash", e.to_string(), Outcome::Error),
            },
        };
        let _ = tx.send(Background::ShellDone(done)).await;
    });
    ShellJob { call_id, cancel }
}
