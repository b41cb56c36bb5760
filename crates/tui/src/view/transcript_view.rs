//! The transcript area: cells laid out bottom-up until the view (and the
//! rows scrolled past) is filled.
//!
//! The per-cell row cache is the height index: a cell's height at a width
//! is the length of its cached rows, so scrolling up far walks cached cells
//! only (no layout), and a frame at the bottom lays out only what shows.

use std::sync::Arc;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::{Screen, ScrollState};
use crate::render::cell::{CellCtx, cell_lines};
use crate::render::text::str_width;
use crate::transcript::{Cell, CellKind, NoticeKind, Transcript};

/// Draws the transcript; returns the scroll state clamped to its height.
pub(super) fn draw(frame: &mut Frame, area: Rect, screen: &Screen) -> ScrollState {
    let transcript = screen.transcript;
    let palette = transcript.palette();
    if area.is_empty() {
        return screen.scroll;
    }
    if transcript.is_empty() {
        let lines = banner(palette);
        for (y, line) in (area.y..area.bottom()).zip(lines.iter()) {
            frame.buffer_mut().set_line(area.x, y, line, area.width);
        }
        return ScrollState::BOTTOM;
    }
    let ctx = CellCtx {
        width: area.width,
        palette,
        reasoning: transcript.reasoning_view(),
        now: screen.now,
    };
    let height = usize::from(area.height);
    let wanted = screen.scroll.offset.saturating_add(height);
    let cells = transcript.cells();
    let first_cell = screen.first_cell.min(cells.len());
    // Newest first: (rows, whether a blank row precedes them).
    let mut chunks: Vec<(Arc<[Line<'static>]>, bool)> = Vec::new();
    let mut total = 0usize;
    for (index, cell) in cells.iter().enumerate().skip(first_cell).rev() {
        let lines = cell_lines(cell, &ctx);
        let gap = index > 0 && gap_between(&cells[index - 1], cell);
        total += lines.len() + usize::from(gap);
        chunks.push((lines, gap));
        if total >= wanted {
            break;
        }
    }
    draw_rows(frame, area, screen, &chunks, total)
}

/// The greeting of an empty transcript.
fn banner(palette: crate::palette::Palette) -> [Line<'static>; 2] {
    [
        Line::from(Span::styled("gyre", palette.accent())),
        Line::from(Span::styled(
            "Type a prompt and press Enter. /help lists commands.",
            palette.dim(),
        )),
    ]
}

/// Rows the cells from `screen.first_cell` take at `width` (the banner's
/// when the transcript is empty), counting at most to `max`.
pub(super) fn rows_from(screen: &Screen, width: u16, max: usize) -> usize {
    let transcript = screen.transcript;
    if transcript.is_empty() {
        return 2;
    }
    let ctx = CellCtx {
        width,
        palette: transcript.palette(),
        reasoning: transcript.reasoning_view(),
        now: screen.now,
    };
    let cells = transcript.cells();
    let mut total = 0usize;
    for (index, cell) in cells.iter().enumerate().skip(screen.first_cell).rev() {
        let gap = index > 0 && gap_between(&cells[index - 1], cell);
        total += cell_lines(cell, &ctx).len() + usize::from(gap);
        if total >= max {
            break;
        }
    }
    total
}

/// The lines of `range`'s cells at `width`, each after its separating
/// blank row (none before the transcript's first cell).
pub(super) fn history_lines(
    transcript: &Transcript,
    range: std::ops::Range<usize>,
    width: u16,
    now: tokio::time::Instant,
) -> Vec<Line<'static>> {
    let ctx = CellCtx {
        width,
        palette: transcript.palette(),
        reasoning: transcript.reasoning_view(),
        now,
    };
    let cells = transcript.cells();
    let mut out = Vec::new();
    for index in range {
        let Some(cell) = cells.get(index) else { break };
        if index > 0 && gap_between(&cells[index - 1], cell) {
            out.push(Line::default());
        }
        out.extend(cell_lines(cell, &ctx).iter().cloned());
    }
    out
}

/// Draws the collected rows (newest chunk first), scrolled by the offset.
fn draw_rows(
    frame: &mut Frame,
    area: Rect,
    screen: &Screen,
    chunks: &[(Arc<[Line<'static>]>, bool)],
    total: usize,
) -> ScrollState {
    let palette = screen.transcript.palette();
    let height = usize::from(area.height);
    let offset = screen.scroll.offset.min(total.saturating_sub(height));
    // Rows [first, last) of the collected ones, counted from the top.
    let last = total - offset;
    let first = last.saturating_sub(height);
    let mut row = 0usize;
    let mut y = area.y;
    let buf = frame.buffer_mut();
    'chunks: for (lines, gap) in chunks.iter().rev() {
        let blank = gap.then_some(None);
        for line in blank.into_iter().chain(lines.iter().map(Some)) {
            if row >= last {
                break 'chunks;
            }
            if row >= first {
                if let Some(line) = line {
                    buf.set_line(area.x, y, line, area.width);
                }
                y += 1;
            }
            row += 1;
        }
    }
    if offset > 0 {
        let text = format!(" ↓ {offset} more ");
        let width = str_width(&text) as u16;
        if width <= area.width {
            let line = Line::from(Span::styled(text, palette.selected()));
            buf.set_line(area.right() - width, area.bottom() - 1, &line, width);
        }
    }
    ScrollState { offset }
}

/// Whether a blank row separates two cells: not between tool calls, nor
/// between one-line notices.
fn gap_between(previous: &Cell, cell: &Cell) -> bool {
    let short_notice = |cell: &Cell| matches!(&cell.kind, CellKind::Notice { kind, .. } if *kind != NoticeKind::Command);
    let both_tools = matches!(
        (&previous.kind, &cell.kind),
        (CellKind::Tool(_), CellKind::Tool(_))
    );
    !(both_tools || short_notice(previous) && short_notice(cell))
}
