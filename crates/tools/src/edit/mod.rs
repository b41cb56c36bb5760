//! `edit`: replace a string in a text file, found exactly or, failing that,
//! by a cascade of tolerant matchers that must still find exactly one place.
//!
//! Layout: [`matching`] is the pure cascade (with [`indent`], [`text`] and
//! [`closest`] as its helpers), [`file`] the IO around it shared with
//! `multi_edit`, [`diff`] the report.
//!
//! Decisions: an existing file must have been read in this session before it
//! is edited (as Claude Code does): the model then edits what it has seen, and
//! the stale check has something to compare with. `replace_all` matches exact
//! text only. See [`matching`] for the cascade's invariants.

mod closest;
mod diff;
pub(crate) mod file;
mod indent;
mod lenient;
#[cfg(test)]
mod lenient_tests;
pub(crate) mod matching;
mod text;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::{ToolContext, ToolError, ToolKind, ToolOutput, TypedTool};
use file::Change;
use matching::Occurrences;

const NAME: &str = "edit";

const DESCRIPTION: &str = "Replace `old_string` with `new_string` in a file you have read in \
this session. `old_string` should match the file exactly, including whitespace and indentation \
(copy it from `read` output without the line-number prefix), and must occur exactly once unless \
`replace_all` is true; include enough surrounding lines to make it unique. If it does not match \
exactly, a match ignoring trailing whitespace, indentation, whitespace runs or literal escapes is \
tried, and used only if it is unique (`new_string` is then re-indented to fit). The result shows \
a unified diff. To create a file use `write`; for several changes to one file use `multi_edit`.";

#[derive(Deserialize, JsonSchema)]
pub struct EditArgs {
    /// Path of the file, absolute or relative to the workspace root.
    file_path: String,
    /// The text to replace, copied exactly from the file.
    old_string: String,
    /// The text to put in its place (must differ from old_string).
    new_string: String,
    /// Replace every exact occurrence instead of exactly one (default false).
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

    fn touches<'a>(&self, args: &'a Self::Args) -> Option<(&'a str, crate::FileUse)> {
        Some((&args.file_path, crate::FileUse::Changed))
    }

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::Mutating
    }

    fn call<'a>(
        &'a self,
        args: EditArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let change = change_of(NAME, "", args.old_string, args.new_string, args.replace_all)?;
            if ctx.cancel.is_cancelled() {
                return Err(ToolError::Cancelled {
                    output: String::new(),
                });
            }
            if let Some(fs) = &ctx.fs {
                let changes = [change];
                return crate::workspace_fs::change(
                    fs.as_ref(),
                    ctx,
                    NAME,
                    &args.file_path,
                    &changes,
                )
                .await;
            }
            let workspace = ctx.workspace.clone();
            let session = ctx.session.clone();
            crate::blocking_to_completion(move || {
                file::change_file(NAME, &workspace, &session.files, &args.file_path, &[change])
            })
            .await
        })
    }
}

/// One checked replacement; `which` prefixes messages (`edits[1]: `).
pub(crate) fn change_of(
    tool: &str,
    which: &str,
    old: String,
    new: String,
    replace_all: bool,
) -> Result<Change, ToolError> {
    if old.is_empty() {
        return Err(ToolError::invalid(
            tool,
            format!("{which}old_string is empty; to create or overwrite a whole file use write"),
        ));
    }
    if old == new {
        return Err(ToolError::invalid(
            tool,
            format!("{which}old_string and new_string are identical; nothing would change"),
        ));
    }
    Ok(Change {
        old,
        new,
        occurrences: if replace_all {
            Occurrences::All
        } else {
            Occurrences::One
        },
    })
}
