//! The seam between the file tools and language servers: a
//! [`DiagnosticsHook`] on the [`ToolContext`] (filled in by the host, which
//! implements it over `gyre-lsp`; `None`: no language servers).
//!
//! One shared place calls it ([`Typed`](crate::Typed)'s `run`, through
//! [`after_call`]): a tool only names the file a call reads or changes
//! ([`TypedTool::touches`](crate::TypedTool::touches)). After a read the
//! hook may start a server and never waits; after a change the hook's own
//! bounded wait decides how long the result is held back. What it reports
//! is appended to a successful result (text for the model, a count in the
//! title for display); a failed call is left as it is.

use std::path::Path;

use futures::future::BoxFuture;
use gyre_protocol::ToolResultContent;

use crate::{ToolContext, ToolError, ToolOutput};

/// How a call used the file it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileUse {
    Read,
    Changed,
}

/// What a language server said of one changed file, ready to append.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileReport {
    /// Appended to the model's text (already bounded); empty: nothing.
    pub text: String,
    /// Errors the server reported for the file (all, not only those shown).
    pub errors: usize,
    /// Warnings reported (counted only when configured to be shown).
    pub warnings: usize,
}

/// Language servers as the tools see them.
pub trait DiagnosticsHook: Send + Sync + std::fmt::Debug {
    /// `path` was read: a server for it may start, off the caller's path.
    fn opened(&self, path: &Path);

    /// `path` was written: tells its server and waits (bounded) for its
    /// diagnostics. `None`: no server for it, or nothing to say.
    fn changed<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Option<FileReport>>;
}

/// Tells the hook of a call's file and appends what it reports.
pub(crate) async fn after_call(
    ctx: &ToolContext,
    file: Option<(String, FileUse)>,
    result: Result<ToolOutput, ToolError>,
) -> Result<ToolOutput, ToolError> {
    let (Some(hook), Some((file_path, how))) = (&ctx.diagnostics, file) else {
        return result;
    };
    let mut output = result?;
    let Ok(path) = ctx.workspace.resolve(&file_path) else {
        return Ok(output);
    };
    match how {
        FileUse::Read => hook.opened(&path),
        FileUse::Changed => {
            if let Some(report) = hook.changed(&path).await {
                append(&mut output, &report);
            }
        }
    }
    Ok(output)
}

fn append(output: &mut ToolOutput, report: &FileReport) {
    if !report.text.is_empty() {
        match output.content.iter_mut().rev().find_map(|c| match c {
            ToolResultContent::Text { text } => Some(text),
            _ => None,
        }) {
            Some(text) => {
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&report.text);
            }
            None => output.content.push(ToolResultContent::Text {
                text: report.text.clone(),
            }),
        }
    }
    if let Some(count) = count_line(report) {
        output.title.push_str(" · ");
        output.title.push_str(&count);
    }
}

/// `2 errors, 1 warning`; `None` when there are none.
pub fn count_line(report: &FileReport) -> Option<String> {
    let plural = |n: usize, one: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {one}s")
        }
    };
    let mut parts = Vec::new();
    if report.errors > 0 {
        parts.push(plural(report.errors, "error"));
    }
    if report.warnings > 0 {
        parts.push(plural(report.warnings, "warning"));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}
