//! Drawing a frame: [`Screen`] holds everything a frame needs, [`draw`]
//! lays it out (transcript, todo panel, queued prompts, input, status line,
//! overlay on top).
//!
//! Invariants:
//! - Drawing is a pure function of the [`Screen`] (the clock included) and
//!   the cells' caches; it never panics, at any size (1×1 included): parts
//!   that do not fit are left out, the transcript first.
//! - Only the cells in view (and those scrolled past) are laid out; the
//!   transcript is bottom-anchored, [`ScrollState::offset`] rows up.

mod dialogs;
mod output_view;
mod overlay;
mod panels;
mod status_line;
mod transcript_view;

pub mod bench;

use tokio::time::Instant;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui_textarea::TextArea;

use gyre_protocol::Todo;

pub use dialogs::{
    CompletionItem, CompletionPopup, HelpEntry, PermissionChoice, PermissionDialog, SessionEntry,
    SessionPicker,
};

pub use output_view::OutputView;

use crate::transcript::{StatusInfo, Transcript};

/// How far the transcript is scrolled: rows up from the bottom (0: the
/// newest row is at the bottom and new output stays in view).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ScrollState {
    pub offset: usize,
}

impl ScrollState {
    pub const BOTTOM: ScrollState = ScrollState { offset: 0 };

    /// Scrolled up by `rows` (down when negative), never below the bottom.
    pub fn scrolled(self, rows: isize) -> Self {
        Self {
            offset: self.offset.saturating_add_signed(rows),
        }
    }
}

/// What floats over the screen.
#[derive(Debug, Clone, Copy)]
pub enum Overlay<'a> {
    Permission(&'a PermissionDialog),
    SessionPicker(&'a SessionPicker),
    Help(&'a [HelpEntry<'a>]),
    /// Suggestions shown just above the input.
    Completion(&'a CompletionPopup),
}

/// Everything one frame shows.
#[derive(Clone, Copy)]
pub struct Screen<'a> {
    pub transcript: &'a Transcript,
    pub status: &'a StatusInfo,
    /// The editor, owned by the app. Draw gives it a border; the app should
    /// not set a block on it.
    pub input: &'a TextArea<'static>,
    pub scroll: ScrollState,
    pub overlay: Option<Overlay<'a>>,
    /// The todo panel, when shown.
    pub todos: Option<&'a [Todo]>,
    /// Prompts waiting for the current run.
    pub queued: &'a [String],
    /// The clock for spinners, elapsed times and countdowns.
    pub now: Instant,
    /// The first cell drawn: those above are in the terminal's scrollback
    /// (inline screen); 0 in the alternate screen.
    pub first_cell: usize,
}

impl<'a> Screen<'a> {
    /// A screen with the transcript's status, bottom-anchored, no overlay,
    /// no todo panel, nothing queued.
    pub fn new(transcript: &'a Transcript, input: &'a TextArea<'static>, now: Instant) -> Self {
        Self {
            transcript,
            status: transcript.status(),
            input,
            scroll: ScrollState::BOTTOM,
            overlay: None,
            todos: None,
            queued: &[],
            now,
            first_cell: 0,
        }
    }
}

/// What a draw found out that the app needs for the next input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drawn {
    /// The scroll state clamped to the transcript's height (keep it).
    pub scroll: ScrollState,
    /// Rows of the transcript area (a page for PageUp/PageDown).
    pub transcript_rows: u16,
}

/// Rows the input box may grow to (text rows, borders excluded).
const INPUT_MAX_ROWS: u16 = 8;
/// Rows of the todo panel (items; one more for its title).
const TODO_MAX_ROWS: u16 = 8;
/// Queued prompts listed (then "+N more").
const QUEUED_MAX_ROWS: u16 = 3;

/// Rows of the parts below the transcript: todo panel, queued prompts,
/// input box (borders included).
fn panel_rows(screen: &Screen) -> (u16, u16, u16) {
    let input_rows = (screen.input.lines().len() as u16).clamp(1, INPUT_MAX_ROWS) + 2;
    let todo_rows = match screen.todos {
        Some(todos) if !todos.is_empty() => (todos.len() as u16).min(TODO_MAX_ROWS) + 1,
        _ => 0,
    };
    let queued_rows = match screen.queued.len() as u16 {
        0 => 0,
        n if n > QUEUED_MAX_ROWS => QUEUED_MAX_ROWS + 1,
        n => n,
    };
    (todo_rows, queued_rows, input_rows)
}

/// The rows the inline screen needs at `width`: the cells not yet in the
/// scrollback, the panels, the input and the status line, at most `max`;
/// while an overlay is open, at least [`OVERLAY_ROWS`] (or the popup's
/// rows above the input), so it has room.
pub fn inline_height(screen: &Screen, width: u16, max: u16) -> u16 {
    let (todo, queued, input) = panel_rows(screen);
    let cells = transcript_view::rows_from(screen, width, usize::from(max));
    let chrome = todo + queued + input + 1;
    let rows = (usize::from(chrome) + cells).min(usize::from(max)) as u16;
    let least = match screen.overlay {
        None => 0,
        Some(Overlay::Completion(_)) => chrome + overlay::COMPLETION_ROWS + 2,
        Some(_) => OVERLAY_ROWS,
    };
    rows.max(least.min(max))
}

/// Rows the inline screen takes at least while a dialog or picker is open.
pub const OVERLAY_ROWS: u16 = 24;

/// The lines of `cells` of the transcript at `width`, each cell preceded
/// by the blank row that separates it from the one above (what the inline
/// screen writes to the scrollback).
pub fn history_lines(
    transcript: &Transcript,
    cells: std::ops::Range<usize>,
    width: u16,
    now: Instant,
) -> Vec<ratatui::text::Line<'static>> {
    transcript_view::history_lines(transcript, cells, width, now)
}

/// Draws `screen` into the whole frame.
pub fn draw(frame: &mut Frame, screen: &Screen) -> Drawn {
    let area = frame.area();
    let palette = screen.transcript.palette();
    let (todo_rows, queued_rows, input_rows) = panel_rows(screen);
    // What does not fit goes, the transcript first, then the panels; the
    // status line and the input stay longest.
    let mut budget = area.height;
    let mut take = |rows: u16| {
        let got = rows.min(budget);
        budget -= got;
        got
    };
    let status_h = take(1);
    let input_h = take(input_rows);
    let todo_h = take(todo_rows);
    let queued_h = take(queued_rows);
    let [
        transcript_area,
        todo_area,
        queued_area,
        input_area,
        status_area,
    ] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(todo_h),
        Constraint::Length(queued_h),
        Constraint::Length(input_h),
        Constraint::Length(status_h),
    ])
    .areas(area);

    let scroll = transcript_view::draw(frame, transcript_area, screen);
    if let Some(todos) = screen.todos {
        panels::todos(frame, todo_area, todos, palette);
    }
    panels::queued(frame, queued_area, screen.queued, palette);
    panels::input(frame, input_area, screen.input, palette);
    status_line::draw(frame, status_area, screen);
    if let Some(overlay) = screen.overlay {
        overlay::draw(frame, area, input_area, overlay, palette);
    }
    Drawn {
        scroll,
        transcript_rows: transcript_area.height,
    }
}
