//! Drawing the overlays: the permission dialog, the session picker, help,
//! and the completion popup above the input.
//!
//! Each is a bordered box over a cleared area, sized to its content and
//! clamped to the screen; content that does not fit is cut, never an error.

use tokio::time::Instant;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Padding};

use super::{
    CompletionPopup, HelpEntry, Overlay, PermissionChoice, PermissionDialog, SessionPicker,
};
use crate::palette::Palette;
use crate::render::cell::{CellCtx, diff_lines};
use crate::render::text::{fit_width, str_width};
use crate::render::wrap::{Logical, styled, wrap};
use crate::transcript::ReasoningView;
use crate::transcript::tool::{edit_preview, summarize_call};

/// Widest a dialog grows.
const DIALOG_WIDTH: u16 = 80;
/// Completion rows shown.
pub(super) const COMPLETION_ROWS: u16 = 8;

pub(super) fn draw(
    frame: &mut Frame,
    area: Rect,
    input_area: Rect,
    overlay: Overlay,
    palette: Palette,
) {
    match overlay {
        Overlay::Permission(dialog) => permission(frame, area, dialog, palette),
        Overlay::SessionPicker(picker) => session_picker(frame, area, picker, palette),
        Overlay::Help(entries) => help(frame, area, entries, palette),
        Overlay::Completion(popup) => completion(frame, area, input_area, popup, palette),
    }
}

/// A `width`×`height` rectangle centred in `area` (clamped to it).
fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

/// Clears `rect`, draws a titled border; returns the inside.
fn boxed(frame: &mut Frame, rect: Rect, title: &str, palette: Palette) -> Rect {
    frame.render_widget(Clear, rect);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(palette.border())
        .title(Span::styled(format!(" {title} "), palette.accent()))
        .padding(Padding::horizontal(1));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    inner
}

fn put_lines(frame: &mut Frame, inner: Rect, lines: &[Line]) {
    for (y, line) in (inner.y..inner.bottom()).zip(lines) {
        frame.buffer_mut().set_line(inner.x, y, line, inner.width);
    }
}

fn permission(frame: &mut Frame, area: Rect, dialog: &PermissionDialog, p: Palette) {
    let width = area.width.min(DIALOG_WIDTH);
    let inner_width = width.saturating_sub(4).max(1);
    let mut head = Vec::new();
    let title = Logical::words(vec![
        Span::styled(format!("{} ", dialog.call.name), p.tool_name()),
        styled(summarize_call(&dialog.call), p.text()),
    ]);
    wrap(&title, inner_width, &mut head);
    if !dialog.reason.is_empty() {
        wrap(
            &Logical::text(dialog.reason.clone(), p.dim()),
            inner_width,
            &mut head,
        );
    }
    let mut choices = vec![Line::default()];
    for (i, choice) in dialog.choices().into_iter().enumerate() {
        let selected = choice == dialog.selected;
        let marker = if selected { "› " } else { "  " };
        let label = match choice {
            PermissionChoice::AllowOnce => "Allow once".to_string(),
            PermissionChoice::AllowAlways => format!(
                "Always allow  {}",
                dialog.always_rule.as_deref().unwrap_or("")
            ),
            PermissionChoice::Deny => "Deny".to_string(),
        };
        let text = fit_width(
            &format!("{marker}{}. {label}", i + 1),
            usize::from(inner_width),
        );
        let style = if selected { p.selected() } else { p.text() };
        choices.push(Line::from(Span::styled(text, style)));
    }
    // The preview gets the rows the rest leaves.
    let fixed = head.len() + choices.len() + 2;
    let room = usize::from(area.height).saturating_sub(fixed);
    let mut preview = Vec::new();
    if let Some(diff) = edit_preview(&dialog.call) {
        let ctx = CellCtx {
            width: inner_width,
            palette: p,
            reasoning: ReasoningView::Collapsed,
            now: Instant::now(),
        };
        let shown = room.saturating_sub(2).min(diff.lines.len());
        if room >= 3 {
            preview.push(Line::default());
            diff_lines(&diff, shown, &ctx, &mut preview);
            preview.truncate(room);
        }
    }
    let mut lines = head;
    lines.extend(preview);
    lines.extend(choices);
    let rect = centered(area, width, lines.len() as u16 + 2);
    let inner = boxed(frame, rect, "Permission needed", p);
    // Keep the choices in view when the box is cut: drop rows above them.
    let skip = lines.len().saturating_sub(usize::from(inner.height));
    let keep_head = usize::from(inner.height).saturating_sub(4).min(lines.len());
    let shown: Vec<Line> = if skip == 0 {
        lines
    } else {
        let tail_start = lines.len() - (usize::from(inner.height) - keep_head);
        lines[..keep_head]
            .iter()
            .chain(&lines[tail_start..])
            .cloned()
            .collect()
    };
    put_lines(frame, inner, &shown);
}

