//! Wrapping styled text to a width, by display width (unicode-width).
//!
//! A [`Logical`] line is content with a prefix for its first row (a list
//! bullet, a quote bar) and one for the rows it wraps onto (indentation), so
//! wrapped Markdown keeps its structure. Words wrap at whitespace; a word
//! wider than the row is broken by characters; [`WrapMode::Chars`] (code,
//! diffs, output) breaks anywhere and keeps indentation.
//!
//! Invariant: every produced row fits `width` columns when the prefix does
//! (at widths narrower than the prefix the row is clipped by the buffer).

use std::borrow::Cow;

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::text::{char_width, sanitize, str_width};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WrapMode {
    Words,
    Chars,
    /// One row, cut at the width (rules, table separators).
    Clip,
}

/// A line before wrapping.
#[derive(Debug, Clone)]
pub(crate) struct Logical {
    pub(crate) prefix: Vec<Span<'static>>,
    pub(crate) continuation: Vec<Span<'static>>,
    pub(crate) spans: Vec<Span<'static>>,
    pub(crate) mode: WrapMode,
}

impl Logical {
    /// Word-wrapped content without prefix.
    pub(crate) fn words(spans: Vec<Span<'static>>) -> Self {
        Self {
            prefix: Vec::new(),
            continuation: Vec::new(),
            spans,
            mode: WrapMode::Words,
        }
    }

    /// Character-wrapped content without prefix.
    pub(crate) fn chars(spans: Vec<Span<'static>>) -> Self {
        Self {
            mode: WrapMode::Chars,
            ..Self::words(spans)
        }
    }

    /// One span of plain text in `style`, word-wrapped.
    pub(crate) fn text(text: impl Into<String>, style: Style) -> Self {
        Self::words(vec![styled(text, style)])
    }

    pub(crate) fn blank() -> Self {
        Self::words(Vec::new())
    }

    /// The same line with `prefix` on its first row and `continuation` on
    /// the others, in front of what it already has.
    pub(crate) fn prefixed(
        mut self,
        prefix: Vec<Span<'static>>,
        continuation: Vec<Span<'static>>,
    ) -> Self {
        let mut first = prefix;
        first.append(&mut self.prefix);
        let mut rest = continuation;
        rest.append(&mut self.continuation);
        self.prefix = first;
        self.continuation = rest;
        self
    }
}

/// A span of sanitised text.
pub(crate) fn styled(text: impl Into<String>, style: Style) -> Span<'static> {
    let text: String = text.into();
    let text = match sanitize(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(clean) => clean,
    };
    Span::styled(text, style)
}

/// Wraps `lines` to `width` columns, appending the rows to `out`.
pub(crate) fn wrap_all(lines: &[Logical], width: u16, out: &mut Vec<Line<'static>>) {
    for line in lines {
        wrap(line, width, out);
    }
}

/// Wraps one logical line to `width` columns, appending its rows to `out`.
pub(crate) fn wrap(line: &Logical, width: u16, out: &mut Vec<Line<'static>>) {
    let width = usize::from(width).max(1);
    let mut rows = Rows {
        out,
        first: true,
        prefix: &line.prefix,
        continuation: &line.continuation,
        width,
        used: 0,
        current: Vec::new(),
        mode: line.mode,
    };
    rows.start_row();
    for span in &line.spans {
        let style = span.style;
        match line.mode {
            WrapMode::Chars => {
                for c in span.content.chars() {
                    rows.push_char(c, style);
                }
            }
            WrapMode::Clip => {
                for c in span.content.chars() {
                    if rows.used + char_width(c) > rows.available() {
                        break;
                    }
                    rows.push_char(c, style);
                }
            }
            WrapMode::Words => {
                for (token, is_space) in tokens(&span.content) {
                    rows.push_token(token, is_space, style);
                }
            }
        }
    }
    rows.end_row();
}

