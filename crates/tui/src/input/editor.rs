//! The prompt editor: a multi-line [`TextArea`] with the word under the
//! cursor at hand (for `@path` and `/command` completion) and text put in
//! whole (history, paste, rewind).
//!
//! Invariants:
//! - The editor never sends anything: the app decides what Enter does.
//!   Text put in (a paste included) only ever lands in the editor.
//! - Line endings are `\n` inside; pasted `\r\n` and lone `\r` become `\n`,
//!   and tabs stay tabs.

use ratatui::style::{Modifier, Style};
use ratatui_textarea::{CursorMove, Input, Key, TextArea, WrapMode};

/// What the empty editor says.
pub const PLACEHOLDER: &str = "Type a prompt · / for commands · @ for files · ! to run a command";

/// The word the cursor is in or just after (no whitespace), on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub row: usize,
    /// Character column where the word begins.
    pub start: usize,
    /// The word up to the cursor.
    pub text: String,
    /// Characters of the word after the cursor.
    pub rest: usize,
}

/// The editor.
#[derive(Debug)]
pub struct Editor {
    area: TextArea<'static>,
    placeholder: String,
}

impl Default for Editor {
    fn default() -> Self {
        Self::new()
    }
}

impl Editor {
    pub fn new() -> Self {
        let mut editor = Self {
            area: TextArea::default(),
            placeholder: PLACEHOLDER.to_string(),
        };
        editor.set_lines(vec![String::new()]);
        editor
    }

    fn set_lines(&mut self, lines: Vec<String>) {
        let mut area = TextArea::new(lines);
        area.set_cursor_line_style(Style::default());
        area.set_cursor_style(Style::default().add_modifier(Modifier::REVERSED));
        area.set_placeholder_text(self.placeholder.clone());
        area.set_placeholder_style(Style::default().add_modifier(Modifier::DIM));
        area.set_wrap_mode(WrapMode::WordOrGlyph);
        area.move_cursor(CursorMove::Bottom);
        area.move_cursor(CursorMove::End);
        self.area = area;
    }

    /// The widget the view draws.
    pub fn textarea(&self) -> &TextArea<'static> {
        &self.area
    }

    /// Replaces what the empty editor says (`None`: the usual words).
    pub fn set_placeholder(&mut self, text: Option<&str>) {
        self.placeholder = text.unwrap_or(PLACEHOLDER).to_string();
        self.area.set_placeholder_text(self.placeholder.clone());
    }

    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    pub fn is_empty(&self) -> bool {
        self.area.is_empty()
    }

    /// Replaces the whole text; the cursor goes to its end.
    pub fn set_text(&mut self, text: &str) {
        self.set_lines(normalise(text).split('\n').map(str::to_string).collect());
    }

    pub fn clear(&mut self) {
        self.set_lines(vec![String::new()]);
    }

    /// Takes the text out, leaving the editor empty.
    pub fn take(&mut self) -> String {
        let text = self.text();
        self.clear();
        text
    }

    pub fn insert_newline(&mut self) {
        self.area.insert_newline();
    }

    /// Inserts `text` at the cursor (a paste: never sent).
    pub fn insert(&mut self, text: &str) {
        self.area.insert_str(normalise(text));
    }

    /// An editing key, with the text area's own bindings (readline's
    /// Ctrl-A/E, Ctrl-K, Ctrl-W, Alt-B/F, Ctrl-F/B, Alt-D among them),
    /// except Ctrl-U, which deletes to the line's start as in a shell
    /// (the text area would undo); whether the text changed.
    pub fn input(&mut self, input: impl Into<Input>) -> bool {
        let input: Input = input.into();
        if input.ctrl && !input.alt && input.key == Key::Char('u') {
            return self.area.delete_line_by_head();
        }
        self.area.input(input)
    }

    /// (row, character column) of the cursor.
    pub fn cursor(&self) -> (usize, usize) {
        let cursor = self.area.cursor();
        (cursor.0, cursor.1)
    }

    pub fn on_first_line(&self) -> bool {
        self.cursor().0 == 0
    }

    pub fn on_last_line(&self) -> bool {
        self.cursor().0 + 1 >= self.area.lines().len()
    }

    /// The word at the cursor.
    pub fn token(&self) -> Option<Token> {
        let (row, col) = self.cursor();
        let line: Vec<char> = self.area.lines().get(row)?.chars().collect();
        let col = col.min(line.len());
        let start = line[..col]
            .iter()
            .rposition(|c| c.is_whitespace())
            .map_or(0, |at| at + 1);
        let rest = line[col..]
            .iter()
            .position(|c| c.is_whitespace())
            .unwrap_or(line.len() - col);
        Some(Token {
            row,
            start,
            text: line[start..col].iter().collect(),
            rest,
        })
    }

    /// Replaces the word `token` (all of it) with `with`.
    pub fn replace_token(&mut self, token: &Token, with: &str) {
        let chars = token.text.chars().count() + token.rest;
        let (Ok(row), Ok(col)) = (u16::try_from(token.row), u16::try_from(token.start)) else {
            return;
        };
        self.area.move_cursor(CursorMove::Jump(row, col));
        self.area.delete_str(chars);
        self.area.insert_str(with);
    }
}

fn normalise(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_in_and_out_with_normalised_line_endings() {
        let mut editor = Editor::new();
        assert!(editor.is_empty());
        editor.insert("a\r\nb\rc");
        assert_eq!(editor.text(), "a\nb\nc");
        assert_eq!(editor.cursor(), (2, 1));
        assert!(editor.on_last_line() && !editor.on_first_line());
        assert_eq!(editor.take(), "a\nb\nc");
        assert!(editor.is_empty());
    }

    #[test]
    fn the_word_at_the_cursor_is_replaced_whole() {
        let mut editor = Editor::new();
        editor.set_text("look at @src/ma please");
        editor
            .area
            .move_cursor(CursorMove::Jump(0, "look at @src/m".len() as u16));
        let token = editor.token().unwrap();
        assert_eq!(token.text, "@src/m");
        assert_eq!(token.start, 8);
        assert_eq!(token.rest, 1);
        editor.replace_token(&token, "@src/main.rs");
        assert_eq!(editor.text(), "look at @src/main.rs please");
    }
}
