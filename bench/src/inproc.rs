//! Running gyre's built-in tools in-process, the way the loop does: through
//! `Registry::builtin()`, with a `ToolContext` on a workspace, on a
//! current-thread tokio runtime (as the CLI builds it; tools do their file
//! work on tokio's blocking pool).
//!
//! Invariant: what is timed is `Tool::run` for the call, from just before it
//! is called to its output: argument parsing, the blocking-pool hop and the
//! tool's work. Building the argument JSON and reading the output's text are
//! outside the clock. The code measured is the gyre crates compiled into this
//! binary (same sources and release profile as the `gyre` binary).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};
use gyre_protocol::ToolResultContent;
use gyre_tools::{Registry, ToolContext, ToolOutput, Workspace};
use serde_json::Value;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

/// The built-in tools on one workspace, with a runtime to run them.
pub struct Tools {
    pub registry: Registry,
    pub ctx: ToolContext,
    pub runtime: Runtime,
}

impl Tools {
    pub fn new(root: &Path) -> anyhow::Result<Tools> {
        let workspace = Workspace::new(root)
            .with_context(|| format!("cannot open the workspace {}", root.display()))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start a tokio runtime")?;
        Ok(Tools {
            registry: Registry::builtin(),
            ctx: ToolContext {
                workspace: Arc::new(workspace),
                session_id: "bench".into(),
                call_id: "bench-call".into(),
                cancel: CancellationToken::new(),
                progress: None,
                session: Default::default(),
                images: Default::default(),
                output: Default::default(),
                sandbox: Default::default(),
                loop_scope: None,
                processes: None,
                fs: None,
                diagnostics: None,
            },
            runtime,
        })
    }

    /// Runs one call and times it; returns the wall time and the output text.
    pub fn timed(&self, name: &str, arguments: Value) -> anyhow::Result<(Duration, String)> {
        let (elapsed, output) = self.runtime.block_on(async {
            let start = Instant::now();
            let output = run(&self.registry, &self.ctx, name, arguments).await;
            (start.elapsed(), output)
        });
        Ok((elapsed, text(&output?)))
    }
}

/// Runs one call; a tool error is an error here (a benchmark times only
/// calls that worked).
pub async fn run(
    registry: &Registry,
    ctx: &ToolContext,
    name: &str,
    arguments: Value,
) -> anyhow::Result<ToolOutput> {
    let tool = registry
        .get(name)
        .ok_or_else(|| anyhow!("no built-in tool `{name}`"))?;
    tool.run(arguments, ctx)
        .await
        .map_err(|e| anyhow!("the `{name}` tool failed: {e}"))
}

/// The text parts of an output, joined.
pub fn text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .filter_map(|c| match c {
            ToolResultContent::Text { text } => Some(text.as_str()),
            ToolResultContent::Image { .. } => None,
        })
        .collect()
}

/// User + system CPU time of this whole process so far (every thread,
/// including tokio's blocking pool).
#[allow(unsafe_code)]
pub fn process_cpu() -> Duration {
    // SAFETY: `usage` is a valid, writable local for the call's duration; a
    // zeroed rusage is a valid value.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |tv: libc::timeval| {
        Duration::from_secs(u64::try_from(tv.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(tv.tv_usec).unwrap_or(0))
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn runs_a_builtin_tool_and_reports_failures() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("a.txt"), "hello bench\n").expect("write");
        let tools = Tools::new(dir.path()).expect("tools");
        let (elapsed, text) = tools
            .timed("read", json!({"file_path": "a.txt"}))
            .expect("reads");
        assert!(text.contains("hello bench"), "{text}");
        assert!(elapsed > Duration::ZERO);
        assert!(
            tools
                .timed("read", json!({"file_path": "missing.txt"}))
                .is_err()
        );
        assert!(tools.timed("frobnicate", json!({})).is_err());
        let before = process_cpu();
        let _busy: u64 = (0..2_000_000u64).map(|i| i ^ (i >> 3)).sum();
        assert!(process_cpu() >= before);
    }
}
