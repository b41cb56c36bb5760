//! `gyre acp` driven by the official TypeScript ACP SDK
//! (`@agentclientprotocol/sdk` from npm, installed by `.ci/run`,
//! unmodified; it parses every message with the protocol's schema) over the
//! real binary's stdio, with the mock model behind it: the editor's MCP
//! servers, session modes, a permission request carrying its diff, the
//! editor's buffers through `fs/*`, an image prompt, a command's live
//! output, the advertised commands, the model as a session config option. The scenarios are in `acp_sdk.mjs`.

use std::path::PathBuf;
use std::time::Duration;

use gyre_mock::{MockServer, Script};

use crate::common::*;

const DRIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/acp_sdk.mjs");
const SCRIPT: &str = include_str!("acp_sdk_script.json");

/// A cache directory of `.ci/run` (the variable, else its default place).
fn cached(var: &str, default: &str) -> PathBuf {
    match std::env::var_os(var) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/gyre-ci")
            .join(default),
    }
}

/// Where `.ci/run` installed the SDK; fails the test, naming `.ci/run`,
/// when missing.
fn sdk_dir() -> PathBuf {
    let dir = cached("GYRE_TEST_ACP_SDK", "acp-sdk");
    assert!(
        dir.join("node_modules/@agentclientprotocol/sdk").exists(),
        "{} has no @agentclientprotocol/sdk: the ACP SDK is installed by .ci/run \
         (npm install --prefix \"$HOME/.cache/gyre-ci/acp-sdk\" @agentclientprotocol/sdk), \
         or set GYRE_TEST_ACP_SDK to where it is",
        dir.display()
    );
    dir
}

fn mcp_dir() -> PathBuf {
    let dir = cached("GYRE_TEST_MCP_DIR", "mcp");
    assert!(
        dir.join("node_modules/.bin/mcp-server-everything").exists(),
        "{} has no mcp-server-everything: the MCP reference servers are installed by .ci/run, \
         or set GYRE_TEST_MCP_DIR to where they are",
        dir.display()
    );
    dir
}

/// Runs the driver's scenario `name` against the mock model; passes when
/// it exits 0 and prints `ok`.
async fn scenario(name: &str) {
    scenario_with(name, |_| {}).await;
}

/// [`scenario`], with `setup` adding files to the test's directories.
async fn scenario_with(name: &str, setup: impl FnOnce(&Env)) {
    let server = MockServer::start(Script::from_json_str(SCRIPT).unwrap())
        .await
        .unwrap();
    let env = Env::new();
    // A configured model (the `model` scenario switches to it).
    env.write_user_config(&format!(
        "{FAST_RETRIES}\n[models.claude-switched]\ncontext_window = 16000\n"
    ));
    std::fs::write(env.path("a.txt"), "hello from a.txt\n").unwrap();
    std::fs::write(env.path("b.txt"), "on disk\n").unwrap();
    // A Claude Code command file of the project (the `commands` scenario).
    std::fs::create_dir_all(env.path(".claude/commands")).unwrap();
    std::fs::write(
        env.path(".claude/commands/greet.md"),
        "---\ndescription: Say hello\nargument-hint: [name]\n---\nGREETING for $ARGUMENTS\n",
    )
    .unwrap();
    setup(&env);
    // The driver compares absolute paths with what gyre reports.
    let workspace = env.workspace.path().canonicalize().unwrap();
    let workspace_arg = workspace.to_str().unwrap();
    let mut cmd = env.driver_on(&server, &["node", DRIVER, name], &[workspace_arg]);
    cmd.current_dir(&workspace)
        .env("GYRE_TEST_ACP_SDK", sdk_dir())
        .env("GYRE_TEST_MCP_DIR", mcp_dir());
    // Far above the few seconds a scenario takes.
    let out = tokio::time::timeout(Duration::from_secs(180), cmd.output())
        .await
        .expect("the scenario ended")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(&format!("ok {name}")),
        "{name}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn sdk_editor_mcp_servers_are_started_and_a_failure_is_a_notice() {
    scenario("mcp_servers").await;
}

#[tokio::test]
async fn sdk_modes_switch_to_plan_and_back_to_default_on_approval() {
    scenario("modes").await;
}

#[tokio::test]
async fn sdk_permission_request_carries_the_diff_and_the_call_stays_pending() {
    scenario("permission_diff").await;
}

#[tokio::test]
async fn sdk_reads_and_edits_go_to_the_editor_s_buffer_not_the_disk() {
    scenario("fs_buffer").await;
}

#[tokio::test]
async fn sdk_image_prompt_reaches_the_model_as_an_image() {
    scenario("image").await;
}

#[tokio::test]
async fn sdk_a_command_s_output_shows_while_it_runs() {
    scenario("live_output").await;
}

#[tokio::test]
async fn sdk_commands_are_advertised_and_a_custom_command_runs_expanded() {
    scenario("commands").await;
}

#[tokio::test]
async fn sdk_model_config_option_switches_the_next_prompt_s_model() {
    scenario("model").await;
}

#[tokio::test]
async fn sdk_an_agent_with_its_own_model_refuses_another() {
    scenario_with("agent_model", |env| {
        std::fs::create_dir_all(env.path(".gyre/agents")).unwrap();
        std::fs::write(
            env.path(".gyre/agents/own.md"),
            "---\nname: own\ndescription: Runs on its own model.\nmodel: claude-own\n---\nOWN-PROMPT\n",
        )
        .unwrap();
        env.write_user_config(&format!(
            "{FAST_RETRIES}\n[subagents]\ndefault_agent = \"own\"\n"
        ));
    })
    .await;
}
