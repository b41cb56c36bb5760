//! The workspace's language servers as the tools see them: `gyre-lsp`'s
//! [`Lsp`] behind [`gyre_tools::DiagnosticsHook`], and the read-only
//! `diagnostics` tool, which joins the session's late tools once a server
//! has started (so a workspace without one offers the same tools as
//! before, and requests stay byte-stable until then).
//!
//! Nothing starts here: [`start`] only looks the configured and default
//! servers up on `PATH`; a server starts when a file it serves is first
//! read or changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use futures::future::BoxFuture;
use gyre_lsp::{DiagnosticsConfig, Lsp, ServerConfig};
use gyre_tools::{
    DiagnosticsHook, FileReport, LateTools, Tool, ToolContext, ToolError, ToolKind, ToolOutput,
    Typed, TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// `[lsp.NAME]` and `[diagnostics]` as configured.
#[derive(Debug, Clone, Default)]
pub struct LspSection {
    pub servers: BTreeMap<String, ServerConfig>,
    pub diagnostics: DiagnosticsConfig,
}

impl LspSection {
    /// The sections of the merged config files.
    pub fn of(servers: &BTreeMap<String, ServerConfig>, diagnostics: DiagnosticsConfig) -> Self {
        LspSection {
            servers: servers.clone(),
            diagnostics,
        }
    }
}

/// The hook over the workspace's servers; `None` when diagnostics are off
/// or no server is configured or found. The `diagnostics` tool is added to
/// `late` when the first server has started.
pub fn start(
    section: &LspSection,
    workspace: &Path,
    late: &Arc<LateTools>,
) -> Option<Arc<dyn DiagnosticsHook>> {
    if section.diagnostics.enabled == Some(false) {
        return None;
    }
    let servers = gyre_lsp::servers(&section.servers, workspace);
    if servers.is_empty() {
        return None;
    }
    let this: Arc<OnceLock<Weak<Lsp>>> = Arc::default();
    let offered = AtomicBool::new(false);
    let (late, tool_lsp) = (late.clone(), this.clone());
    let on_ready = Box::new(move || {
        if !offered.swap(true, Ordering::SeqCst) {
            let tool: Arc<dyn Tool> = Arc::new(Typed::new(DiagnosticsTool {
                lsp: tool_lsp.clone(),
            }));
            late.add("lsp", vec![tool]);
        }
    });
    let settings = gyre_lsp::Settings::from(&section.diagnostics);
    let lsp = Lsp::new(servers, settings, workspace, Some(on_ready));
    let _ = this.set(Arc::downgrade(&lsp));
    Some(Arc::new(Hook { lsp }))
}

#[derive(Debug)]
struct Hook {
    lsp: Arc<Lsp>,
}

impl DiagnosticsHook for Hook {
    fn opened(&self, path: &Path) {
        self.lsp.opened(path);
    }

    fn changed<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Option<FileReport>> {
        Box::pin(async move {
            let report = self.lsp.check(path).await?;
            Some(FileReport {
                text: report.text(),
                errors: report.errors,
                warnings: report.warnings,
            })
        })
    }
}

const DESCRIPTION: &str = "The errors a language server reports (warnings too when configured), \
with line and column: for one file (`file_path`: checked as it is on disk now) or, without \
`file_path`, for every file the servers have seen in this session. Edits already report the \
errors of the file they change; use this to check a file you have not edited, or the whole \
workspace after several edits.";

#[derive(Deserialize, JsonSchema)]
pub struct DiagnosticsArgs {
    /// A file, absolute or relative to the workspace root; omitted: every
    /// file the language servers have seen.
    #[serde(default)]
    file_path: Option<String>,
}

/// The `diagnostics` tool.
struct DiagnosticsTool {
    lsp: Arc<OnceLock<Weak<Lsp>>>,
}

impl TypedTool for DiagnosticsTool {
    const NAME: &'static str = "diagnostics";
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = DiagnosticsArgs;

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::ReadOnly
    }

    fn call<'a>(
        &'a self,
        args: DiagnosticsArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Some(lsp) = self.lsp.get().and_then(Weak::upgrade) else {
                return Err(ToolError::Failed(
                    "the language servers have stopped".into(),
                ));
            };
            match args.file_path {
                Some(file_path) => file(&lsp, ctx, &file_path).await,
                None => Ok(workspace(&lsp)),
            }
        })
    }
}

async fn file(lsp: &Arc<Lsp>, ctx: &ToolContext, file_path: &str) -> Result<ToolOutput, ToolError> {
    let path: PathBuf = ctx.workspace.resolve(file_path)?;
    let shown = ctx.workspace.relative(&path);
    if !path.is_file() {
        return Err(ToolError::NotFound {
            path: file_path.to_owned(),
        });
    }
    if !lsp.serves(&path) {
        return Ok(ToolOutput::text(
            format!("diagnostics {shown} (no language server)"),
            format!("No language server is configured or installed for {shown}."),
        ));
    }
    // A first look may include the server's start: a longer wait than an
    // edit's, still bounded.
    let wait = lsp.settings().wait.max(std::time::Duration::from_secs(10));
    match lsp.check_within(&path, wait).await {
        Some(report) if !report.lines.is_empty() || !report.notes.is_empty() => {
            let count = report.count();
            Ok(ToolOutput::text(
                format!("diagnostics {shown} ({count})"),
                report.text().trim_start().to_owned(),
            ))
        }
        Some(report) => Ok(ToolOutput::text(
            format!("diagnostics {shown} (no errors)"),
            format!("{} reports no errors in {shown}.", report.server),
        )),
        None => Ok(ToolOutput::text(
            format!("diagnostics {shown} (no answer)"),
            format!(
                "The language server for {shown} did not answer within {} s (it may still be starting, or it is not available).",
                wait.as_secs()
            ),
        )),
    }
}

fn workspace(lsp: &Lsp) -> ToolOutput {
    let reports = lsp.workspace_reports();
    if reports.is_empty() {
        return ToolOutput::text(
            "diagnostics (no errors)",
            "No errors in the files the language servers have seen in this session.",
        );
    }
    let errors: usize = reports.iter().map(|r| r.errors).sum();
    let text: String = reports
        .iter()
        .take(50)
        .map(|r| r.text().trim_start().to_owned())
        .collect::<Vec<_>>()
        .join("\n");
    let more = reports.len().saturating_sub(50);
    let text = if more > 0 {
        format!("{text}\n… and {more} more files with errors")
    } else {
        text
    };
    ToolOutput::text(format!("diagnostics ({errors} errors)"), text)
}
