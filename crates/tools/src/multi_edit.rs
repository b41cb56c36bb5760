//! `multi_edit`: several replacements in one file, all or nothing.
//!
//! Invariants: the edits apply in order to the text in memory, each to the
//! result of the one before, with `edit`'s matching rules; if any fails,
//! nothing is written and the error names the edit. One diff covers them all.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::edit::{change_of, file};
use crate::{ToolContext, ToolError, ToolKind, ToolOutput, TypedTool};

const NAME: &str = "multi_edit";

const DESCRIPTION: &str = "Make several replacements in one file you have read in this session, \
in one step: `edits` apply in order, each to the result of the previous one, with the same \
matching rules as `edit`. Either all of them succeed and the file is written once, or none is \
applied. The result shows one unified diff.";

#[derive(Deserialize, JsonSchema)]
pub struct MultiEditArgs {
    /// Path of the file, absolute or relative to the workspace root.
    file_path: String,
    /// The replacements, applied in order.
    #[schemars(length(min = 1))]
    edits: Vec<EditEntry>,
}

#[derive(Deserialize, JsonSchema)]
pub struct EditEntry {
    /// The text to replace, copied exactly from the file (as changed by the
    /// edits before this one).
    old_string: String,
    /// The text to put in its place (must differ from old_string).
    new_string: String,
    /// Replace every exact occurrence instead of exactly one (default false).
    #[serde(default)]
    replace_all: bool,
}

/// The `multi_edit` tool.
#[derive(Debug, Default)]
pub struct MultiEditTool;

impl TypedTool for MultiEditTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = MultiEditArgs;

    fn touches<'a>(&self, args: &'a Self::Args) -> Option<(&'a str, crate::FileUse)> {
        Some((&args.file_path, crate::FileUse::Changed))
    }

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::Mutating
    }

    fn call<'a>(
        &'a self,
        args: MultiEditArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            if args.edits.is_empty() {
                return Err(ToolError::invalid(
                    NAME,
                    "edits is empty; give at least one edit",
                ));
            }
            let changes = args
                .edits
                .into_iter()
                .enumerate()
                .map(|(i, e)| {
                    change_of(
                        NAME,
                        &format!("edits[{i}]: "),
                        e.old_string,
                        e.new_string,
                        e.replace_all,
                    )
                })
                .collect::<Result<Vec<_>, _>>()?;
            if ctx.cancel.is_cancelled() {
                return Err(ToolError::Cancelled {
                    output: String::new(),
                });
            }
            if let Some(fs) = &ctx.fs {
                let path = &args.file_path;
                return crate::workspace_fs::change(fs.as_ref(), ctx, NAME, path, &changes).await;
            }
            let workspace = ctx.workspace.clone();
            let session = ctx.session.clone();
            let file_path = args.file_path;
            crate::blocking_to_completion(move || {
                file::change_file(NAME, &workspace, &session.files, &file_path, &changes)
            })
            .await
        })
    }
}
