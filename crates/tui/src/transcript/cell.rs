//! The display cells of a transcript and their per-width line cache.
//!
//! Invariants:
//! - A cell's memory is bounded by what it shows: tool output keeps a tail
//!   of [`TAIL_LINES`] lines, diffs at most [`crate::render::diff::MAX_DIFF_LINES`],
//!   a subagent's activity its last [`SUBAGENT_RECENT`] calls.
//! - Every mutation goes through `&mut Cell` and drops the cell's cached
//!   lines ([`Cell::touch`]); drawing takes `&Cell` and fills the cache, so a
//!   finished cell is wrapped once per width.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use gyre_protocol::FinishReason;
use ratatui::text::Line;
use tokio::time::Instant;

use crate::render::diff::DiffPreview;
use crate::render::markdown::StreamingMarkdown;

/// Complete output lines a running tool cell keeps.
pub const TAIL_LINES: usize = 5;
/// Calls of a subagent shown under its `task` cell.
pub const SUBAGENT_RECENT: usize = 3;
/// Bytes kept of one output line (the rest is cut).
pub(crate) const TAIL_LINE_BYTES: usize = 400;

/// What kind of line the app adds to the transcript itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoticeKind {
    /// A neutral message ("queued", "session resumed").
    Info,
    /// Output of a slash command (may be several lines).
    Command,
    Warning,
    Error,
}

/// Where a tool call is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolState {
    /// The model is still streaming the call's arguments.
    Pending,
    /// Waiting for the user's answer to a permission request.
    AwaitingPermission,
    Running,
    Done,
    Failed,
    /// Refused by a rule, a hook or the user.
    Denied,
    /// Stopped by a cancel (or by the run ending) before it finished.
    Interrupted,
}

impl ToolState {
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            ToolState::Done | ToolState::Failed | ToolState::Denied | ToolState::Interrupted
        )
    }
}

/// One cell of the transcript.
pub(crate) struct Cell {
    pub(crate) kind: CellKind,
    cache: Mutex<Option<CachedLines>>,
}

pub(crate) enum CellKind {
    User(String),
    Assistant(StreamingMarkdown),
    Reasoning(ReasoningCell),
    Tool(Box<ToolCell>),
    Notice { kind: NoticeKind, text: String },
}

pub(crate) struct ReasoningCell {
    pub(crate) text: String,
    pub(crate) streaming: bool,
}

/// What the cached lines were laid out for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LayoutKey {
    pub(crate) width: u16,
    pub(crate) reasoning_expanded: bool,
}

struct CachedLines {
    key: LayoutKey,
    lines: Arc<[Line<'static>]>,
}

impl Cell {
    pub(crate) fn new(kind: CellKind) -> Self {
        Self {
            kind,
            cache: Mutex::new(None),
        }
    }

