//! Running the real `gyre` binary in a clean environment.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use gyre_mock::{Item, MockServer, Reply, Script, Step, StreamReply, When};
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
        self.gyre_via(&[], args)
    }

    /// `gyre ARGS` started through `prefix` (`setpriv …`, `unshare …`:
    /// a program that ends by running its arguments), as [`Env::gyre`].
    pub fn gyre_via(&self, prefix: &[&str], args: &[&str]) -> Command {
        let mut cmd = match prefix.split_first() {
            Some((program, rest)) => {
                let mut cmd = Command::new(program);
                cmd.args(rest).arg(GYRE);
                cmd
            }
            None => Command::new(GYRE),
        };
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
            "GYRE_DATABASE_URL",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }

    /// A client's driver (`node driver.mjs SCENARIO`) that starts `gyre`
    /// itself, given as its next argument and followed by `args`: the
    /// environment of [`Env::gyre_on`], against the mock.
    pub fn driver_on(&self, server: &MockServer, driver: &[&str], args: &[&str]) -> Command {
        let mut cmd = self.gyre_via(driver, args);
        cmd.env("ANTHROPIC_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", server.anthropic_base_url());
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

    /// `gyre run PROMPT` against the mock, in stream-json, allowed to act,
    /// with `extra` flags.
    pub fn run_on(&self, server: &MockServer, prompt: &str, extra: &[&str]) -> Command {
        let mut args = vec![
            "run",
            prompt,
            "--output-format",
            "stream-json",
            "--permission-mode",
            "bypassPermissions",
        ];
        args.extend_from_slice(extra);
        self.gyre_on(server, &args)
    }
}

/// A step answering every request that matches `when` with `items`.
pub fn step(when: When, items: Vec<Item>) -> Step {
    Step {
        when,
        times: None,
        reply: Reply::Stream(StreamReply {
            items,
            ..StreamReply::default()
        }),
    }
}

/// A model that answers every request with `text`.
pub fn always(text: &str) -> Script {
    Script::new(vec![Step {
        when: When::default(),
        times: None,
        reply: Reply::Stream(StreamReply {
            items: vec![Item::Text(text.into())],
            ..StreamReply::default()
        }),
    }])
}

/// Runs a stream-json run to a successful end; the session id of its
/// `system/init` line.
pub async fn session_of(cmd: Command) -> String {
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    assert_eq!(lines[0]["subtype"], "init", "{lines:?}");
    lines[0]["session_id"].as_str().unwrap().to_owned()
}

/// Asserts exit 2 with one line on stderr that contains `needle`.
pub fn assert_usage_error(out: &Output, needle: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "`{needle}` in: {err}");
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

/// A named pipe a tool's shell command writes a line to (`echo running >
/// started`): the line proves the command is running, where a test would
/// otherwise wait a while and hope.
pub struct Fifo {
    receiver: tokio::net::unix::pipe::Receiver,
}

impl Fifo {
    /// Makes the pipe at `path` and holds it open, so that the command's
    /// write neither blocks nor is lost.
    pub fn new(path: &Path) -> Fifo {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo {}", path.display());
        // Read and write: no EOF while no writer has opened it yet.
        let receiver = tokio::net::unix::pipe::OpenOptions::new()
            .read_write(true)
            .open_receiver(path)
            .unwrap();
        Fifo { receiver }
    }

    /// Until a line comes (30 s at most).
    pub async fn line(&mut self) {
        use tokio::io::AsyncReadExt;
        let mut byte = [0u8];
        let read = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                self.receiver.read_exact(&mut byte).await.unwrap();
                if byte[0] == b'\n' {
                    return;
                }
            }
        })
        .await;
        assert!(read.is_ok(), "no line in the pipe within 30 s");
    }
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

/// Every `tool_result` block of a stream-json run's `user` lines, in order.
pub fn tool_results(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "user")
        .flat_map(|l| {
            l["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|block| block["type"] == "tool_result")
        .collect()
}

/// The text of a `tool_result` block.
pub fn result_text(result: &Value) -> String {
    match &result["content"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}
