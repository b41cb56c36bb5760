//! Running the real `gyre` binary in a clean environment.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use gyre_mock::{Item, MockServer, Script};
use serde_json::Value;
use tempfile::TempDir;
use tokio::process::Command;

pub const GYRE: &str = env!("CARGO_BIN_EXE_gyre");

/// The `[retry]` section every test environment starts with.
pub const FAST_RETRIES: &str =
    "[retry]\nmax_retries = 2\ninitial_delay_ms = 10\nmax_delay_ms = 40\nbudget_ms = 5000\n";

/// A workspace, a `GYRE_HOME` and a config dir, all fresh.
pub struct Env {
    pub workspace: TempDir,
    pub home: TempDir,
    pub config: TempDir,
}

impl Env {
    /// Retries are fast (milliseconds) through the user's config file, so
    /// that fault tests stay quick; a test may overwrite the file.
    pub fn new() -> Env {
        let env = Env {
            workspace: TempDir::new().unwrap(),
            home: TempDir::new().unwrap(),
            config: TempDir::new().unwrap(),
        };
        env.write_user_config(FAST_RETRIES);
        env
    }

    /// Replaces the user's `config.toml`.
    pub fn write_user_config(&self, text: &str) {
        let dir = self.config.path().join("gyre");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), text).unwrap();
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.workspace.path().join(rel)
    }

    /// `gyre ARGS` in the workspace, with no provider variables inherited.
    pub fn gyre(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(GYRE);
        cmd.args(args)
            .current_dir(self.workspace.path())
            .env("GYRE_HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.config.path())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for var in [
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }

    /// `gyre ARGS` against the mock with the Anthropic wire API.
    pub fn gyre_on(&self, server: &MockServer, args: &[&str]) -> Command {
        let mut cmd = self.gyre(args);
        cmd.env("ANTHROPIC_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", server.anthropic_base_url());
        cmd
    }

    pub fn database(&self) -> PathBuf {
        self.home.path().join("sessions.db")
    }
}

/// Runs to the end, bounded in time.
pub async fn output(mut cmd: Command) -> Output {
    tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("gyre did not finish within 60 s")
        .expect("gyre could not be started")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every stdout line as JSON (fails the test if one is not).
pub fn json_lines(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

pub fn call(name: &str, arguments: Value) -> Item {
    Item::ToolCall {
        id: None,
        name: name.into(),
        arguments,
        fragments: None,
    }
}

pub fn three_step_script() -> Script {
    Script::linear(vec![
        vec![
            Item::Text("Reading.".into()),
            call("read", serde_json::json!({"file_path": "notes.txt"})),
        ],
        vec![call(
            "bash",
            serde_json::json!({"command": "echo built > out.txt"}),
        )],
        vec![Item::Text("All done.".into())],
    ])
}

pub fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, text).unwrap();
}
