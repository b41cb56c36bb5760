//! Changing one file with a list of edits: the IO around the pure matcher,
//! shared by `edit` and `multi_edit`.
//!
//! Invariants: the file must lie in the workspace, be a regular UTF-8 text
//! file of at most [`MAX_FILE_BYTES`], and have been read in this session and
//! not changed since (see [`crate::FileTracker`]); the edits apply in order to
//! the text in memory, and the file is written once, only when all of them
//! succeeded. The written content is recorded as seen, so a following edit
//! needs no new read.

use std::path::Path;

use crate::files::{ContentHasher, FileStamp, Freshness};
use crate::{FileTracker, ToolError, ToolOutput, Workspace};

use super::diff;
use super::matching::{self, MatchError, Occurrences, Strategy};
use super::text::clip;

/// The whole file is held in memory (twice, while replacing); beyond this,
/// a stream editor in `bash` is the better tool.
pub(crate) const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// One replacement, as the model asked for it.
#[derive(Debug, Clone)]
pub(crate) struct Change {
    pub old: String,
    pub new: String,
    pub occurrences: Occurrences,
}

/// Applies `changes` to the file at `file_path`, all or nothing, and reports
/// the replacements made and the diff.
pub(crate) fn change_file(
    tool: &str,
    workspace: &Workspace,
    files: &FileTracker,
    file_path: &str,
    changes: &[Change],
) -> Result<ToolOutput, ToolError> {
    let path = workspace.resolve(file_path)?;
    let shown = workspace.relative(&path);
    let (content, stamp) = load(tool, &path, &shown, file_path)?;
    match files.freshness(&path, stamp, || Some(ContentHasher::of(content.as_bytes()))) {
        Freshness::Fresh => {}
        Freshness::NotRead => {
            return Err(ToolError::NotReadYet {
                path: file_path.to_owned(),
            });
        }
        Freshness::Changed(seen) => {
            return Err(ToolError::Stale {
                path: file_path.to_owned(),
                read_at: seen.at_display(),
            });
        }
    }

    let applied = apply_changes(&shown, &content, changes)?;
    std::fs::write(&path, &applied.text).map_err(|e| ToolError::io(file_path, e))?;
    let written = std::fs::metadata(&path).map_err(|e| ToolError::io(file_path, e))?;
    files.record(
        &path,
        FileStamp::of(&written),
        Some(ContentHasher::of(applied.text.as_bytes())),
    );
    Ok(edit_report(tool, &shown, &content, &applied))
}

/// The text after a call's edits, with what the report says of them.
pub(crate) struct Applied {
    pub text: String,
    total: usize,
    notes: Vec<String>,
}

/// Applies `changes` to `content` in order, all or nothing (pure; the
/// disk and `crate::workspace_fs` share it).
pub(crate) fn apply_changes(
    shown: &str,
    content: &str,
    changes: &[Change],
) -> Result<Applied, ToolError> {
    let mut text = content.to_string();
    let mut total = 0;
    let mut notes: Vec<String> = Vec::new();
    for (i, change) in changes.iter().enumerate() {
        let done = matching::replace(&text, &change.old, &change.new, change.occurrences).map_err(
            |e| {
                let which = if changes.len() > 1 {
                    format!("edit {} of {}: ", i + 1, changes.len())
                } else {
                    String::new()
                };
                ToolError::Failed(format!("{which}{}", describe(&e, shown)))
            },
        )?;
        total += done.count;
        if let Some(note) = done.how.note() {
            let note = if changes.len() > 1 {
                format!("edit {}: {note}", i + 1)
            } else {
                note
            };
            notes.push(note);
        }
        text = done.text;
    }
    if text == content {
        return Err(ToolError::Failed(format!(
            "the edit leaves `{shown}` unchanged (new_string, as re-indented to fit the file, \
             equals the text it replaces); nothing was written"
        )));
    }
    Ok(Applied { text, total, notes })
}

/// What an edit that was written reports: the replacements and the diff.
pub(crate) fn edit_report(tool: &str, shown: &str, content: &str, applied: &Applied) -> ToolOutput {
    let total = applied.total;
    let noun = if total == 1 {
        "replacement"
    } else {
        "replacements"
    };
    let mut report = format!("edited {shown}: {total} {noun}.\n");
    for note in &applied.notes {
        report.push_str(&format!("Note: {note}.\n"));
    }
    report.push_str(&diff::unified(shown, content, &applied.text));
    ToolOutput::text(format!("{tool} {shown} ({total} {noun})"), report)
}