fn session_picker(frame: &mut Frame, area: Rect, picker: &SessionPicker, p: Palette) {
    let visible = picker.visible();
    let width = area.width.min(100);
    let height = (visible.len() as u16).saturating_add(3).max(4);
    let rect = centered(area, width, height);
    let inner = boxed(frame, rect, "Resume a session", p);
    if inner.is_empty() {
        return;
    }
    let inner_width = usize::from(inner.width);
    let count = format!("{} of {}", visible.len(), picker.entries.len());
    let filter = format!("Filter: {}▏", picker.filter);
    let gap = inner_width.saturating_sub(str_width(&filter) + str_width(&count));
    let mut lines = vec![Line::from(vec![
        Span::styled(fit_width(&filter, inner_width), p.text()),
        Span::raw(" ".repeat(gap)),
        Span::styled(count, p.dim()),
    ])];
    let rows = usize::from(inner.height).saturating_sub(1);
    let selected = picker.selected.min(visible.len().saturating_sub(1));
    let start = (selected + 1).saturating_sub(rows);
    if visible.is_empty() {
        lines.push(Line::from(Span::styled("  no session matches", p.dim())));
    }
    for (row, &index) in visible.iter().enumerate().skip(start).take(rows) {
        let Some(entry) = picker.entries.get(index) else {
            continue;
        };
        // The short form read everywhere else (notices, the exit line), a
        // prefix `--resume` accepts.
        let id = gyre_core::short_id(&entry.id);
        let marker = if row == selected { "› " } else { "  " };
        let width = gyre_core::SHORT_ID_CHARS;
        let text = format!(
            "{marker}{id:<width$}  {:<16}  {}",
            entry.updated, entry.title
        );
        let style = if row == selected {
            p.selected()
        } else {
            p.text()
        };
        let text = fit_width(&text, inner_width);
        let pad = inner_width.saturating_sub(str_width(&text));
        lines.push(Line::from(Span::styled(
            format!("{text}{}", " ".repeat(pad)),
            style,
        )));
    }
    put_lines(frame, inner, &lines);
}

fn help(frame: &mut Frame, area: Rect, entries: &[HelpEntry], p: Palette) {
    let key_width = entries.iter().map(|e| str_width(e.keys)).max().unwrap_or(0);
    let width = area.width.min(DIALOG_WIDTH);
    let inner_width = width.saturating_sub(4).max(1);
    let mut lines = Vec::new();
    for entry in entries {
        let key = format!("{:<key_width$}  ", entry.keys);
        let pad = " ".repeat(str_width(&key));
        let logical = Logical::text(entry.description, p.text())
            .prefixed(vec![Span::styled(key, p.accent())], vec![Span::raw(pad)]);
        wrap(&logical, inner_width, &mut lines);
    }
    let rect = centered(area, width, lines.len() as u16 + 2);
    let inner = boxed(frame, rect, "Help", p);
    put_lines(frame, inner, &lines);
}

fn completion(
    frame: &mut Frame,
    area: Rect,
    input_area: Rect,
    popup: &CompletionPopup,
    p: Palette,
) {
    if popup.items.is_empty() {
        return;
    }
    let rows = (popup.items.len() as u16).min(COMPLETION_ROWS);
    let widest = popup
        .items
        .iter()
        .map(|i| str_width(&i.label) + str_width(&i.detail) + 4)
        .max()
        .unwrap_or(0);
    let width = (widest as u16 + 2).clamp(12, 60).min(area.width);
    let height = (rows + 2).min(input_area.y.saturating_sub(area.y));
    if height < 3 {
        return;
    }
    let rect = Rect {
        x: input_area.x,
        y: input_area.y - height,
        width,
        height,
    };
    frame.render_widget(Clear, rect);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(p.border());
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let visible = usize::from(inner.height);
    let selected = popup.selected.min(popup.items.len() - 1);
    let start = (selected + 1).saturating_sub(visible);
    let inner_width = usize::from(inner.width);
    let lines: Vec<Line> = popup
        .items
        .iter()
        .enumerate()
        .skip(start)
        .take(visible)
        .map(|(i, item)| {
            let style = if i == selected {
                p.selected()
            } else {
                p.text()
            };
            let label = fit_width(&item.label, inner_width);
            let room = inner_width.saturating_sub(str_width(&label) + 2);
            let detail = fit_width(&item.detail, room);
            let pad = inner_width.saturating_sub(str_width(&label) + str_width(&detail));
            Line::from(vec![
                Span::styled(format!("{label}{}", " ".repeat(pad)), style),
                Span::styled(detail, if i == selected { style } else { p.dim() }),
            ])
        })
        .collect();
    put_lines(frame, inner, &lines);
}
