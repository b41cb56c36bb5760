//! What a tool needs of its surroundings, filled in by the loop.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::DiagnosticsHook;
use crate::session::{ImageSupport, OutputLimits, ToolSession};
use crate::{Sandbox, Workspace};

/// Receives chunks of output of a long-running tool, for display.
pub type ProgressSink = Arc<dyn Fn(&str) + Send + Sync>;

/// A process group a tool started or saw end (`bash`'s foreground command),
/// so that the run can record it and a later run stop it if it outlived
/// its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessEvent {
    Started {
        pgid: i32,
        /// The leader's start, in clock ticks since boot
        /// ([`process_start_ticks`](crate::process_start_ticks)).
        started: i64,
    },
    Ended {
        pgid: i32,
    },
}

/// Receives [`ProcessEvent`]s; the tool waits for each to be handled.
pub type ProcessSink =
    Arc<dyn Fn(ProcessEvent) -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// The surroundings of one tool call.
#[derive(Clone)]
pub struct ToolContext {
    pub workspace: Arc<Workspace>,
    pub session_id: String,
    pub call_id: String,
    /// Fires when the call must stop (run cancelled, sibling failed).
    pub cancel: CancellationToken,
    pub progress: Option<ProgressSink>,
    /// State kept across the session's calls (read files, shell, todos).
    pub session: Arc<ToolSession>,
    /// Whether `read` may return an image for the model to see.
    pub images: ImageSupport,
    /// The output budget, and where whole outputs are spilled.
    pub output: Arc<OutputLimits>,
    /// The sandbox `bash` runs its commands in (off unless configured).
    pub sandbox: Arc<Sandbox>,
    /// What tools the loop implements itself (`task`, `task_output`) need
    /// of the run that calls them; opaque to this crate (the loop crate
    /// downcasts it), so tools stay independent of the loop. `None` outside
    /// a run.
    pub loop_scope: Option<LoopScope>,
    /// Where the process groups the call starts are reported (`None`:
    /// nowhere).
    pub processes: Option<ProcessSink>,
    /// Where text files are read and written (`None`: the disk); see
    /// [`crate::WorkspaceFs`].
    pub fs: Option<Arc<dyn crate::WorkspaceFs>>,
    /// The workspace's language servers, told of the files read and
    /// changed (`None`: none).
    pub diagnostics: Option<Arc<dyn DiagnosticsHook>>,
}

/// See [`ToolContext::loop_scope`].
pub type LoopScope = Arc<dyn std::any::Any + Send + Sync>;

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("workspace", &self.workspace)
            .field("session_id", &self.session_id)
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// Tells the run of a process group (and waits until it is recorded).
    pub async fn report_process(&self, event: ProcessEvent) {
        if let Some(sink) = &self.processes {
            sink(event).await;
        }
    }

    pub fn report_progress(&self, chunk: &str) {
        if let Some(sink) = &self.progress {
            sink(chunk);
        }
    }
}
