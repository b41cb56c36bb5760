//! Text helpers for the matcher: line endings, line splitting with byte
//! offsets, and undoing escapes a model wrote literally.
//!
//! Everything here is pure and allocation-light; offsets are byte offsets
//! into the original text, always on `char` boundaries.

/// A file's line ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Eol {
    Lf,
    CrLf,
}

impl Eol {
    /// The dominant line ending of `text`: CRLF when more lines end with it
    /// than with a bare LF; LF otherwise (also for text without newlines).
    pub(crate) fn of(text: &str) -> Eol {
        let newlines = text.matches('\n').count();
        let crlf = text.matches("\r\n").count();
        if crlf > newlines - crlf {
            Eol::CrLf
        } else {
            Eol::Lf
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Eol::Lf => "\n",
            Eol::CrLf => "\r\n",
        }
    }

    /// `text` with every line ending (LF or CRLF) written as `self`.
    pub(crate) fn apply(self, text: &str) -> String {
        let lf = to_lf(text);
        match self {
            Eol::Lf => lf,
            Eol::CrLf => lf.replace('\n', "\r\n"),
        }
    }
}

/// `text` with CRLF turned into LF.
pub(crate) fn to_lf(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// One line of a text: `text[start..end]` is its content without the line
/// ending, `text[end..next]` the ending itself (empty on a last line
/// without one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Line<'a> {
    pub text: &'a str,
    pub start: usize,
    pub end: usize,
    pub next: usize,
}

/// The lines of `text`, as `str::lines` sees them (no empty line after a
/// final newline), with their byte ranges.
pub(crate) fn split_lines(text: &str) -> Vec<Line<'_>> {
    let mut lines = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let (end, next) = match text[start..].find('\n') {
            Some(i) => {
                let newline = start + i;
                let end = if text[..newline].ends_with('\r') {
                    newline - 1
                } else {
                    newline
                };
                (end, newline + 1)
            }
            None => (text.len(), text.len()),
        };
        lines.push(Line {
            text: &text[start..end],
            start,
            end,
            next,
        });
        start = next;
    }
    lines
}

/// A model's string cut into lines (LF or CRLF), and whether it ended with
/// a line ending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    pub lines: Vec<String>,
    pub trailing_newline: bool,
}

impl Block {
    pub(crate) fn new(text: &str) -> Block {
        let lf = to_lf(text);
        let trailing_newline = lf.ends_with('\n');
        let body = lf.strip_suffix('\n').unwrap_or(&lf);
        let lines = if body.is_empty() && trailing_newline {
            vec![String::new()]
        } else if body.is_empty() {
            Vec::new()
        } else {
            body.split('\n').map(str::to_owned).collect()
        };
        Block {
            lines,
            trailing_newline,
        }
    }

    /// The lines joined with `eol`, ending with it when the model's string did.
    pub(crate) fn render(lines: &[String], trailing_newline: bool, eol: Eol) -> String {
        let mut out = lines.join(eol.as_str());
        if trailing_newline {
            out.push_str(eol.as_str());
        }
        out
    }
}

/// `text` with the escapes a model sometimes writes literally (`\n`, `\t`,
/// `\r`, `\"`, `\'`, `` \` ``, `\\`) turned into the characters they stand
/// for, or `None` when there are none.
pub(crate) fn unescape(text: &str) -> Option<String> {
    if !text.contains('\\') {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    let mut changed = false;
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let replacement = match chars.clone().next() {
            Some('n') => Some('\n'),
            Some('t') => Some('\t'),
            Some('r') => Some('\r'),
            Some(q @ ('"' | '\'' | '`' | '\\')) => Some(q),
            _ => None,
        };
        match replacement {
            Some(r) => {
                chars.next();
                out.push(r);
                changed = true;
            }
            None => out.push(c),
        }
    }
    changed.then_some(out)
}

/// `line` cut to `max_chars` characters, with `…` when cut.
pub(crate) fn clip(line: &str, max_chars: usize) -> std::borrow::Cow<'_, str> {
    match line.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &line[..i]).into(),
        None => line.into(),
    }
}

/// The 1-based line number of byte `at` in `text`.
pub(crate) fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dominant_line_ending() {
        assert_eq!(Eol::of("a\r\nb\r\nc\n"), Eol::CrLf);
        assert_eq!(Eol::of("a\r\nb\nc\n"), Eol::Lf);
        assert_eq!(Eol::of("abc"), Eol::Lf);
        assert_eq!(Eol::CrLf.apply("a\nb\r\nc"), "a\r\nb\r\nc");
        assert_eq!(Eol::Lf.apply("a\r\nb"), "a\nb");
    }

    #[test]
    fn lines_keep_their_offsets() {
        let text = "ab\r\n\ncd";
        let lines = split_lines(text);
        assert_eq!(lines.len(), 3);
        assert_eq!((lines[0].text, lines[0].end, lines[0].next), ("ab", 2, 4));
        assert_eq!((lines[1].text, lines[1].start, lines[1].next), ("", 4, 5));
        assert_eq!((lines[2].text, lines[2].next), ("cd", 7));
        assert_eq!(split_lines("a\n").len(), 1);
        assert!(split_lines("").is_empty());
    }

    #[test]
    fn blocks_remember_the_trailing_newline() {
        let block = Block::new("a\r\nb\n");
        assert_eq!(block.lines, ["a", "b"]);
        assert!(block.trailing_newline);
        assert_eq!(
            Block::render(&block.lines, block.trailing_newline, Eol::CrLf),
            "a\r\nb\r\n"
        );
        assert_eq!(Block::new("x").lines, ["x"]);
        assert_eq!(Block::new("\n").lines, [""]);
        assert!(Block::new("").lines.is_empty());
    }

    #[test]
    fn literal_escapes_are_undone() {
        assert_eq!(
            unescape(r#"a\n\tb(\"c\") \\ \q"#).as_deref(),
            Some("a\n\tb(\"c\") \\ \\q")
        );
        assert_eq!(unescape("plain"), None);
        assert_eq!(unescape(r"\q"), None);
    }

    #[test]
    fn line_numbers_count_from_one() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 4), 3);
    }
}
