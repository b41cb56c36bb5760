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

mod cell;
mod commit;
mod lookup;
mod messages;
mod status;
pub(crate) mod tool;

use std::collections::HashMap;

use gyre_protocol::{
    Event, FinishReason, Message, Role, RunErrorKind, RunSummary, StopReason, Todo, ToolCall,
    ToolResult,
};
use tokio::time::Instant;

pub(crate) use cell::ToolCell;
pub(crate) use cell::{Cell, CellKind, LayoutKey, ReasoningCell, SubagentActivity, SubagentCall};
pub use cell::{NoticeKind, SUBAGENT_RECENT, TAIL_LINES, ToolState};
pub use status::{ContextGauge, RetryCountdown, RunState, StatusInfo};
pub use tool::{classify_result, summarize_call};

use crate::render::text::format_tokens;

use crate::palette::Palette;
use crate::render::markdown::StreamingMarkdown;

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

    /// Applies one event of a run.
    pub fn apply(&mut self, event: &Event, now: Instant) {
        self.status.apply(event, now);
        match event {
            Event::TextDelta { text } => self.text_delta(text),
            Event::ReasoningDelta { text } => self.reasoning_delta(text),
            Event::ToolCallStarted { call_id, name } => {
                self.close_streams();
                self.tool_cell(call_id, name, now);
            }
            Event::ToolCallReady { call } => self.tool_ready(call, now),
            Event::ToolProgress { call_id, output } => {
                if let Some(tool) = self.tool_mut(call_id) {
                    tool.tail.push(output);
                }
            }
            Event::ToolResult { title, result } => self.tool_result(title, result, now),
            Event::PermissionRequested { call, .. } => {
                if let Some(tool) = self.tool_mut(&call.id) {
                    tool.state = ToolState::AwaitingPermission;
                }
            }
            Event::MessageAppended { message } => self.message_appended(message),
            Event::TurnCompleted { stop_reason, .. } => {
                self.close_streams();
                if *stop_reason == StopReason::Refusal {
                    self.push_notice(NoticeKind::Warning, "The model refused to answer.");
                }
            }
            Event::TodosUpdated { todos } => self.todos = todos.clone(),
            Event::ContextWarning {
                used_tokens,
                usable_tokens,
                ..
            } => {
                let percent = (used_tokens * 100).checked_div(*usable_tokens).unwrap_or(0);
                self.push_notice(
                    NoticeKind::Warning,
                    format!(
                        "Context {percent}% full ({} of {} tokens); \
                         /compact summarises older turns.",
                        format_tokens(*used_tokens),
                        format_tokens(*usable_tokens)
                    ),
                );
            }
            Event::ContextPruned {
                pruned_results,
                pre_tokens,
                post_tokens,
            } => self.push_notice(
                NoticeKind::Info,
                format!(
                    "Pruned {pruned_results} old tool outputs from the context \
                     ({} → {} tokens).",
                    format_tokens(*pre_tokens),
                    format_tokens(*post_tokens)
                ),
            ),
            Event::CompactionStarted { trigger } => {
                self.push_notice(
                    NoticeKind::Info,
                    format!("Compacting the conversation ({})…", trigger.as_str()),
                );
                self.compaction_notice = Some(self.cells.len() - 1);
            }
            Event::CompactBoundary { boundary, .. } => {
                let text = format!(
                    "Conversation compacted ({}): {} → {} tokens.",
                    boundary.trigger.as_str(),
                    format_tokens(boundary.pre_tokens),
                    format_tokens(boundary.post_tokens)
                );
                self.finish_compaction(NoticeKind::Info, text);
            }
            Event::CompactionFailed { message, .. } => {
                self.finish_compaction(NoticeKind::Error, format!("Compaction failed: {message}"))
            }
            Event::CheckpointFailed { message, .. } => self.push_notice(
                NoticeKind::Warning,
                format!("Checkpoint failed: {message}."),
            ),
            Event::SessionBusy { pid, host } => self.push_notice(
                NoticeKind::Warning,
                format!("Another run (pid {pid} on {host}) is using this session; waiting for it."),
            ),
            Event::RetryScheduled {
                attempt,
                delay_ms,
                reason,
                message,
            } => self.retry_notice(*attempt, *delay_ms, reason, message),
            Event::Subagent {
                call_id,
                task_id,
                agent,
                inner,
            } => self.subagent_event(call_id, task_id, agent, inner),
            Event::TaskNotification {
                agent,
                description,
                reason,
                final_text,
                ..
            } => {
                let (kind, verb) = finish_words(*reason);
                let result = crate::render::text::first_line(final_text);
                let text = if result.is_empty() {
                    format!("Background task {agent} ({description}) {verb}.")
                } else {
                    format!("Background task {agent} ({description}) {verb}: {result}")
                };
                self.push_notice(kind, text);
            }
            Event::RunFinished(summary) => self.run_finished(summary, now),
            _ => {}
        }
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

    fn text_delta(&mut self, text: &str) {
        if let Some(index) = self.open_reasoning.take()
            && let Some(cell) = self.cells.get_mut(index)
        {
            if let CellKind::Reasoning(r) = &mut cell.kind {
                r.streaming = false;
            }
            cell.touch();
        }
        self.streamed_text = true;
        let index = match self.open_text {
            Some(index) => index,
            None => {
                let index = self.push(CellKind::Assistant(StreamingMarkdown::new()));
                self.open_text = Some(index);
                index
            }
        };
        let palette = self.palette;
        if let Some(cell) = self.cells.get_mut(index) {
            if let CellKind::Assistant(md) = &mut cell.kind {
                md.push(text, palette);
            }
            cell.touch();
        }
    }

    fn reasoning_delta(&mut self, text: &str) {
        if self.open_text.is_some() {
            self.close_streams();
        }
        let index = match self.open_reasoning {
            Some(index) => index,
            None => {
                let index = self.push(CellKind::Reasoning(ReasoningCell {
                    text: String::new(),
                    streaming: true,
                }));
                self.open_reasoning = Some(index);
                index
            }
        };
        if let Some(cell) = self.cells.get_mut(index) {
            if let CellKind::Reasoning(r) = &mut cell.kind {
                r.text.push_str(text);
            }
            cell.touch();
        }
    }

    fn tool_cell(&mut self, call_id: &str, name: &str, now: Instant) -> usize {
        if let Some(&index) = self.tools.get(call_id) {
            return index;
        }
        let index = self.push(CellKind::Tool(Box::new(ToolCell::new(name, now))));
        self.tools.insert(call_id.to_string(), index);
        index
    }

    fn tool_mut(&mut self, call_id: &str) -> Option<&mut ToolCell> {
        let cell = self.cells.get_mut(*self.tools.get(call_id)?)?;
        cell.touch();
        match &mut cell.kind {
            CellKind::Tool(tool) => Some(tool),
            _ => None,
        }
    }

    fn tool_ready(&mut self, call: &ToolCall, now: Instant) {
        self.close_streams();
        self.tool_cell(&call.id, &call.name, now);
        let Some(tool) = self.tool_mut(&call.id) else {
            return;
        };
        tool.summary = tool::summarize_call(call);
        tool.diff = tool::edit_preview(call);
        if tool.state == ToolState::Pending {
            tool.state = ToolState::Running;
            tool.started = now;
        }
        if call.name == "task" {
            let agent = call
                .arguments_json()
                .and_then(|a| a.get("agent")?.as_str().map(str::to_string))
                .unwrap_or_default();
            tool.subagent.get_or_insert_with(|| SubagentActivity {
                agent,
                ..SubagentActivity::default()
            });
        }
    }

    fn tool_result(&mut self, title: &str, result: &ToolResult, now: Instant) {
        let index = self.tool_cell(&result.call_id, &result.name, now);
        let Some(Cell {
            kind: CellKind::Tool(tool),
            ..
        }) = self.cells.get_mut(index)
        else {
            return;
        };
        tool.state = tool::classify_result(result);
        tool.ended = Some(now);
        self.last_output = Some((result.call_id.clone(), result.text_content()));
        tool.outcome = tool::outcome_line(title, result);
        // A finished call keeps its output tail only when it went wrong.
        if tool.state == ToolState::Done {
            tool.tail.clear();
        }
        if let Some(cell) = self.cells.get_mut(index) {
            cell.touch();
        }
    }

    fn message_appended(&mut self, message: &Message) {
        if message.role != Role::Assistant {
            return;
        }
        self.close_streams();
        if !std::mem::take(&mut self.streamed_text) {
            let text = message.text();
            if !text.trim().is_empty() {
                let mut md = StreamingMarkdown::new();
                md.push(&text, self.palette);
                md.finish(self.palette);
                self.push(CellKind::Assistant(md));
            }
        }
    }

    fn retry_notice(&mut self, attempt: u32, delay_ms: u64, reason: &str, message: &str) {
        let what = if message.is_empty() { reason } else { message };
        let text = format!(
            "Request failed: {}. Retry {attempt} in {}.",
            what.trim_end_matches('.'),
            format_delay(delay_ms)
        );
        let last = self.cells.len().checked_sub(1);
        match self
            .retry_notice
            .filter(|i| Some(*i) == last)
            .and_then(|i| self.cells.get_mut(i))
        {
            Some(cell) => {
                cell.kind = CellKind::Notice {
                    kind: NoticeKind::Warning,
                    text,
                };
                cell.touch();
            }
            None => {
                self.push_notice(NoticeKind::Warning, text);
                self.retry_notice = Some(self.cells.len() - 1);
            }
        }
    }

    fn finish_compaction(&mut self, kind: NoticeKind, text: String) {
        match self
            .compaction_notice
            .take()
            .and_then(|i| self.cells.get_mut(i))
        {
            Some(cell) => {
                cell.kind = CellKind::Notice { kind, text };
                cell.touch();
            }
            None => self.push_notice(kind, text),
        }
    }

    fn subagent_event(&mut self, call_id: &str, task_id: &str, agent: &str, inner: &Event) {
        let Some(tool) = self.tool_mut(call_id) else {
            return;
        };
        let activity = tool.subagent.get_or_insert_with(SubagentActivity::default);
        if activity.agent.is_empty() {
            activity.agent = agent.to_string();
        }
        if activity.task_id.is_empty() {
            activity.task_id = task_id.to_string();
        }
        apply_to_activity(activity, inner);
    }

    fn run_finished(&mut self, summary: &RunSummary, now: Instant) {
        self.close_streams();
        // Calls the run left without a result were stopped with it.
        for &index in self.tools.values() {
            if let Some(cell) = self.cells.get_mut(index)
                && let CellKind::Tool(tool) = &mut cell.kind
                && !tool.state.is_finished()
            {
                tool.state = ToolState::Interrupted;
                tool.ended = Some(now);
                cell.touch();
            }
        }
        if let Some(error) = &summary.error {
            let kind = match error.kind {
                RunErrorKind::Cancelled => NoticeKind::Info,
                _ => NoticeKind::Error,
            };
            self.push_notice(kind, error.message.clone());
        } else if summary.reason == FinishReason::Cancelled {
            self.push_notice(NoticeKind::Info, "Interrupted.");
        } else if summary.reason != FinishReason::Completed {
            let (kind, verb) = finish_words(summary.reason);
            self.push_notice(kind, format!("The run {verb}."));
        }
    }
}

