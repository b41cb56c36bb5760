//! The small panels: the todo list, the queued prompts and the input box.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders};
use ratatui_textarea::TextArea;

use gyre_protocol::{Todo, TodoStatus};

use super::{QUEUED_MAX_ROWS, TODO_MAX_ROWS};
use crate::palette::Palette;
use crate::render::text::fit_width;
use crate::render::wrap::styled;

/// The todo panel: a title row, then one row per item (open ones first
/// when they do not all fit).
pub(super) fn todos(frame: &mut Frame, area: Rect, todos: &[Todo], palette: Palette) {
    if area.is_empty() || todos.is_empty() {
        return;
    }
    let done = todos
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .count();
    let title = format!(" Todos {done}/{} ", todos.len());
    let block = Block::new()
        .borders(Borders::TOP)
        .border_style(palette.border())
        .title(Span::styled(title, palette.accent()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let rows = usize::from(inner.height.min(TODO_MAX_ROWS));
    let shown: Vec<&Todo> = if todos.len() <= rows {
        todos.iter().collect()
    } else {
        let mut open: Vec<&Todo> = todos.iter().filter(|t| t.status.is_open()).collect();
        open.truncate(rows);
        open
    };
    let width = usize::from(inner.width);
    for (y, todo) in (inner.y..inner.bottom()).zip(shown) {
        let (mark, style) = match todo.status {
            TodoStatus::Pending => ("☐ ", palette.text()),
            TodoStatus::InProgress => ("◐ ", palette.running()),
            TodoStatus::Completed => ("☑ ", palette.dim()),
            TodoStatus::Cancelled => ("⊘ ", palette.dim()),
        };
        let text = fit_width(&todo.content, width.saturating_sub(2));
        let line = Line::from(vec![Span::styled(mark, style), styled(text, style)]);
        frame.buffer_mut().set_line(inner.x, y, &line, inner.width);
    }
}

/// Prompts waiting for the run, one row each, then "+N more".
pub(super) fn queued(frame: &mut Frame, area: Rect, queued: &[String], palette: Palette) {
    let width = usize::from(area.width);
    let listed = queued.len().min(usize::from(QUEUED_MAX_ROWS));
    let mut rows: Vec<Line> = queued[..listed]
        .iter()
        .map(|prompt| {
            let first = prompt.lines().next().unwrap_or("");
            Line::from(vec![
                Span::styled("⏎ queued: ", palette.dim()),
                styled(fit_width(first, width.saturating_sub(10)), palette.dim()),
            ])
        })
        .collect();
    if queued.len() > listed {
        rows.push(Line::from(Span::styled(
            format!("  +{} more queued", queued.len() - listed),
            palette.dim(),
        )));
    }
    for (y, line) in (area.y..area.bottom()).zip(rows.iter()) {
        frame.buffer_mut().set_line(area.x, y, line, area.width);
    }
}

/// The editor in a rounded box.
pub(super) fn input(frame: &mut Frame, area: Rect, input: &TextArea<'static>, palette: Palette) {
    if area.is_empty() {
        return;
    }
    let block = Block::bordered()
        .border_type(ratatui::widgets::BorderType::Rounded)
        .border_style(palette.border());
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if !inner.is_empty() {
        frame.render_widget(input, inner);
    }
}
