//! `ls`: a compact tree of a directory.
//!
//! Invariants: ignore files are honoured and `.git` is skipped (see `walk`);
//! at most [`MAX_ENTRIES`] entries are listed, gathered breadth-first so that
//! a cut tree still shows the upper levels whole; a cut says so.
//!
//! Trade-off: each directory is read with its own one-level walk, which
//! re-reads the ignore files of its ancestors; that costs a little per
//! directory but makes breadth-first order (and the bound) simple.

use std::collections::VecDeque;
use std::path::PathBuf;

use futures::future::BoxFuture;
use globset::{Glob, GlobSet, GlobSetBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::walk::{Hidden, walker};
use crate::{ToolContext, ToolError, ToolKind, ToolOutput, TypedTool, Workspace};

const NAME: &str = "ls";
const MAX_ENTRIES: usize = 300;

const DESCRIPTION: &str = "List a directory as a tree (default: the workspace root), \
directories first, each directory ending in `/`. Honours .gitignore; skips .git. At most 300 \
entries, upper levels first; list a subdirectory to see deeper. `ignore` takes glob patterns \
of names or paths to leave out, e.g. [\"*.log\", \"node_modules\"]. To find files by pattern \
use `glob`.";

#[derive(Deserialize, JsonSchema)]
pub struct LsArgs {
    /// Directory to list (default: the workspace root).
    path: Option<String>,
    /// Glob patterns of entries to leave out.
    #[serde(default)]
    ignore: Vec<String>,
}

/// The `ls` tool.
#[derive(Debug, Default)]
pub struct LsTool;

impl TypedTool for LsTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = LsArgs;

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::ReadOnly
    }

    fn call<'a>(
        &'a self,
        args: LsArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let workspace = ctx.workspace.clone();
            crate::blocking(&ctx.cancel, move |cancel| ls(&workspace, &args, cancel)).await
        })
    }
}

/// One listed entry; `children` index into the node list.
struct Node {
    name: String,
    path: PathBuf,
    is_dir: bool,
    children: Vec<usize>,
}

fn ls(
    workspace: &Workspace,
    args: &LsArgs,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let given = args.path.as_deref().unwrap_or("");
    let root = workspace.resolve_read(given)?;
    match std::fs::metadata(&root) {
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
    let ignored = ignore_set(&args.ignore)?;

    let mut nodes = vec![Node {
        name: String::new(),
        path: root.clone(),
        is_dir: true,
        children: Vec::new(),
    }];
    let mut queue = VecDeque::from([0usize]);
    let mut cut = false;
    'directories: while let Some(parent) = queue.pop_front() {
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled {
                output: String::new(),
            });
        }
        let mut children = read_children(&nodes[parent].path, &root, &ignored);
        // Directories first, then files; each by name.
        children.sort_by(|a, b| b.is_dir.cmp(&a.is_dir).then_with(|| a.name.cmp(&b.name)));
        for child in children {
            if nodes.len() > MAX_ENTRIES {
                cut = true;
                break 'directories;
            }
            let index = nodes.len();
            if child.is_dir {
                queue.push_back(index);
            }
            nodes[parent].children.push(index);
            nodes.push(child);
        }
    }

    let listed = nodes.len() - 1;
    let shown = workspace.relative(&root);
    let mut text = format!("{}/\n", root.display());
    render(&nodes, 0, 1, &mut text);
    if listed == 0 {
        text.push_str("  (empty)\n");
    }
    if cut {
        text.push_str(&format!(
            "[listing cut at {MAX_ENTRIES} entries; list a subdirectory to see more]\n"
        ));
    }
    Ok(ToolOutput::text(
        format!("ls {shown} ({listed} entries)"),
        text,
    ))
}

fn ignore_set(patterns: &[String]) -> Result<GlobSet, ToolError> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern.trim_end_matches('/'))
            .map_err(|e| ToolError::invalid(NAME, format!("invalid ignore pattern: {e}")))?;
        builder.add(glob);
    }
    builder
        .build()
        .map_err(|e| ToolError::invalid(NAME, format!("invalid ignore pattern: {e}")))
}

/// The entries directly inside `dir` that are neither ignored by ignore files
/// nor by `ignored` (matched against the name and the path below `root`).
fn read_children(dir: &std::path::Path, root: &std::path::Path, ignored: &GlobSet) -> Vec<Node> {
    let mut builder = walker(dir, Hidden::Include);
    builder.max_depth(Some(1));
    builder
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.depth() == 1)
        .filter(|entry| {
            let relative = entry.path().strip_prefix(root).unwrap_or(entry.path());
            !ignored.is_match(entry.file_name()) && !ignored.is_match(relative)
        })
        .map(|entry| Node {
            name: entry.file_name().to_string_lossy().into_owned(),
            is_dir: entry.file_type().is_some_and(|t| t.is_dir()),
            path: entry.into_path(),
            children: Vec::new(),
        })
        .collect()
}

fn render(nodes: &[Node], index: usize, depth: usize, out: &mut String) {
    for &child in &nodes[index].children {
        let node = &nodes[child];
        let slash = if node.is_dir { "/" } else { "" };
        out.push_str(&format!("{}{}{slash}\n", "  ".repeat(depth), node.name));
        render(nodes, child, depth + 1, out);
    }
}