/// Runs of whitespace and of other characters.
fn tokens(s: &str) -> impl Iterator<Item = (&str, bool)> {
    let mut rest = s;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let is_space = first.is_whitespace();
        let end = rest
            .char_indices()
            .find(|(_, c)| c.is_whitespace() != is_space)
            .map_or(rest.len(), |(i, _)| i);
        let (token, tail) = rest.split_at(end);
        rest = tail;
        Some((token, is_space))
    })
}

struct Rows<'a> {
    out: &'a mut Vec<Line<'static>>,
    first: bool,
    prefix: &'a [Span<'static>],
    continuation: &'a [Span<'static>],
    width: usize,
    /// Columns used by content on the current row (prefix excluded).
    used: usize,
    current: Vec<Span<'static>>,
    mode: WrapMode,
}

impl Rows<'_> {
    fn available(&self) -> usize {
        let prefix = if self.first {
            self.prefix
        } else {
            self.continuation
        };
        let prefix_width: usize = prefix.iter().map(|s| str_width(&s.content)).sum();
        self.width.saturating_sub(prefix_width).max(1)
    }

    fn start_row(&mut self) {
        let prefix = if self.first {
            self.prefix
        } else {
            self.continuation
        };
        self.current = prefix.to_vec();
        self.used = 0;
    }

    fn end_row(&mut self) {
        let spans = std::mem::take(&mut self.current);
        self.out.push(Line::from(spans));
    }

    fn new_row(&mut self) {
        // Spaces at the end of a word-wrapped row are not shown.
        if self.mode == WrapMode::Words
            && let Some(last) = self.current.last_mut()
        {
            let trimmed = last.content.trim_end();
            if trimmed.len() != last.content.len() {
                last.content = Cow::Owned(trimmed.to_string());
            }
        }
        self.end_row();
        self.first = false;
        self.start_row();
    }

    fn append(&mut self, text: &str, style: Style) {
        match self.current.last_mut() {
            Some(last) if last.style == style && self.used > 0 => {
                last.content.to_mut().push_str(text);
            }
            _ => self.current.push(Span::styled(text.to_string(), style)),
        }
    }

    fn push_char(&mut self, c: char, style: Style) {
        let w = char_width(c);
        if self.used + w > self.available() && self.used > 0 {
            self.new_row();
        }
        let mut buf = [0u8; 4];
        self.append(c.encode_utf8(&mut buf), style);
        self.used += w;
    }

    fn push_token(&mut self, token: &str, is_space: bool, style: Style) {
        let w = str_width(token);
        let available = self.available();
        if is_space {
            if self.used == 0 && !self.first {
                return;
            }
            if self.used + w > available {
                self.new_row();
                return;
            }
        } else if self.used + w > available {
            if w <= available {
                self.new_row();
            } else {
                for c in token.chars() {
                    self.push_char(c, style);
                }
                return;
            }
        }
        self.append(token, style);
        self.used += w;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(line: &Logical, width: u16) -> Vec<String> {
        let mut out = Vec::new();
        wrap(line, width, &mut out);
        out.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn words_wrap_at_spaces_and_keep_the_continuation_prefix() {
        let line = Logical::text("one two three four", Style::new())
            .prefixed(vec![Span::raw("- ")], vec![Span::raw("  ")]);
        assert_eq!(rows(&line, 10), ["- one two", "  three", "  four"]);
    }

    #[test]
    fn long_words_and_wide_characters_break_by_width() {
        let line = Logical::text("abcdefghij 日本語です", Style::new());
        assert_eq!(rows(&line, 4), ["abcd", "efgh", "ij", "日本", "語で", "す"]);
    }

    #[test]
    fn chars_mode_keeps_indentation() {
        let line = Logical::chars(vec![Span::raw("    let x = 1;")]);
        assert_eq!(rows(&line, 8), ["    let ", "x = 1;"]);
    }

    #[test]
    fn empty_line_is_one_row() {
        assert_eq!(rows(&Logical::blank(), 5), [""]);
        assert_eq!(rows(&Logical::text("x", Style::new()), 1), ["x"]);
    }
}
