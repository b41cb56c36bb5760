//! Small text helpers: display widths, cutting, and making untrusted text
//! (model output, tool output) safe to put in cells.
//!
//! Invariant: no control character reaches the buffer. Escape sequences
//! (colours of a command's output) are dropped whole, tabs become spaces,
//! other control characters are dropped.

use unicode_width::UnicodeWidthChar;

/// Spaces a tab becomes.
const TAB: &str = "    ";

/// The display width of `c` (0 for control characters).
pub(crate) fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// The display width of `s`.
pub(crate) fn str_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

/// A token count for people: `980`, `12.3k`, `1.2M`.
pub(crate) fn format_tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// The first line of `s` (without its newline).
pub(crate) fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// At most `max` characters of `s`, with `…` when cut.
pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// The longest prefix of `s` of at most `max` bytes ending on a char boundary.
pub(crate) fn prefix_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `s` cut to at most `width` display columns, with `…` when cut.
pub(crate) fn fit_width(s: &str, width: usize) -> String {
    if str_width(s) <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = char_width(c);
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// `s` without escape sequences and control characters; tabs as spaces.
/// Borrowed when there is nothing to change (the common case).
pub(crate) fn sanitize(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(|c| c.is_control()) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\t' => out.push_str(TAB),
            '\u{1b}' => skip_escape(&mut chars),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Skips the rest of an escape sequence: CSI (`ESC [ … final`), OSC
/// (`ESC ] … BEL` or `ESC \`), or a two-character escape.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => {
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        }
        Some(']') => {
            while let Some(c) = chars.next() {
                if c == '\u{7}' {
                    break;
                }
                if c == '\u{1b}' {
                    chars.next();
                    break;
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_drops_escapes_and_controls() {
        assert_eq!(sanitize("\u{1b}[31mred\u{1b}[0m\tx\u{7}"), "red    x");
        assert_eq!(sanitize("\u{1b}]0;title\u{7}ok"), "ok");
        assert!(matches!(sanitize("plain"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn fit_width_counts_wide_characters() {
        assert_eq!(fit_width("日本語テキスト", 7), "日本語…");
        assert_eq!(fit_width("abc", 3), "abc");
        assert_eq!(fit_width("abcd", 3), "ab…");
    }
}
