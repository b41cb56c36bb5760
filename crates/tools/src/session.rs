//! State the tools keep for one session, across calls and runs: which files
//! were read (and when), the shell's working directory and background jobs,
//! and the todo list.
//!
//! The loop makes one [`ToolSession`] per session and hands it to every call
//! through [`crate::ToolContext::session`]; tools share it behind an `Arc`, so
//! each part guards its own interior with a short, non-async lock.

use std::path::PathBuf;

pub use crate::files::FileTracker;
pub use crate::shell_state::ShellState;
pub use crate::todo::TodoList;

/// Per-session tool state.
#[derive(Debug, Default)]
pub struct ToolSession {
    /// Files read in this session, with the modification time seen then.
    pub files: FileTracker,
    /// The shell's persistent working directory and background jobs.
    pub shell: ShellState,
    /// The todo list `todo_write` keeps.
    pub todos: TodoList,
}

/// How much of a tool's output may enter the history (from configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLimits {
    /// The most tokens one result may hold; beyond it the output is cut with a
    /// marker and the whole of it spilled to a file.
    pub max_result_tokens: usize,
    /// Where whole outputs are spilled; `None` keeps only the cut output.
    pub spill_dir: Option<PathBuf>,
}

impl Default for OutputLimits {
    fn default() -> Self {
        Self {
            max_result_tokens: 10_000,
            spill_dir: None,
        }
    }
}

/// Whether the model takes images in tool results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImageSupport {
    #[default]
    Accepted,
    NotAccepted,
}
