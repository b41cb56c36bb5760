//! The output budget: no tool result larger than
//! [`OutputLimits::max_result_tokens`] enters the history.
//!
//! Invariants:
//! - A result within the budget is returned as it came, without a copy: the
//!   loop calls [`enforce_budget`] on every result, so the common case costs
//!   one pass summing lengths.
//! - A result over the budget keeps 40% of the budget from its beginning and
//!   60% from its end (a command's last lines say how it ended) around one
//!   marker line saying what was cut and, when [`OutputLimits::spill_dir`] is
//!   set, the file holding the whole text.
//! - Images are never cut or counted: their size is the provider's matter.
//!
//! Trade-off: tokens are estimated as bytes / 4 ([`BYTES_PER_TOKEN`]). That
//! overestimates for plain English and underestimates for dense non-ASCII
//! text, but needs no tokenizer and is the same for every provider; the budget
//! is a guard against floods, not an exact count.

use std::path::{Path, PathBuf};

use gyre_protocol::ToolResultContent;

use crate::OutputLimits;
use crate::truncate::{cut_marker, cut_middle};

/// How many bytes of text count as one token.
pub const BYTES_PER_TOKEN: usize = 4;

/// Room left for the marker line when a text is cut to the budget.
const MARKER_ROOM: usize = 400;

/// The estimated token count of `text`: bytes / 4, rounded up.
pub fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(BYTES_PER_TOKEN)
}

/// The budget of `limits` in bytes of text.
pub fn budget_bytes(limits: &OutputLimits) -> usize {
    limits.max_result_tokens.saturating_mul(BYTES_PER_TOKEN)
}

/// `content` unchanged when its text fits the budget of `limits`; otherwise
/// its text parts joined (by newlines) and cut to the budget, in the place of
/// the first text part, the images kept where they were. When
/// `limits.spill_dir` is set the whole text is first written to
/// `{spill_dir}/{session_id}/{call_id}.txt`, which the marker names.
pub async fn enforce_budget(
    content: Vec<ToolResultContent>,
    limits: &OutputLimits,
    session_id: &str,
    call_id: &str,
) -> Vec<ToolResultContent> {
    let max_bytes = budget_bytes(limits);
    let text_bytes: usize = content.iter().map(text_len).sum();
    if text_bytes <= max_bytes {
        return content;
    }
    let mut whole = String::with_capacity(text_bytes + content.len());
    let mut rest = Vec::with_capacity(content.len());
    let mut text_at = None;
    for part in content {
        match part {
            ToolResultContent::Text { text } => {
                if text_at.is_none() {
                    text_at = Some(rest.len());
                } else {
                    whole.push('\n');
                }
                whole.push_str(&text);
            }
            image => rest.push(image),
        }
    }
    let path = spill_path(limits, session_id, call_id, "txt");
    let cut = tokio::task::spawn_blocking(move || {
        let whereabouts = match &path {
            None => String::new(),
            Some(path) => match write_whole(path, whole.as_bytes()) {
                Ok(()) => format!("; full output in {}", path.display()),
                Err(e) => format!("; the full output could not be saved: {e}"),
            },
        };
        cut_to(&whole, max_bytes, &whereabouts)
    })
    .await
    .unwrap_or_else(|e| format!("[the output was too large and could not be cut: {e}]"));
    rest.insert(text_at.unwrap_or(0), ToolResultContent::Text { text: cut });
    rest
}

/// `text` cut to about `max_bytes` (40% head, 60% tail), with `whereabouts`
/// in the marker; unchanged when it fits.
pub(crate) fn cut_to(text: &str, max_bytes: usize, whereabouts: &str) -> String {
    let room = max_bytes.saturating_sub(MARKER_ROOM + whereabouts.len());
    let head = room * 2 / 5;
    cut_middle(text, head, room - head, |lines, bytes| {
        cut_marker(lines, bytes, whereabouts)
    })
    .unwrap_or_else(|| text.to_owned())
}

fn text_len(part: &ToolResultContent) -> usize {
    match part {
        ToolResultContent::Text { text } => text.len(),
        ToolResultContent::Image { .. } => 0,
    }
}

/// `{spill_dir}/{session_id}/{name}.{extension}`, both ids made safe as file
/// names; `None` when spilling is off.
pub(crate) fn spill_path(
    limits: &OutputLimits,
    session_id: &str,
    name: &str,
    extension: &str,
) -> Option<PathBuf> {
    let dir = limits.spill_dir.as_ref()?;
    Some(
        dir.join(file_name_safe(session_id))
            .join(format!("{}.{extension}", file_name_safe(name))),
    )
}

/// `id` with anything but ASCII letters, digits, `-`, `_` and inner `.`
/// replaced by `_`, so that it is one path component that cannot climb out.
fn file_name_safe(id: &str) -> String {
    let mut safe: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() || safe.starts_with('.') {
        safe.insert(0, '_');
    }
    safe
}

fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_become_single_safe_components() {
        assert_eq!(file_name_safe("toolu_01AbC-x.y"), "toolu_01AbC-x.y");
        assert_eq!(file_name_safe("../../etc/passwd"), "_.._.._etc_passwd");
        assert_eq!(file_name_safe(".."), "_..");
        assert_eq!(file_name_safe(""), "_");
        assert_eq!(file_name_safe("a/b c"), "a_b_c");
    }

    #[test]
    fn tokens_are_bytes_over_four_rounded_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
    }

    #[test]
    fn cut_to_stays_within_the_budget() {
        let text: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        let out = cut_to(&text, 4_000, "; full output in /x");
        assert!(out.len() <= 4_000, "{}", out.len());
        assert!(out.starts_with("line 0\n"));
        assert!(out.ends_with("line 9999\n"));
        assert!(out.contains("cut; full output in /x ...]"));
    }
}
