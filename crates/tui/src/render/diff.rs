//! Edits as unified diffs, computed from a call's arguments and bounded.
//!
//! Invariants: a preview keeps at most [`MAX_DIFF_LINES`] lines of at most
//! [`LINE_BYTES`] bytes each, and counts the lines it left out; the diff
//! itself is computed over at most [`MAX_INPUT_LINES`] lines of each side,
//! so a huge `write` or `edit` costs a bounded time once.

use similar::{ChangeTag, TextDiff};

use super::text::{prefix_bytes, sanitize};

/// Lines a preview keeps.
pub(crate) const MAX_DIFF_LINES: usize = 60;
/// Bytes kept of one line.
const LINE_BYTES: usize = 400;
/// Lines of each side that are diffed.
const MAX_INPUT_LINES: usize = 2_000;
/// Unchanged lines shown around a change.
const CONTEXT_LINES: usize = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DiffKind {
    Added,
    Removed,
    Context,
    /// Between hunks, or between the edits of a `multi_edit`.
    Separator,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DiffLine {
    pub(crate) kind: DiffKind,
    pub(crate) text: String,
}

/// A bounded diff for display.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DiffPreview {
    pub(crate) lines: Vec<DiffLine>,
    /// Lines of the diff left out of `lines`.
    pub(crate) more: usize,
    pub(crate) added: usize,
    pub(crate) removed: usize,
}

impl DiffPreview {
    /// The diff of replacing each `old` by its `new`, one after another.
    pub(crate) fn from_edits<'a>(edits: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut preview = Self::default();
        for (old, new) in edits {
            let old = head_lines(old);
            let new = head_lines(new);
            let diff = TextDiff::from_lines(old, new);
            for group in diff.grouped_ops(CONTEXT_LINES) {
                if !preview.lines.is_empty() || preview.more > 0 {
                    preview.push(DiffKind::Separator, "");
                }
                for op in &group {
                    for change in diff.iter_changes(op) {
                        let kind = match change.tag() {
                            ChangeTag::Delete => {
                                preview.removed += 1;
                                DiffKind::Removed
                            }
                            ChangeTag::Insert => {
                                preview.added += 1;
                                DiffKind::Added
                            }
                            ChangeTag::Equal => DiffKind::Context,
                        };
                        preview.push(kind, change.value());
                    }
                }
            }
        }
        preview
    }

    /// A whole file written: every line added.
    pub(crate) fn from_written(content: &str) -> Self {
        let mut preview = Self::default();
        for line in content.lines() {
            preview.added += 1;
            preview.push(DiffKind::Added, line);
        }
        preview
    }

    fn push(&mut self, kind: DiffKind, text: &str) {
        if self.lines.len() >= MAX_DIFF_LINES {
            self.more += 1;
            return;
        }
        let text = text.strip_suffix('\n').unwrap_or(text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let kept = prefix_bytes(text, LINE_BYTES);
        let mut shown = sanitize(kept).into_owned();
        // A line cut short says so.
        if kept.len() < text.len() {
            shown.push('…');
        }
        self.lines.push(DiffLine { kind, text: shown });
    }
}

/// The first [`MAX_INPUT_LINES`] lines of `s`.
fn head_lines(s: &str) -> &str {
    match s.match_indices('\n').nth(MAX_INPUT_LINES - 1) {
        Some((at, _)) => &s[..=at],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_shows_removed_and_added_lines_with_context() {
        let preview = DiffPreview::from_edits([("a\nb\nc\n", "a\nB\nc\n")]);
        let kinds: Vec<_> = preview
            .lines
            .iter()
            .map(|l| (l.kind, l.text.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                (DiffKind::Context, "a"),
                (DiffKind::Removed, "b"),
                (DiffKind::Added, "B"),
                (DiffKind::Context, "c"),
            ]
        );
        assert_eq!((preview.added, preview.removed), (1, 1));
    }

    #[test]
    fn a_large_write_is_bounded() {
        let content: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        let preview = DiffPreview::from_written(&content);
        assert_eq!(preview.lines.len(), MAX_DIFF_LINES);
        assert_eq!(preview.more, 10_000 - MAX_DIFF_LINES);
        assert_eq!(preview.added, 10_000);
    }
}