/// The file's text and stamp, or the reason it cannot be edited.
fn load(
    tool: &str,
    path: &Path,
    shown: &str,
    file_path: &str,
) -> Result<(String, FileStamp), ToolError> {
    let not_found_or = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::NotFound {
            path: file_path.to_owned(),
        },
        _ => ToolError::io(file_path, e),
    };
    let metadata = std::fs::metadata(path).map_err(not_found_or)?;
    if metadata.is_dir() {
        return Err(ToolError::IsADirectory {
            path: file_path.to_owned(),
        });
    }
    if !metadata.is_file() {
        return Err(ToolError::Failed(format!(
            "`{shown}` is not a regular file (a pipe, socket or device); {tool} only changes files"
        )));
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(ToolError::Failed(format!(
            "`{shown}` is {} bytes, more than {tool} handles ({MAX_FILE_BYTES}); change it with \
             a command in bash instead",
            metadata.len()
        )));
    }
    let bytes = std::fs::read(path).map_err(not_found_or)?;
    let content = String::from_utf8(bytes).map_err(|_| ToolError::Binary {
        path: file_path.to_owned(),
    })?;
    if content.contains('\0') {
        return Err(ToolError::Binary {
            path: file_path.to_owned(),
        });
    }
    Ok((content, FileStamp::of(&metadata)))
}

/// A matcher failure in words the model can act on.
pub(crate) fn describe(error: &MatchError, shown: &str) -> String {
    match error {
        MatchError::NotFound {
            closest,
            occurrences,
        } => {
            let mut text = match occurrences {
                Occurrences::One => format!(
                    "old_string was not found in `{shown}`, not even ignoring differences in \
                     whitespace, indentation or escapes"
                ),
                Occurrences::All => format!(
                    "old_string was not found in `{shown}` exactly (replace_all matches only \
                     exact text)"
                ),
            };
            match closest {
                Some(candidate) => {
                    let last = candidate.first_line + candidate.lines.len() - 1;
                    text.push_str(&format!(
                        ". The closest text is lines {}-{last} ({:.0}% alike):\n",
                        candidate.first_line,
                        candidate.similarity * 100.0
                    ));
                    for (i, line) in candidate.lines.iter().enumerate() {
                        let line = clip(line, 200);
                        text.push_str(&format!("{:>6}\t{line}\n", candidate.first_line + i));
                    }
                    if let Some((number, file, model)) = &candidate.first_difference {
                        text.push_str(&format!(
                            "The first difference is on line {number}: the file has {:?}, \
                             old_string has {:?}.\n",
                            clip(file, 200),
                            clip(model, 200),
                        ));
                    }
                    text.push_str(
                        "Copy the text exactly as the file has it, or read the file again.",
                    );
                }
                None => text.push_str(
                    ", and nothing in the file is close to it; read the file again and copy \
                     the text exactly, including whitespace and indentation",
                ),
            }
            text
        }
        MatchError::Ambiguous {
            how,
            count,
            places,
            more,
        } => {
            let mut lines: Vec<String> = places
                .iter()
                .map(|&(a, b)| {
                    if a == b {
                        a.to_string()
                    } else {
                        format!("{a}-{b}")
                    }
                })
                .collect();
            if *more {
                lines.push("…".to_owned());
            }
            let lines = lines.join(", ");
            let exact =
                !how.unescaped && matches!(how.strategy, Strategy::Exact | Strategy::LineEndings);
            if exact {
                format!(
                    "old_string occurs {count} times in `{shown}` (lines {lines}); include more \
                     surrounding lines to make it unique, or set replace_all to true to replace \
                     every occurrence"
                )
            } else {
                format!(
                    "old_string is not in `{shown}` exactly, and {} it matches {count} \
                     places (lines {lines}); include more surrounding lines, copied exactly, to \
                     make it unique",
                    how.loosened()
                )
            }
        }
        MatchError::InconsistentIndentation {
            first_line,
            last_line,
        } => format!(
            "old_string matches lines {first_line}-{last_line} of `{shown}` only ignoring \
             indentation, and its lines are not indented by one common shift from the file's, \
             so new_string cannot be re-indented safely; copy old_string with the file's exact \
             indentation"
        ),
    }
}