    /// Drops the cached lines (the cell changed).
    pub(crate) fn touch(&mut self) {
        *self.cache.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Whether the cell's lines change with time alone (spinner, elapsed
    /// time) or with every delta: those are laid out afresh each frame.
    pub(crate) fn is_live(&self) -> bool {
        match &self.kind {
            CellKind::Tool(tool) => !tool.state.is_finished(),
            CellKind::Assistant(md) => !md.is_finished(),
            CellKind::Reasoning(r) => r.streaming,
            _ => false,
        }
    }

    /// The cell's lines for `key`, from the cache when it holds them.
    pub(crate) fn cached_lines(
        &self,
        key: LayoutKey,
        layout: impl FnOnce() -> Vec<Line<'static>>,
    ) -> Arc<[Line<'static>]> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cached) = cache.as_ref().filter(|c| c.key == key) {
            return cached.lines.clone();
        }
        let lines: Arc<[Line<'static>]> = layout().into();
        *cache = Some(CachedLines {
            key,
            lines: lines.clone(),
        });
        lines
    }
}

/// A tool call and what is known of it so far.
pub(crate) struct ToolCell {
    pub(crate) name: String,
    /// One line saying what the call does (from its arguments).
    pub(crate) summary: String,
    pub(crate) state: ToolState,
    /// When the call was scheduled (its arguments complete).
    pub(crate) started: Instant,
    pub(crate) ended: Option<Instant>,
    pub(crate) tail: OutputTail,
    /// One line saying how the call ended.
    pub(crate) outcome: String,
    pub(crate) diff: Option<DiffPreview>,
    pub(crate) subagent: Option<SubagentActivity>,
}

impl ToolCell {
    pub(crate) fn new(name: &str, now: Instant) -> Self {
        Self {
            name: name.to_string(),
            summary: String::new(),
            state: ToolState::Pending,
            started: now,
            ended: None,
            tail: OutputTail::default(),
            outcome: String::new(),
            diff: None,
            subagent: None,
        }
    }
}

/// The last lines of a running tool's output, bounded in lines and bytes.
#[derive(Debug, Default)]
pub(crate) struct OutputTail {
    pub(crate) lines: VecDeque<String>,
    /// The line still being written (no newline yet).
    pub(crate) partial: String,
    /// The last chunk ended in `\r`: the next one either ends the line
    /// (`\n`, a CRLF cut in two) or rewrites it.
    carriage_return: bool,
}

impl OutputTail {
    /// Adds a chunk of output. A lone `\r` restarts the current line
    /// (progress bars); a CRLF ends it. Escape sequences are dropped when
    /// the tail is drawn.
    pub(crate) fn push(&mut self, chunk: &str) {
        if std::mem::take(&mut self.carriage_return) && !chunk.starts_with('\n') {
            self.partial.clear();
        }
        let mut pieces = chunk.split('\n').peekable();
        let mut first = true;
        while let Some(piece) = pieces.next() {
            if !std::mem::take(&mut first) {
                let line = std::mem::take(&mut self.partial);
                if self.lines.len() == TAIL_LINES {
                    self.lines.pop_front();
                }
                self.lines.push_back(line);
            }
            let piece = piece.strip_suffix('\r').map_or(piece, |cut| {
                if pieces.peek().is_none() {
                    self.carriage_return = true;
                }
                cut
            });
            let piece = match piece.rfind('\r') {
                Some(at) => {
                    self.partial.clear();
                    &piece[at + 1..]
                }
                None => piece,
            };
            let room = TAIL_LINE_BYTES.saturating_sub(self.partial.len());
            self.partial
                .push_str(crate::render::text::prefix_bytes(piece, room));
        }
    }

    /// The lines to show: the last [`TAIL_LINES`], the partial one included.
    pub(crate) fn visible(&self) -> impl Iterator<Item = &str> {
        let partial = (!self.partial.is_empty()).then_some(self.partial.as_str());
        let total = self.lines.len() + usize::from(partial.is_some());
        let skip = total.saturating_sub(TAIL_LINES);
        self.lines
            .iter()
            .map(String::as_str)
            .chain(partial)
            .skip(skip)
    }

    pub(crate) fn clear(&mut self) {
        self.lines.clear();
        self.partial.clear();
        self.carriage_return = false;
    }
}

/// A subagent's activity, shown compactly under its `task` cell.
#[derive(Debug, Default)]
pub(crate) struct SubagentActivity {
    pub(crate) agent: String,
    pub(crate) task_id: String,
    pub(crate) recent: VecDeque<SubagentCall>,
    /// Tool calls the subagent made (all of them, not only the recent).
    pub(crate) calls: u32,
    pub(crate) finished: Option<FinishReason>,
}

#[derive(Debug)]
pub(crate) struct SubagentCall {
    pub(crate) call_id: String,
    pub(crate) name: String,
    pub(crate) summary: String,
    pub(crate) state: ToolState,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(chunks: &[&str]) -> Vec<String> {
        let mut tail = OutputTail::default();
        for chunk in chunks {
            tail.push(chunk);
        }
        tail.visible().map(str::to_string).collect()
    }

    #[test]
    fn lines_split_across_chunks_and_line_endings() {
        assert_eq!(tail(&["a\r\nb", "c\r", "\nd"]), ["a", "bc", "d"]);
        assert_eq!(tail(&["10%\r", "50%\r", "99%"]), ["99%"]);
        assert_eq!(tail(&["x\ry\n"]), ["y"]);
    }

    #[test]
    fn the_tail_is_bounded() {
        let many: Vec<String> = (0..100).map(|i| format!("{i}\n")).collect();
        let chunks: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(tail(&chunks), ["95", "96", "97", "98", "99"]);
        let long = "x".repeat(10_000);
        assert_eq!(tail(&[&long, &long])[0].len(), TAIL_LINE_BYTES);
    }
}
