//! gyre's built-in tools, the [`Tool`] trait and the [`Registry`].
//!
//! Invariants:
//! - A tool never panics and never ends the run: bad arguments, missing files,
//!   paths outside the workspace, timeouts and failed commands come back as
//!   [`ToolError`]s, which the loop turns into error results the model sees.
//! - Every path goes through [`Workspace::resolve`]; nothing outside the
//!   workspace root is read or written.
//! - Outputs are bounded ([`truncate`]); a cut output says that it was cut.
//! - A tool stops promptly when its context's cancellation token fires, and a
//!   process it started is killed with its whole process group.
//!
//! Tools that need the loop itself (`task`) live in `core`, against this trait.
//! Tools that join during a session (an MCP server's, once it is up) are
//! kept in a shared [`LateTools`], which the loop reads at turn boundaries.

mod budget;
mod context;
mod diagnostics;
mod error;
mod late;
mod registry;
mod sandbox;
mod schema;
mod session;
pub mod tls;
pub mod truncate;
mod typed;
mod walk;
mod workspace;
mod workspace_fs;

mod bash;
mod bash_output;
mod edit;
mod files;
mod glob;
mod grep;
mod kill_shell;
mod ls;
mod multi_edit;
mod read;
mod readonly;
mod shell_state;
mod todo;
mod todo_write;
mod web_fetch;
mod write;

use futures::future::BoxFuture;
use gyre_protocol::{Outcome, ToolResultContent, ToolSpec};

pub use budget::{BYTES_PER_TOKEN, budget_bytes, enforce_budget, estimate_tokens};
pub use context::{LoopScope, ProcessEvent, ProcessSink, ProgressSink, ToolContext};
pub use diagnostics::{DiagnosticsHook, FileReport, FileUse, count_line};
pub use error::ToolError;
pub use files::{ContentHasher, FileStamp, Freshness, Seen};
pub use late::{LateChange, LateSnapshot, LateTools};
pub use readonly::is_read_only_command;
pub use registry::Registry;
pub use sandbox::{Fallback, Network, Sandbox, SandboxMode, SandboxNotifier, SandboxPolicy};
pub use schema::{input_schema, parse_args};
pub use session::{FileTracker, ImageSupport, OutputLimits, ShellState, TodoList, ToolSession};
pub use shell_state::{JobInfo, JobStatus, MAX_JOBS, MAX_RUNNING};
pub use typed::{Typed, TypedTool};
pub use workspace::{Workspace, normalise};
pub use workspace_fs::WorkspaceFs;

pub use bash::BashTool;
pub use bash_output::BashOutputTool;
pub use edit::EditTool;
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use kill_shell::KillShellTool;
pub use ls::LsTool;
pub use multi_edit::MultiEditTool;
pub use read::ReadTool;
pub use todo_write::{TodoWriteTool, todos_of_call};
pub use web_fetch::WebFetchTool;
pub use write::WriteTool;

/// Whether a call may change the world. Read-only calls may run concurrently;
/// mutating calls run one at a time, in call order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    ReadOnly,
    Mutating,
}

/// What a tool returns when it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// What the model sees.
    pub content: Vec<ToolResultContent>,
    /// One line for display, e.g. `read src/lib.rs (120 lines)`.
    pub title: String,
    /// A tool that ran but reports failure (a command exiting non-zero) says
    /// `Outcome::Error` here; the model sees the output either way.
    pub outcome: Outcome,
}

impl ToolOutput {
    pub fn text(title: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            content: vec![ToolResultContent::Text { text: text.into() }],
            title: title.into(),
            outcome: Outcome::Success,
        }
    }
}

/// A tool the model can call.
pub trait Tool: Send + Sync {
    /// Name, description and JSON schema of the arguments, as the model sees them.
    fn spec(&self) -> &ToolSpec;

    /// Whether this call (with these arguments) may change the world.
    fn kind(&self, arguments: &serde_json::Value) -> ToolKind;

    /// Whether `arguments` certainly suit the tool, by a check cheaper than
    /// schema validation: `Some(true)` lets [`Registry::validate`] skip the
    /// schema (compiling a validator costs time and memory at start-up);
    /// `None` or `Some(false)` sends the arguments through the schema, whose
    /// errors name each field.
    fn accepts(&self, arguments: &serde_json::Value) -> Option<bool> {
        let _ = arguments;
        None
    }

    /// Runs the tool. `arguments` is the parsed JSON object the model sent.
    fn run<'a>(
        &'a self,
        arguments: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// Sends SIGKILL to the process group `pgid` (> 1), led by a child of the
/// caller (a hook command, say): what the `bash` tool does to its own.
pub fn kill_process_group(pgid: i32) {
    bash::process::kill_group(pgid);
}

/// When process `pid` started, in clock ticks since boot (field 22 of
/// `/proc/PID/stat`); `None` when there is no such process (or no `/proc`).
/// With the pid it names one process for good: a reused pid starts later.
pub fn process_start_ticks(pid: i32) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name (field 2) may hold spaces and parentheses: count from its end.
    let after_name = stat.get(stat.rfind(')')? + 2..)?;
    after_name.split(' ').nth(19)?.parse().ok()
}

/// Whether any live (not zombie) process is in process group `pgid`, as
/// far as `/proc` tells.
pub fn process_group_alive(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    let pgid = pgid.to_string();
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            return false;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        let Some(after_name) = stat.rfind(')').and_then(|at| stat.get(at + 2..)) else {
            return false;
        };
        let mut fields = after_name.split(' ');
        let state = fields.next();
        let group = fields.nth(1);
        state != Some("Z") && group == Some(pgid.as_str())
    })
}

/// Runs blocking file work off the async runtime. `work` gets a clone of the
/// token to stop early; the caller gets [`ToolError::Cancelled`] as soon as the
/// token fires, without waiting for `work` to notice.
pub(crate) async fn blocking<T: Send + 'static>(
    cancel: &tokio_util::sync::CancellationToken,
    work: impl FnOnce(&tokio_util::sync::CancellationToken) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let token = cancel.clone();
    let handle = tokio::task::spawn_blocking(move || work(&token));
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ToolError::Cancelled { output: String::new() }),
        joined = handle => joined.map_err(|e| ToolError::Failed(format!("the tool crashed: {e}")))?,
    }
}

/// Runs blocking file work that changes files off the async runtime, to the
/// end: once a write has begun, its result is reported as it is, cancelled
/// or not.
pub(crate) async fn blocking_to_completion<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::Failed(format!("the tool crashed: {e}")))?
}
