//! The full output of one tool call (Ctrl-O): a scrollable page over the
//! whole screen, one output line per row (a longer line is cut with `…`).
//!
//! Invariants:
//! - The view owns its lines (the call's result as the model got it, with
//!   escape sequences dropped), so the transcript's cells stay bounded by
//!   what they show.
//! - `top` is clamped when drawn, so End (`usize::MAX`) shows the last page
//!   at any height.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Clear;

use crate::palette::Palette;
use crate::render::text::{fit_width, sanitize, str_width};

/// A tool call's output, scrolled.
#[derive(Debug, Clone)]
pub struct OutputView {
    pub title: String,
    lines: Vec<String>,
    /// The first line shown.
    top: usize,
    /// Rows of text the last frame showed (a page).
    page: usize,
}

impl OutputView {
    pub fn new(title: impl Into<String>, output: &str) -> Self {
        let lines = output
            .trim_end_matches('\n')
            .split('\n')
            .map(|line| sanitize(line).into_owned())
            .collect();
        Self {
            title: title.into(),
            lines,
            top: 0,
            page: 1,
        }
    }

    pub fn lines(&self) -> usize {
        self.lines.len()
    }

    /// The first line shown.
    pub fn top(&self) -> usize {
        self.top.min(self.last_top())
    }

    /// Moves down by `rows` (up when negative).
    pub fn scroll(&mut self, rows: isize) {
        self.top = self.top().saturating_add_signed(rows).min(self.last_top());
    }

    /// Moves by a page (`pages` of them; up when negative).
    pub fn scroll_pages(&mut self, pages: isize) {
        let page = isize::try_from(self.page.max(1)).unwrap_or(1);
        self.scroll(pages.saturating_mul(page));
    }

    pub fn home(&mut self) {
        self.top = 0;
    }

    pub fn end(&mut self) {
        self.top = usize::MAX;
    }

    fn last_top(&self) -> usize {
        self.lines.len().saturating_sub(self.page.max(1))
    }

    /// Draws the view over `area`: a title row, the lines, a footer row.
    pub fn draw(&mut self, frame: &mut Frame, area: Rect, p: Palette) {
        frame.render_widget(Clear, area);
        if area.height == 0 || area.width == 0 {
            return;
        }
        let width = usize::from(area.width);
        self.page = usize::from(area.height.saturating_sub(2)).max(1);
        let top = self.top();
        self.top = top;
        let buf = frame.buffer_mut();
        let title = fit_width(&format!(" {} ", self.title), width);
        buf.set_line(
            area.x,
            area.y,
            &Line::from(Span::styled(title, p.accent())),
            area.width,
        );
        let rows = (area.y + 1)..area.bottom().saturating_sub(1);
        for (y, line) in rows.zip(self.lines.iter().skip(top)) {
            let text = fit_width(line, width);
            buf.set_line(area.x, y, &Line::from(text), area.width);
        }
        if area.height >= 2 {
            let last = (top + self.page).min(self.lines.len());
            let footer = format!(
                " lines {}–{last} of {} · ↑/↓ PgUp/PgDn Home/End · Esc closes ",
                (top + 1).min(last),
                self.lines.len()
            );
            let footer = fit_width(&footer, width);
            let x = area.x + area.width.saturating_sub(str_width(&footer) as u16);
            buf.set_line(
                x,
                area.bottom() - 1,
                &Line::from(Span::styled(footer, p.dim())),
                area.width,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn screen(view: &mut OutputView, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(40, height)).unwrap();
        terminal
            .draw(|frame| view.draw(frame, frame.area(), Palette::default()))
            .unwrap();
        let buffer = terminal.backend().buffer();
        (0..height)
            .map(|y| {
                (0..40)
                    .map(|x| buffer[(x, y)].symbol().to_string())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn every_line_can_be_reached_and_the_ends_clamp() {
        let text: String = (1..=400).map(|i| format!("row {i:03}\n")).collect();
        let mut view = OutputView::new("bash seq", &text);
        assert_eq!(view.lines(), 400);
        let first = screen(&mut view, 12);
        assert!(
            first.contains("row 001") && first.contains("row 010"),
            "{first}"
        );
        assert!(!first.contains("row 011"), "{first}");
        view.end();
        let last = screen(&mut view, 12);
        assert!(
            last.contains("row 400") && last.contains("row 391"),
            "{last}"
        );
        assert!(last.contains("lines 391–400 of 400"), "{last}");
        view.scroll(5);
        assert_eq!(view.top(), 390);
        view.scroll_pages(-1);
        assert_eq!(view.top(), 380);
        view.home();
        assert!(screen(&mut view, 12).contains("row 001"));
    }
}