/// A subagent's event as its `task` cell shows it: its tool calls, in
/// brief. Nested subagents are flattened into the outermost cell.
fn apply_to_activity(activity: &mut SubagentActivity, inner: &Event) {
    match inner {
        Event::ToolCallReady { call } => {
            activity.calls += 1;
            if activity.recent.len() == SUBAGENT_RECENT {
                activity.recent.pop_front();
            }
            activity.recent.push_back(SubagentCall {
                call_id: call.id.clone(),
                name: call.name.clone(),
                summary: tool::summarize_call(call),
                state: ToolState::Running,
            });
        }
        Event::ToolResult { result, .. } => {
            if let Some(call) = activity
                .recent
                .iter_mut()
                .find(|c| c.call_id == result.call_id)
            {
                call.state = tool::classify_result(result);
            }
        }
        Event::RunFinished(summary) => activity.finished = Some(summary.reason),
        Event::Subagent { inner, .. } => apply_to_activity(activity, inner),
        _ => {}
    }
}

/// The notice kind and verb for how a run ended.
fn finish_words(reason: FinishReason) -> (NoticeKind, &'static str) {
    match reason {
        FinishReason::Completed => (NoticeKind::Info, "finished"),
        FinishReason::MaxTurns => (NoticeKind::Warning, "stopped at the turn limit"),
        FinishReason::Budget => (NoticeKind::Warning, "stopped at its budget"),
        FinishReason::LoopGuard => (NoticeKind::Warning, "was stopped by the loop guard"),
        FinishReason::Failed => (NoticeKind::Error, "failed"),
        FinishReason::Cancelled => (NoticeKind::Info, "was cancelled"),
    }
}

/// A retry's wait for a person: "800 ms", "1.5 s", "12 s".
fn format_delay(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..10_000 if !ms.is_multiple_of(1_000) => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} s", ms / 1000),
    }
}
