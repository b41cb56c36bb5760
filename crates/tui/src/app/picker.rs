//! The `/rewind` picker: the session's prompts, newest first, filtered by
//! typing; and its box, drawn over the frame after the view's.
//!
//! Only the user's own prompts are offered (not tool results, not gyre's
//! notes), since a rewind goes back to before something the user said.

use std::sync::Arc;

use gyre_protocol::{Message, Origin, Part, Role};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Padding};

use crate::palette::Palette;
use crate::render::text::{fit_width, str_width};

/// A prompt to rewind to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub message_id: String,
    pub text: String,
    /// 1 for the session's first prompt.
    pub number: usize,
}

/// The prompts and what is selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindPicker {
    /// Newest first.
    prompts: Vec<Prompt>,
    filter: String,
    /// Index into the visible prompts.
    selected: usize,
}

impl RewindPicker {
    /// The picker over `messages`' prompts (`None`: there is none).
    pub fn from_messages(messages: &[Arc<Message>]) -> Option<Self> {
        let mut prompts: Vec<Prompt> = Vec::new();
        for message in messages.iter().filter(|m| is_prompt(m)) {
            let text = message.text();
            if !text.trim().is_empty() {
                prompts.push(Prompt {
                    message_id: message.id.clone(),
                    text,
                    number: prompts.len() + 1,
                });
            }
        }
        prompts.reverse();
        (!prompts.is_empty()).then_some(Self {
            prompts,
            filter: String::new(),
            selected: 0,
        })
    }

    fn visible(&self) -> Vec<&Prompt> {
        let filter = self.filter.to_lowercase();
        self.prompts
            .iter()
            .filter(|p| filter.is_empty() || p.text.to_lowercase().contains(&filter))
            .collect()
    }

    pub fn selected(&self) -> Option<&Prompt> {
        let visible = self.visible();
        visible
            .get(self.selected.min(visible.len().saturating_sub(1)))
            .copied()
    }

    pub fn move_selection(&mut self, step: isize) {
        let last = self.visible().len().saturating_sub(1);
        self.selected = self.selected.saturating_add_signed(step).min(last);
    }

    pub fn push_filter(&mut self, c: char) {
        self.filter.push(c);
        self.selected = 0;
    }

    pub fn pop_filter(&mut self) {
        self.filter.pop();
        self.selected = 0;
    }
}

/// A message the user typed (not a tool result, not gyre's own note).
fn is_prompt(message: &Message) -> bool {
    message.role == Role::User
        && message.origin == Origin::Conversation
        && message.parts.iter().all(|p| matches!(p, Part::Text { .. }))
}

/// Draws the picker centred over the frame.
pub(super) fn draw(frame: &mut Frame, picker: &RewindPicker, p: Palette) {
    let area = frame.area();
    let visible = picker.visible();
    let width = area.width.min(100);
    let height = (visible.len() as u16)
        .saturating_add(4)
        .clamp(5, area.height);
    let rect = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    frame.render_widget(Clear, rect);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(p.border())
        .title(Span::styled(" Rewind to before a prompt ", p.accent()))
        .padding(Padding::horizontal(1));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    if inner.is_empty() {
        return;
    }
    let inner_width = usize::from(inner.width);
    let mut lines = vec![
        Line::from(Span::styled(
            fit_width(
                "Files and conversation go back; the prompt returns to the input.",
                inner_width,
            ),
            p.dim(),
        )),
        Line::from(Span::styled(
            fit_width(&format!("Filter: {}▏", picker.filter), inner_width),
            p.text(),
        )),
    ];
    let rows = usize::from(inner.height).saturating_sub(lines.len());
    let selected = picker.selected.min(visible.len().saturating_sub(1));
    let start = (selected + 1).saturating_sub(rows);
    if visible.is_empty() {
        lines.push(Line::from(Span::styled("  no prompt matches", p.dim())));
    }
    for (row, prompt) in visible.iter().enumerate().skip(start).take(rows) {
        let marker = if row == selected { "› " } else { "  " };
        let first = prompt.text.lines().next().unwrap_or("");
        let text = fit_width(
            &format!("{marker}#{:<2} {first}", prompt.number),
            inner_width,
        );
        let style = if row == selected {
            p.selected()
        } else {
            p.text()
        };
        let pad = inner_width.saturating_sub(str_width(&text));
        lines.push(Line::from(Span::styled(
            format!("{text}{}", " ".repeat(pad)),
            style,
        )));
    }
    for (y, line) in (inner.y..inner.bottom()).zip(lines.iter()) {
        frame.buffer_mut().set_line(inner.x, y, line, inner.width);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gyre_protocol::{Outcome, ToolResult};

    #[test]
    fn only_the_users_prompts_newest_first() {
        let messages: Vec<Arc<Message>> = vec![
            Message::user_text("u1", "first prompt"),
            Message::new("a1", Role::Assistant, vec![Part::text("answer")]),
            Message::new(
                "r1",
                Role::User,
                vec![Part::ToolResult(ToolResult::text(
                    "c",
                    "bash",
                    "out",
                    Outcome::Success,
                ))],
            ),
            Message::user_text("u2", "second\nprompt"),
            Message::user_text("n1", "a note").with_origin(Origin::Gyre),
        ]
        .into_iter()
        .map(Arc::new)
        .collect();
        let mut picker = RewindPicker::from_messages(&messages).unwrap();
        assert_eq!(picker.selected().unwrap().message_id, "u2");
        assert_eq!(picker.selected().unwrap().number, 2);
        picker.move_selection(5);
        assert_eq!(picker.selected().unwrap().message_id, "u1");
        picker.push_filter('s');
        picker.push_filter('e');
        assert_eq!(picker.selected().unwrap().message_id, "u2");
        assert!(RewindPicker::from_messages(&messages[1..3]).is_none());
    }
}
