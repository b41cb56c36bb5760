//! The conversation as display cells, built incrementally from the event
//! stream (and from stored messages for `/resume`).
//!
//! Invariants:
//! - Each event touches at most a few cells (the streaming one, a tool
//!   cell found by call id); nothing re-renders or copies the history.
//! - At most one assistant cell and one reasoning cell are open (streaming)
//!   at a time; any other kind of event closes them, so text after a tool
//!   call starts a new cell below it.
//! - User-role `MessageAppended` events are not shown: the app pushes the
//!   prompt itself with [`Transcript::push_user`] when it sends it (tool
//!   results are shown through `ToolResult` events).
//! - Unknown or display-less events are ignored.

mod apply;
mod cell;
mod commit;
mod lookup;
mod messages;
mod status;
pub(crate) mod tool;

use std::collections::HashMap;

use gyre_protocol::{Message, Todo};
use tokio::time::Instant;

pub(crate) use cell::ToolCell;
pub(crate) use cell::{Cell, CellKind, LayoutKey, ReasoningCell, SubagentActivity, SubagentCall};
pub use cell::{NoticeKind, SUBAGENT_RECENT, TAIL_LINES, ToolState};
pub use status::{ContextGauge, RetryCountdown, RunState, StatusInfo};
pub use tool::{classify_result, summarize_call};

use crate::palette::Palette;

/// Whether reasoning cells show all their text or one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ReasoningView {
    #[default]
    Collapsed,
    Expanded,
}

/// The conversation as the screen shows it.
pub struct Transcript {
    cells: Vec<Cell>,
    /// Tool cells of the parent run by call id.
    tools: HashMap<String, usize>,
    open_text: Option<usize>,
    open_reasoning: Option<usize>,
    /// Whether the current assistant message streamed any text (a message
    /// that did not is shown whole when it is appended).
    streamed_text: bool,
    /// The notice a running compaction shows, replaced when it ends.
    compaction_notice: Option<usize>,
    /// The notice of the current run of retries, updated in place while it
    /// is the last cell (one line per outage, not one per attempt).
    retry_notice: Option<usize>,
    reasoning: ReasoningView,
    palette: Palette,
    status: StatusInfo,
    todos: Vec<Todo>,
    /// Cells already written to the scrollback (inline screen).
    committed: usize,
    /// The newest tool result's call id and whole text, for Ctrl-O (one,
    /// so memory stays bounded; older ones are read from the session).
    last_output: Option<(String, String)>,
}

impl Default for Transcript {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Transcript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transcript")
            .field("cells", &self.cells.len())
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl Transcript {
    pub fn new() -> Self {
        Self::with_palette(Palette::default())
    }

    /// A transcript whose cells are styled with `palette` (fixed for its
    /// life: finished cells keep their styled lines).
    pub fn with_palette(palette: Palette) -> Self {
        Self {
            cells: Vec::new(),
            tools: HashMap::new(),
            open_text: None,
            open_reasoning: None,
            streamed_text: false,
            compaction_notice: None,
            retry_notice: None,
            reasoning: ReasoningView::Collapsed,
            palette,
            status: StatusInfo::default(),
            todos: Vec::new(),
            committed: 0,
            last_output: None,
        }
    }

    /// Builds the transcript of a stored session (for `/resume`).
    pub fn from_messages(messages: &[std::sync::Arc<Message>]) -> Self {
        Self::from_messages_with_palette(messages, Palette::default())
    }

    pub fn from_messages_with_palette(
        messages: &[std::sync::Arc<Message>],
        palette: Palette,
    ) -> Self {
        let mut transcript = Self::with_palette(palette);
        messages::replay(&mut transcript, messages);
        transcript
    }

    pub fn palette(&self) -> Palette {
        self.palette
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Removes every cell (the status and todos stay).
    pub fn clear(&mut self) {
        self.cells.clear();
        self.tools.clear();
        self.open_text = None;
        self.open_reasoning = None;
        self.streamed_text = false;
        self.compaction_notice = None;
        self.retry_notice = None;
        self.committed = 0;
    }

    pub fn status(&self) -> &StatusInfo {
        &self.status
    }

    /// For what only the app knows: agent, permission mode, queued count.
    pub fn status_mut(&mut self) -> &mut StatusInfo {
        &mut self.status
    }

    /// The todo list as the last `TodosUpdated` left it.
    pub fn todos(&self) -> &[Todo] {
        &self.todos
    }

    pub fn reasoning_view(&self) -> ReasoningView {
        self.reasoning
    }

    /// Expands or collapses every reasoning cell.
    pub fn toggle_reasoning(&mut self) {
        self.reasoning = match self.reasoning {
            ReasoningView::Collapsed => ReasoningView::Expanded,
            ReasoningView::Expanded => ReasoningView::Collapsed,
        };
    }

    /// Whether something on screen moves with time alone (a run in
    /// progress: spinners, elapsed times; a retry countdown). When false the
    /// app need not redraw until the next input or event.
    pub fn is_animating(&self) -> bool {
        self.status.is_busy()
            || self.status.retry.is_some()
            || self.cells.iter().rev().take(64).any(Cell::is_live)
    }

    /// The state of the parent run's tool call `call_id`, if it has a cell.
    pub fn tool_state(&self, call_id: &str) -> Option<ToolState> {
        match &self.cells.get(*self.tools.get(call_id)?)?.kind {
            CellKind::Tool(tool) => Some(tool.state),
            _ => None,
        }
    }

    /// The user answered the permission request for `call_id`: the call
    /// shows as running again (no event says so; a denied call's result
    /// follows and marks it denied).
    pub fn permission_answered(&mut self, call_id: &str, now: Instant) {
        if let Some(tool) = self.tool_mut(call_id)
            && tool.state == ToolState::AwaitingPermission
        {
            tool.state = ToolState::Running;
            tool.started = now;
        }
    }

    pub(crate) fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// Adds the user's prompt.
    pub fn push_user(&mut self, text: &str) {
        self.close_streams();
        self.push(CellKind::User(text.to_string()));
    }

    /// Adds a line of the app's own: command output, an error, "queued".
    pub fn push_notice(&mut self, kind: NoticeKind, text: impl Into<String>) {
        self.close_streams();
        self.push(CellKind::Notice {
            kind,
            text: text.into(),
        });
    }

    fn push(&mut self, kind: CellKind) -> usize {
        self.cells.push(Cell::new(kind));
        self.cells.len() - 1
    }

    fn close_streams(&mut self) {
        let palette = self.palette;
        if let Some(index) = self.open_text.take()
            && let Some(cell) = self.cells.get_mut(index)
        {
            if let CellKind::Assistant(md) = &mut cell.kind {
                md.finish(palette);
            }
            cell.touch();
        }
        if let Some(index) = self.open_reasoning.take()
            && let Some(cell) = self.cells.get_mut(index)
        {
            if let CellKind::Reasoning(r) = &mut cell.kind {
                r.streaming = false;
            }
            cell.touch();
        }
    }

    fn tool_mut(&mut self, call_id: &str) -> Option<&mut ToolCell> {
        let cell = self.cells.get_mut(*self.tools.get(call_id)?)?;
        cell.touch();
        match &mut cell.kind {
            CellKind::Tool(tool) => Some(tool),
            _ => None,
        }
    }
}
