//! `edit`: replace an exact string in a text file.
//!
//! Invariants: the match is exact (no fuzzy matching, so the model learns
//! that it must copy text faithfully); a match must be unique unless
//! `replace_all` is set; everything outside the replaced ranges is preserved
//! byte for byte. One allowance: when the file uses CRLF line endings and
//! `old_string` has bare LF, both strings are matched and written with CRLF,
//! because models never reproduce `\r`.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::{ToolContext, ToolError, ToolKind, ToolOutput, TypedTool, Workspace};

const NAME: &str = "edit";
/// Lines of unchanged context shown around the change in the confirmation.
const SNIPPET_CONTEXT: usize = 3;
const SNIPPET_MAX_LINES: usize = 40;
/// The whole file is held in memory (twice, while replacing); beyond this,
/// a stream editor in `bash` is the better tool.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

const DESCRIPTION: &str = "Replace `old_string` with `new_string` in a file. `old_string` \
must match the file exactly, including whitespace and indentation (copy it from `read` \
output without the line-number prefix) and must occur exactly once, unless `replace_all` is \
true. Include enough surrounding lines to make it unique. To create a file use `write`.";

#[derive(Deserialize, JsonSchema)]
pub struct EditArgs {
    /// Path of the file, absolute or relative to the workspace root.
    file_path: String,
    /// The exact text to replace.
    old_string: String,
    /// The text to put in its place (must differ from old_string).
    new_string: String,
    /// Replace every occurrence instead of exactly one (default false).
    #[serde(default)]
    replace_all: bool,
}

/// The `edit` tool.
#[derive(Debug, Default)]
pub struct EditTool;

impl TypedTool for EditTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = EditArgs;

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::Mutating
    }

    fn call<'a>(
        &'a self,
        args: EditArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            if args.old_string.is_empty() {
                return Err(ToolError::invalid(
                    NAME,
                    "old_string is empty; to create or overwrite a whole file use write",
                ));
            }
            if args.old_string == args.new_string {
                return Err(ToolError::invalid(
                    NAME,
                    "old_string and new_string are identical; nothing would change",
                ));
            }
            if ctx.cancel.is_cancelled() {
                return Err(ToolError::Cancelled {
                    output: String::new(),
                });
            }
            let workspace = ctx.workspace.clone();
            crate::blocking_to_completion(move || edit(&workspace, &args)).await
        })
    }
}

fn edit(workspace: &Workspace, args: &EditArgs) -> Result<ToolOutput, ToolError> {
    let path = workspace.resolve(&args.file_path)?;
    let shown = workspace.relative(&path);
    let not_found_or = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::NotFound {
            path: args.file_path.clone(),
        },
        _ => ToolError::io(&args.file_path, e),
    };
    let metadata = std::fs::metadata(&path).map_err(not_found_or)?;
    if metadata.is_dir() {
        return Err(ToolError::IsADirectory {
            path: args.file_path.clone(),
        });
    }
    if !metadata.is_file() {
        return Err(ToolError::Failed(format!(
            "`{shown}` is not a regular file (a pipe, socket or device); edit only changes files"
        )));
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(ToolError::Failed(format!(
            "`{shown}` is {} bytes, more than edit handles ({MAX_FILE_BYTES}); change it with a \
             command in bash instead",
            metadata.len()
        )));
    }
    let bytes = std::fs::read(&path).map_err(not_found_or)?;
    let content = String::from_utf8(bytes).map_err(|_| ToolError::Binary {
        path: args.file_path.clone(),
    })?;

    let (old, new) = matching_line_endings(&content, &args.old_string, &args.new_string);
    let count = content.matches(old.as_str()).count();
    if count == 0 {
        return Err(ToolError::Failed(format!(
            "old_string was not found in `{shown}`; it must match exactly, including \
             whitespace and indentation — read the file again and copy the text"
        )));
    }
    if count > 1 && !args.replace_all {
        return Err(ToolError::Failed(format!(
            "old_string occurs {count} times in `{shown}`; include more surrounding lines to \
             make it unique, or set replace_all to true to replace every occurrence"
        )));
    }
    let first_at = content.find(old.as_str()).unwrap_or(0);
    let updated = if args.replace_all {
        content.replace(old.as_str(), &new)
    } else {
        content.replacen(old.as_str(), &new, 1)
    };
    std::fs::write(&path, &updated).map_err(|e| ToolError::io(&args.file_path, e))?;

    let noun = if count == 1 {
        "replacement"
    } else {
        "replacements"
    };
    let snippet = snippet(&updated, first_at, &new);
    Ok(ToolOutput::text(
        format!("edit {shown} ({count} {noun})"),
        format!("edited {shown}: {count} {noun}. The changed region now reads:\n{snippet}"),
    ))
}

/// The strings to match and insert: as given, or with CRLF when the file uses
/// CRLF and the model sent bare LF.
fn matching_line_endings(content: &str, old: &str, new: &str) -> (String, String) {
    let wants_crlf = !content.contains(old)
        && content.contains("\r\n")
        && old.contains('\n')
        && !old.contains("\r\n");
    if wants_crlf {
        let crlf = |s: &str| s.replace("\r\n", "\n").replace('\n', "\r\n");
        let old_crlf = crlf(old);
        if content.contains(&old_crlf) {
            return (old_crlf, crlf(new));
        }
    }
    (old.to_owned(), new.to_owned())
}

/// Numbered lines of `content` around the text `inserted` placed at byte
/// `at`, as `read` shows them.
fn snippet(content: &str, at: usize, inserted: &str) -> String {
    let first_changed = content[..at].matches('\n').count() + 1;
    let last_changed = first_changed + inserted.trim_end_matches('\n').matches('\n').count();
    let from = first_changed.saturating_sub(SNIPPET_CONTEXT).max(1);
    let to = (last_changed + SNIPPET_CONTEXT).min(from + SNIPPET_MAX_LINES - 1);
    let mut out = String::new();
    for (i, line) in content
        .lines()
        .enumerate()
        .skip(from - 1)
        .take(to + 1 - from)
    {
        let line = crate::truncate::truncate_line(line, 200);
        out.push_str(&format!("{:>6}\t{}\n", i + 1, line.trim_end_matches('\r')));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_files_accept_lf_strings() {
        let (old, new) = matching_line_endings("a\r\nb\r\nc\r\n", "a\nb", "x\ny");
        assert_eq!((old.as_str(), new.as_str()), ("a\r\nb", "x\r\ny"));
        let (old, _) = matching_line_endings("a\nb\n", "a\nb", "x");
        assert_eq!(old, "a\nb");
    }

    #[test]
    fn snippet_shows_context_around_the_change() {
        let content = "1\n2\n3\n4\nNEW\n6\n7\n8\n9\n";
        let at = content.find("NEW").unwrap();
        assert_eq!(
            snippet(content, at, "NEW"),
            "     2\t2\n     3\t3\n     4\t4\n     5\tNEW\n     6\t6\n     7\t7\n     8\t8\n"
        );
    }
}
