//! `glob`: find files by name pattern, newest first.
//!
//! Invariants: patterns match paths relative to the search directory, with
//! `*` not crossing `/` (use `**`); ignore files are honoured; only the
//! [`MAX_RESULTS`] newest matches are kept (a bounded heap, so memory does not
//! grow with the tree), and a cut list says how many matched in all.
//!
//! Hidden entries are skipped unless the pattern itself names one (a
//! component starting with `.`), so `.github/**/*.yml` still works.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;
use std::time::SystemTime;

use futures::future::BoxFuture;
use globset::GlobBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::walk::{Hidden, walker};
use crate::{ToolContext, ToolError, ToolKind, ToolOutput, TypedTool, Workspace};

const NAME: &str = "glob";
const MAX_RESULTS: usize = 100;

const DESCRIPTION: &str = "Find files whose path matches a glob pattern, e.g. `**/*.rs`, \
`src/**/*.{ts,tsx}`, `*.toml` (`*` does not cross `/`; `**` does). Patterns are relative to \
`path` (default: the workspace root). Returns file paths, most recently modified first, at \
most 100. Honours .gitignore. To search file contents use `grep`.";

#[derive(Deserialize, JsonSchema)]
pub struct GlobArgs {
    /// The glob pattern to match file paths against.
    pattern: String,
    /// Directory to search in (default: the workspace root).
    path: Option<String>,
}

/// The `glob` tool.
#[derive(Debug, Default)]
pub struct GlobTool;

impl TypedTool for GlobTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = GlobArgs;

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::ReadOnly
    }

    fn call<'a>(
        &'a self,
        args: GlobArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let workspace = ctx.workspace.clone();
            crate::blocking(&ctx.cancel, move |cancel| glob(&workspace, &args, cancel)).await
        })
    }
}

fn glob(
    workspace: &Workspace,
    args: &GlobArgs,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let given = args.path.as_deref().unwrap_or("");
    let base = workspace.resolve_read(given)?;
    match std::fs::metadata(&base) {
        Err(_) => {
            return Err(ToolError::NotFound {
                path: given.to_owned(),
            });
        }
        Ok(m) if !m.is_dir() => {
            return Err(ToolError::NotADirectory {
                path: given.to_owned(),
            });
        }
        Ok(_) => {}
    }
    // An absolute pattern is matched against absolute paths.
    let pattern = args.pattern.trim_start_matches("./");
    let absolute = Path::new(pattern).is_absolute();
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError::invalid(NAME, format!("invalid glob pattern: {e}")))?
        .compile_matcher();
    let names_hidden = pattern.starts_with('.') || pattern.contains("/.");
    let hidden = if names_hidden {
        Hidden::Include
    } else {
        Hidden::Skip
    };

    // Newest kept; the heap's top is the oldest kept, evicted first.
    let mut newest: BinaryHeap<Reverse<(SystemTime, Reverse<String>)>> = BinaryHeap::new();
    let mut total = 0usize;
    for entry in walker(&base, hidden).build() {
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled {
                output: String::new(),
            });
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let candidate = if absolute {
            entry.path()
        } else {
            entry.path().strip_prefix(&base).unwrap_or(entry.path())
        };
        if !matcher.is_match(candidate) {
            continue;
        }
        total += 1;
        let modified = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        newest.push(Reverse((
            modified,
            Reverse(workspace.relative(entry.path())),
        )));
        if newest.len() > MAX_RESULTS {
            newest.pop();
        }
    }

    let title = format!("glob {} ({total} files)", args.pattern);
    if total == 0 {
        return Ok(ToolOutput::text(
            title,
            format!("No files found matching `{}`.", args.pattern),
        ));
    }
    let mut text = String::new();
    for Reverse((_, Reverse(path))) in newest.into_sorted_vec() {
        text.push_str(&path);
        text.push('\n');
    }
    if total > MAX_RESULTS {
        text.push_str(&format!(
            "[showing the {MAX_RESULTS} most recently modified of {total} matches; use a more \
             specific pattern or path]\n"
        ));
    }
    Ok(ToolOutput::text(title, text))
}
