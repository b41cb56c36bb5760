//! Integration tests of gyre-tools: real files in temp dirs, real processes.

// Helpers outside `#[test]` functions are test code too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bash;
mod bash_jobs;
mod budget;
mod edit;
mod glob;
mod grep;
mod imperfect_edit;
mod late;
mod ls;
mod multi_edit;
mod read;
mod readonly;
mod registry;
mod todo_write;
mod web_fetch;
mod workspace;
mod workspace_fs;
mod write;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};

use gyre_protocol::{Outcome, ToolResultContent};
use gyre_tools::{ProgressSink, Registry, ToolContext, ToolError, ToolOutput, Workspace};
use serde_json::Value;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

/// A secret the bash tool must hide from its commands.
pub const FAKE_KEY: &str = "sk-test-secret-never-shown";

/// A workspace in a fresh temp dir, with the built-in tools.
pub struct Fixture {
    // Held for its Drop, which removes the directory.
    _dir: TempDir,
    pub ctx: ToolContext,
    pub registry: Registry,
}

impl Default for Fixture {
    fn default() -> Self {
        Self::new()
    }
}

impl Fixture {
    pub fn new() -> Self {
        set_fake_keys_once();
        let dir = tempfile::tempdir().unwrap();
        let workspace = Arc::new(Workspace::new(dir.path()).unwrap());
        Fixture {
            _dir: dir,
            ctx: ToolContext {
                workspace,
                session_id: "s1".into(),
                call_id: "c1".into(),
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
            registry: Registry::builtin(),
        }
    }

    pub fn with_progress(mut self, sink: ProgressSink) -> Self {
        self.ctx.progress = Some(sink);
        self
    }

    pub fn root(&self) -> &Path {
        self.ctx.workspace.root()
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.root().join(relative)
    }

    pub fn write(&self, relative: &str, content: impl AsRef<[u8]>) {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path(relative)).unwrap()
    }

    pub async fn call(&self, tool: &str, arguments: Value) -> Result<ToolOutput, ToolError> {
        let tool = self.registry.get(tool).unwrap();
        tool.run(arguments, &self.ctx).await
    }

    /// Runs a call that must succeed and returns its text.
    pub async fn ok(&self, tool: &str, arguments: Value) -> String {
        match self.call(tool, arguments).await {
            Ok(out) => text(&out),
            Err(e) => panic!("{tool} failed: {e}"),
        }
    }

    /// Runs a call that must fail and returns its error.
    pub async fn err(&self, tool: &str, arguments: Value) -> ToolError {
        match self.call(tool, arguments).await {
            Ok(out) => panic!("{tool} succeeded: {}", text(&out)),
            Err(e) => e,
        }
    }
}

pub fn text(out: &ToolOutput) -> String {
    out.content
        .iter()
        .map(|c| match c {
            ToolResultContent::Text { text } => text.as_str(),
            ToolResultContent::Image { .. } => "",
        })
        .collect()
}

pub fn is_success(out: &ToolOutput) -> bool {
    out.outcome == Outcome::Success
}

/// Puts fake API keys into this process's environment, once, before any test
/// spawns a process: every test starts with `Fixture::new`, which waits here.
fn set_fake_keys_once() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for key in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "OPENROUTER_API_KEY",
            "GYRE_DATABASE_URL",
        ] {
            set_env(key, FAKE_KEY);
        }
    });
}

#[allow(unsafe_code)]
fn set_env(key: &str, value: &str) {
    // SAFETY: called only inside `ONCE`, which every test passes before it
    // starts threads or processes, so no other thread reads the environment
    // while it is written.
    unsafe { std::env::set_var(key, value) };
}
