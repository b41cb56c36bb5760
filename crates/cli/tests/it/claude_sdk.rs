//! The official Claude Agent SDK for Python (`claude-agent-sdk` from PyPI,
//! installed by `.ci/run`, unmodified) drives the real `gyre` binary
//! through `cli_path`, with the mock model behind it: `query()` with tool
//! calls, `ClaudeSDKClient` over three turns, `can_use_tool` (deny, allow,
//! allow with a rewritten input), a `PreToolUse` hook that blocks a call, a
//! `create_sdk_mcp_server` tool the model calls,
//! `interrupt()` during `sleep 30`,
//! `include_partial_messages`, resume by id, and the control requests.
//! The scenarios are in `claude_sdk.py`; each fails on any message the
//! SDK's own parser rejects or any warning it logs. The TypeScript SDK
//! (`@anthropic-ai/claude-agent-sdk` from npm, `claude_sdk.mjs`) runs
//! `query()` with tools and with partial messages.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gyre_mock::{MockServer, Script};

use crate::common::*;

const DRIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/claude_sdk.py");
const SCRIPT: &str = include_str!("claude_sdk_script.json");

/// Where `.ci/run` installed the SDK (`GYRE_TEST_CLAUDE_SDK_PY`, else its
/// default place); fails the test, naming `.ci/run`, when missing.
fn sdk_dir() -> PathBuf {
    let dir = match std::env::var_os("GYRE_TEST_CLAUDE_SDK_PY") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/gyre-ci/claude-sdk-py"),
    };
    assert!(
        dir.join("claude_agent_sdk").exists(),
        "{} has no claude_agent_sdk: the Claude Agent SDK is installed by .ci/run \
         (pip install --target \"$HOME/.cache/gyre-ci/claude-sdk-py\" claude-agent-sdk), \
         or set GYRE_TEST_CLAUDE_SDK_PY to where it is",
        dir.display()
    );
    dir
}

async fn scenario(name: &str) {
    let ok = format!("\"ok\": \"{name}\"");
    drive("python3", DRIVER, name, ("PYTHONPATH", &sdk_dir()), &ok).await;
}

/// Runs `driver`'s scenario `name` with `program`, the SDK found through
/// `sdk` (a variable and the SDK's directory), against the mock model;
/// passes when the driver exits 0 and prints `ok`.
async fn drive(program: &str, driver: &str, name: &str, sdk: (&str, &Path), ok: &str) {
    let server = MockServer::start(Script::from_json_str(SCRIPT).unwrap())
        .await
        .unwrap();
    let env = Env::new();
    std::fs::write(env.path("a.txt"), "hello from a.txt\n").unwrap();
    let workspace = env.workspace.path().to_str().unwrap();
    let mut cmd = env.driver_on(&server, &[program, driver, name], &[workspace]);
    cmd.env(sdk.0, sdk.1);
    // Far above the few seconds a scenario takes (the SDK's own
    // initialize timeout is 60 s).
    let out = tokio::time::timeout(Duration::from_secs(180), cmd.output())
        .await
        .expect("the scenario ended")
        .unwrap();
    assert!(
        out.status.success(),
        "{name}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(ok));
}

#[tokio::test]
async fn sdk_query_runs_read_and_bash() {
    scenario("query_with_tools").await;
}

#[tokio::test]
async fn sdk_client_holds_one_session_over_three_turns() {
    scenario("client_three_turns").await;
}

#[tokio::test]
async fn sdk_can_use_tool_denies_allows_and_rewrites() {
    scenario("can_use_tool").await;
}

#[tokio::test]
async fn sdk_interrupt_stops_a_sleep_and_the_next_turn_works() {
    scenario("interrupt").await;
}

#[tokio::test]
async fn sdk_partial_messages_stream_the_messages_api_sequence() {
    scenario("partial_messages").await;
}

#[tokio::test]
async fn sdk_resumes_a_finished_session_by_id() {
    scenario("resume").await;
}

#[tokio::test]
async fn sdk_pre_tool_use_hook_blocks_a_call() {
    scenario("pre_tool_use_hook").await;
}

#[tokio::test]
async fn sdk_mcp_server_tool_is_called_by_the_model() {
    scenario("sdk_mcp_server").await;
}

/// The SDK's own agents (`agents=` of the options, sent in `initialize`)
/// are agents of the session: listed in `system/init`, started by the
/// model's `task` call with their prompt.
#[tokio::test]
async fn sdk_agents_run_as_subagents() {
    scenario("sdk_agents").await;
}

#[tokio::test]
async fn sdk_control_requests_are_answered() {
    scenario("control_requests").await;
}

const TS_DRIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/claude_sdk.mjs");

/// Where `.ci/run` installed the TypeScript SDK (`GYRE_TEST_CLAUDE_SDK_TS`,
/// else its default place); fails the test, naming `.ci/run`, when missing.
fn ts_sdk_dir() -> PathBuf {
    let dir = match std::env::var_os("GYRE_TEST_CLAUDE_SDK_TS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/gyre-ci/claude-sdk-ts"),
    };
    assert!(
        dir.join("node_modules/@anthropic-ai/claude-agent-sdk/sdk.mjs")
            .exists(),
        "{} has no @anthropic-ai/claude-agent-sdk: it is installed by .ci/run \
         (npm install --prefix \"$HOME/.cache/gyre-ci/claude-sdk-ts\" @anthropic-ai/claude-agent-sdk), \
         or set GYRE_TEST_CLAUDE_SDK_TS to where it is",
        dir.display()
    );
    dir
}

async fn ts_scenario(name: &str) {
    let ok = format!("\"ok\":\"{name}\"");
    let sdk = ts_sdk_dir();
    drive(
        "node",
        TS_DRIVER,
        name,
        ("GYRE_TEST_CLAUDE_SDK_TS", &sdk),
        &ok,
    )
    .await;
}

#[tokio::test]
async fn ts_sdk_query_runs_read_and_bash() {
    ts_scenario("query_with_tools").await;
}

#[tokio::test]
async fn ts_sdk_partial_messages_stream_the_messages_api_sequence() {
    ts_scenario("partial_messages").await;
}
