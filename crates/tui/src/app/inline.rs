//! The app's side of the inline screen: which cells go to the terminal's
//! scrollback and how many rows the live part needs.
//!
//! Invariants:
//! - Only an inline app hands out history; in the alternate screen every
//!   cell stays drawn by the app (its own scrolling).
//! - A modal (help, pickers, a permission dialog) gets at least
//!   [`view::OVERLAY_ROWS`] rows (the screen's height at most), so it is
//!   drawn as in the alternate screen.

use ratatui::text::Line;
use tokio::time::Instant;

use super::{App, Backend, commands};
use crate::view;

impl<B: Backend> App<B> {
    /// Whether finished cells go to the terminal's scrollback.
    pub fn is_inline(&self) -> bool {
        self.inline
    }

    /// The lines of the cells that became final since the last call, laid
    /// out at `width`, for the scrollback (empty in the alternate screen).
    pub fn take_history(&mut self, width: u16) -> Vec<Line<'static>> {
        if !self.inline {
            return Vec::new();
        }
        let cells = self.transcript.commit_finished();
        if cells.is_empty() {
            return Vec::new();
        }
        self.dirty = true;
        view::history_lines(&self.transcript, cells, width, Instant::now())
    }

    /// Every cell not yet in the scrollback (the app ends), live ones as
    /// they are now.
    pub fn take_all_history(&mut self, width: u16) -> Vec<Line<'static>> {
        if !self.inline {
            return Vec::new();
        }
        let cells = self.transcript.commit_all();
        view::history_lines(&self.transcript, cells, width, Instant::now())
    }

    /// The last `rows` lines of the cells in the scrollback, at `width`.
    pub fn history_tail(&self, width: u16, rows: u16) -> Vec<Line<'static>> {
        if !self.inline {
            return Vec::new();
        }
        let end = self.transcript.committed();
        let now = Instant::now();
        let mut start = end;
        let mut lines = Vec::new();
        while start > 0 && lines.len() < usize::from(rows) {
            start -= 1;
            lines = view::history_lines(&self.transcript, start..end, width, now);
        }
        let skip = lines.len().saturating_sub(usize::from(rows));
        lines.split_off(skip)
    }

    /// The rows the inline screen needs at `width`, at most `max`.
    pub fn inline_height(&self, width: u16, max: u16) -> u16 {
        let help = commands::help_entries();
        let screen = self.screen(&help, Instant::now());
        let rows = view::inline_height(&screen, width, max);
        match self.modal {
            Some(super::Modal::Output(_)) => return max,
            Some(_) => return rows.max(view::OVERLAY_ROWS.min(max)),
            None => {}
        }
        rows
    }
}

impl<B: Backend> crate::terminal::Surface for App<B> {
    fn take_history(&mut self, width: u16) -> Vec<Line<'static>> {
        App::take_history(self, width)
    }

    fn take_all_history(&mut self, width: u16) -> Vec<Line<'static>> {
        App::take_all_history(self, width)
    }

    fn history_tail(&self, width: u16, rows: u16) -> Vec<Line<'static>> {
        App::history_tail(self, width, rows)
    }

    fn live_height(&self, width: u16, max: u16) -> u16 {
        self.inline_height(width, max)
    }

    fn draw(&mut self, frame: &mut ratatui::Frame) {
        App::draw(self, frame)
    }
}
