//! MCP servers' tools through `gyre run`: the reference servers from npm
//! (server-everything over stdio and streamable HTTP, server-filesystem)
//! and the Python fixtures of gyre-mcp, as real child processes; the
//! scripted model calls their tools once they are offered.
//!
//! Servers start in the background, so a script cannot know the turn at
//! which a tool joins: until the request offers it (`body_contains` its
//! name), the model waits a little with `bash sleep` (bounded by
//! `--max-turns`).
//!
//! This module holds the shared helpers (the scripted model's steps, the
//! servers' binaries, reading the output lines); `transports` calls tools
//! over each transport, `failures` covers servers that never start or
//! crash, and `commands` the `gyre mcp list` / `trust` subcommands.

mod commands;
mod failures;
mod transports;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use gyre_mock::{Item, MockServer, Script, Step, When};
use serde_json::{Value, json};

use crate::common::*;

/// The user's config of these tests: fast retries, and no loop guard
/// (the model's waits repeat the same `sleep`).
const BASE: &str = "[retry]\nmax_retries = 2\ninitial_delay_ms = 10\nmax_delay_ms = 40\nbudget_ms = 5000\n[loop_guard]\nrepeat = 0\n";

/// A fresh environment with [`BASE`] as the user's config.
fn env() -> Env {
    let env = Env::new();
    env.write_user_config(BASE);
    env
}

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../mcp/tests/fixtures");

/// A reference server installed by `.ci/run` (`GYRE_TEST_MCP_DIR`, else
/// its default place); fails the test, naming `.ci/run`, when missing.
fn npm_bin(name: &str) -> String {
    let dir = match std::env::var_os("GYRE_TEST_MCP_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/gyre-ci/mcp")
        }
    };
    let bin = dir.join("node_modules/.bin").join(name);
    assert!(
        bin.exists(),
        "{} is missing: the MCP reference servers are installed by .ci/run \
         (npm install --prefix \"$HOME/.cache/gyre-ci/mcp\" @modelcontextprotocol/server-everything \
         @modelcontextprotocol/server-filesystem), or set GYRE_TEST_MCP_DIR to where they are",
        bin.display()
    );
    bin.display().to_string()
}

fn fixture(name: &str) -> String {
    format!("{FIXTURES}/{name}")
}

/// Answers once the tool `name` is offered.
fn offered(name: &str) -> When {
    When {
        body_contains: Some(format!("\"name\":\"{name}\"")),
        ..When::default()
    }
}

fn after(result: &str) -> When {
    When {
        last_message_contains: Some(result.into()),
        ..When::default()
    }
}

/// The model's wait while no step matches: a short sleep.
fn wait() -> Step {
    step(
        When::default(),
        vec![call("bash", json!({"command": "sleep 0.2"}))],
    )
}

/// A script that calls `tool` with `args` once it is offered, then ends
/// with "done" once the last message holds `expect`.
fn call_once_offered(tool: &str, args: Value, expect: &str) -> Script {
    Script::new(vec![
        step(after(expect), vec![Item::Text("done".into())]),
        step(offered(tool), vec![call(tool, args)]),
        wait(),
    ])
}

/// `system` lines of `subtype`.
fn system_lines<'a>(lines: &'a [Value], subtype: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "system" && l["subtype"] == subtype)
        .collect()
}

/// The results of the calls of `tool`, in order.
fn results_of(lines: &[Value], tool: &str) -> Vec<Value> {
    let ids: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "assistant")
        .flat_map(|l| l["message"]["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == "tool_use" && b["name"] == tool)
        .map(|b| &b["id"])
        .collect();
    tool_results(lines)
        .into_iter()
        .filter(|r| ids.contains(&&r["tool_use_id"]))
        .collect()
}

/// The tool result texts of the model's last request (what it saw).
fn last_request_results(server: &MockServer) -> String {
    let requests = server.requests();
    requests.last().unwrap().body.to_string()
}

fn run(env: &Env, server: &MockServer) -> tokio::process::Command {
    env.run_on(server, "use the MCP tools", &["--max-turns", "60"])
}

/// server-everything serving streamable HTTP on a free port; killed when
/// dropped.
struct HttpEverything {
    url: String,
    _child: tokio::process::Child,
}

async fn http_everything() -> HttpEverything {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new(npm_bin("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "server-everything did not listen on port {port} within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    HttpEverything {
        url: format!("http://127.0.0.1:{port}/mcp"),
        _child: child,
    }
}
