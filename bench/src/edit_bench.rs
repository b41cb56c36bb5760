//! gyre's `edit` tool on a 50,000-line file: replace one unique line near the
//! end.
//!
//! Invariants: each run edits a fresh copy of the same generated file, copied
//! before the clock starts (so every run does the same work, and the copy is
//! in the page cache like a file the model has just read, and `read` runs on
//! it off the clock, since `edit` refuses an unread file); the clock covers
//! the `edit` call only (see `inproc`): reading the file, checking that the
//! match is unique, replacing, writing it back and building the confirmation.
//! Every run is checked: the file afterwards holds the new line, not the old
//! one, and is otherwise unchanged in length. One warm-up run, not recorded.

use std::path::Path;

use anyhow::{Context, ensure};
use serde_json::json;

use crate::inproc::Tools;

pub const LINES: usize = 50_000;
/// The line replaced (1-based), near the end.
const TARGET_LINE: usize = LINES - 10;
const FILE: &str = "big.rs";

/// The generated file and the line to replace.
fn file_text() -> (String, String) {
    let mut text = String::with_capacity(LINES * 48);
    let mut target = String::new();
    for n in 1..=LINES {
        let line = if n == TARGET_LINE {
            format!("    let checksum = verify_block({n}, &buffer)?; // the edit target")
        } else {
            match n % 5 {
                0 => format!("    total += table[{}] * weight; // line {n}", n % 97),
                1 => "    if total > LIMIT {".to_owned(),
                2 => "        return Err(Overflow);".to_owned(),
                3 => "    }".to_owned(),
                _ => format!("    let value = lookup(\"key_{}\");", n % 1000),
            }
        };
        if n == TARGET_LINE {
            target = line.clone();
        }
        text.push_str(&line);
        text.push('\n');
    }
    (text, target)
}

/// The size of the generated file, in bytes.
pub fn file_bytes() -> usize {
    file_text().0.len()
}

/// Wall times of `runs` edits (after a warm-up).
pub fn measure(runs: usize) -> anyhow::Result<Vec<f64>> {
    let dir = tempfile::Builder::new()
        .prefix("gyre-bench-edit-")
        .tempdir()
        .context("cannot make a temp dir")?;
    let pristine = dir.path().join("pristine.rs");
    let workspace = dir.path().join("workspace");
    std::fs::create_dir(&workspace).context("cannot make the workspace")?;
    let (text, target) = file_text();
    std::fs::write(&pristine, &text).context("cannot write the pristine file")?;
    let replacement = target.replace("verify_block", "verify_block_checked");
    let expected_len = text.len() + replacement.len() - target.len();
    let tools = Tools::new(&workspace)?;
    let mut wall_ms = Vec::with_capacity(runs);
    for run in 0..=runs {
        let label = if run == 0 {
            "edit, warm-up run".to_owned()
        } else {
            format!("edit, run {run} of {runs}")
        };
        let path = workspace.join(FILE);
        std::fs::copy(&pristine, &path).context("cannot copy the pristine file")?;
        // `edit` refuses a file the session has not read: read it first,
        // off the clock, as the model would.
        tools
            .timed("read", json!({"file_path": FILE}))
            .context(label.clone())?;
        let arguments = json!({"file_path": FILE, "old_string": target, "new_string": replacement});
        let (wall, _) = tools.timed("edit", arguments).context(label.clone())?;
        check(&path, &target, &replacement, expected_len).context(label)?;
        if run > 0 {
            wall_ms.push(wall.as_secs_f64() * 1e3);
        }
    }
    Ok(wall_ms)
}

fn check(path: &Path, old: &str, new: &str, expected_len: usize) -> anyhow::Result<()> {
    let after = std::fs::read_to_string(path).context("cannot read the edited file")?;
    ensure!(after.contains(new), "the new line is not in the file");
    ensure!(
        !after.contains(&format!("{old}\n")),
        "the old line is still there"
    );
    ensure!(
        after.len() == expected_len,
        "the file is {} bytes, not {expected_len}",
        after.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_line_is_unique_and_near_the_end() {
        let (text, target) = file_text();
        assert_eq!(text.lines().count(), LINES);
        assert_eq!(text.matches(target.as_str()).count(), 1);
        assert_eq!(text.lines().nth(TARGET_LINE - 1), Some(target.as_str()));
    }

    #[test]
    fn measures_checked_edits() {
        let samples = measure(2).expect("edits");
        assert_eq!(samples.len(), 2);
    }
}
