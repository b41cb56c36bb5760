//! The unified diff an edit reports, bounded in size.
//!
//! The diff is for the model and the user to see what changed, not to be
//! applied: carriage returns are left out (a CRLF file would otherwise show
//! `\r` on every line), and a long diff is cut with a note. Diffing gives up
//! refining after [`DIFF_TIMEOUT`] and reports a coarser (still correct) diff.

use std::time::Duration;

use similar::TextDiff;

const CONTEXT_LINES: usize = 3;
const MAX_DIFF_LINES: usize = 300;
const MAX_DIFF_BYTES: usize = 30_000;
const DIFF_TIMEOUT: Duration = Duration::from_millis(500);

/// The unified diff of `before` → `after`, headed `a/{shown}` / `b/{shown}`.
pub(crate) fn unified(shown: &str, before: &str, after: &str) -> String {
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(before, after);
    let full = diff
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string()
        .replace("\r\n", "\n");
    cut(&full)
}

fn cut(full: &str) -> String {
    let mut out = String::new();
    let total = full.lines().count();
    for (shown, line) in full.lines().enumerate() {
        if shown == MAX_DIFF_LINES || out.len() + line.len() + 1 > MAX_DIFF_BYTES {
            out.push_str(&format!(
                "[diff cut: {} more lines not shown]\n",
                total - shown
            ));
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_a_hunk_with_context_and_without_carriage_returns() {
        let before = "1\r\n2\r\n3\r\n4\r\n5\r\n6\r\n";
        let after = "1\r\n2\r\n3\r\nfour\r\n5\r\n6\r\n";
        assert_eq!(
            unified("f.txt", before, after),
            "--- a/f.txt\n+++ b/f.txt\n@@ -1,6 +1,6 @@\n 1\n 2\n 3\n-4\n+four\n 5\n 6\n"
        );
    }

    #[test]
    fn long_diffs_are_cut_with_a_note() {
        let before: String = (0..1000).map(|i| format!("{i}\n")).collect();
        let diff = unified("f", &before, "");
        assert_eq!(diff.lines().count(), MAX_DIFF_LINES + 1);
        assert!(diff.ends_with("more lines not shown]\n"), "{diff}");
    }
}
