//! Code block highlighting with syntect (its pure-Rust regex engine).
//!
//! Invariants: the syntax set and the one theme are loaded once, lazily, on
//! the first highlighted block (`OnceLock`), so start-up pays nothing for
//! them (the app may call [`crate::preload_highlighting`] off the UI thread
//! to pay it early). Highlighting runs only on complete blocks, once per
//! block; a block larger than [`MAX_LINES`] lines or [`MAX_BYTES`] bytes,
//! or in an unknown language, is left plain (syntect's cost grows with it).

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

const MAX_LINES: usize = 1_000;
const MAX_BYTES: usize = 64 * 1024;
const THEME: &str = "base16-ocean.dark";

struct Highlighter {
    syntaxes: SyntaxSet,
    theme: Theme,
}

fn highlighter() -> Option<&'static Highlighter> {
    static HIGHLIGHTER: OnceLock<Option<Highlighter>> = OnceLock::new();
    HIGHLIGHTER
        .get_or_init(|| {
            let theme = ThemeSet::load_defaults().themes.remove(THEME)?;
            Some(Highlighter {
                syntaxes: SyntaxSet::load_defaults_newlines(),
                theme,
            })
        })
        .as_ref()
}

/// Loads the syntaxes and the theme now (they load on first use otherwise).
pub(crate) fn preload() {
    let _ = highlighter();
}

/// `code` highlighted as `lang`, one span list per line; `None` when the
/// language is unknown or the block too large.
pub(crate) fn highlight(code: &str, lang: &str) -> Option<Vec<Vec<Span<'static>>>> {
    let lang = lang.split([',', ' ', '{']).next().unwrap_or("").trim();
    if lang.is_empty() || code.len() > MAX_BYTES || code.lines().count() > MAX_LINES {
        return None;
    }
    let h = highlighter()?;
    let syntax = h
        .syntaxes
        .find_syntax_by_token(lang)
        .or_else(|| h.syntaxes.find_syntax_by_extension(lang))?;
    let mut lines = HighlightLines::new(syntax, &h.theme);
    let mut out = Vec::new();
    for line in LinesWithEndings::from(code) {
        let regions = lines.highlight_line(line, &h.syntaxes).ok()?;
        let spans = regions
            .into_iter()
            .filter_map(|(style, text)| {
                let text = text.trim_end_matches(['\n', '\r']);
                (!text.is_empty()).then(|| Span::styled(text.to_string(), convert(style)))
            })
            .collect();
        out.push(spans);
    }
    Some(out)
}

fn convert(style: syntect::highlighting::Style) -> Style {
    let fg = style.foreground;
    let mut out = Style::new().fg(Color::Rgb(fg.r, fg.g, fg.b));
    if style.font_style.contains(FontStyle::BOLD) {
        out = out.add_modifier(Modifier::BOLD);
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        out = out.add_modifier(Modifier::ITALIC);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_languages_are_coloured_and_unknown_ones_are_not() {
        let lines = highlight("fn main() {}\nlet x = 1;\n", "rust").unwrap();
        assert_eq!(lines.len(), 2);
        let text: String = lines[0].iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "fn main() {}");
        assert!(lines[0].iter().any(|s| s.style.fg.is_some()));
        assert!(highlight("x", "no-such-language").is_none());
        assert!(highlight("x", "").is_none());
    }
}
