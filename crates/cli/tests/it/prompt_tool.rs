//! `--permission-prompt-tool`: a headless run asks an MCP tool (a real
//! server over stdio, the Python fixture of gyre-mcp) instead of refusing.

use std::path::Path;

use gyre_mock::{Item, MockServer, Script};
use serde_json::json;

use crate::common::*;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../mcp/tests/fixtures/permission_server.py"
);

/// A `.mcp.json` with the fixture as server `perm`, writing `started` in
/// the workspace when it starts; `extra`: more fixture options.
fn write_mcp_json(env: &Env, extra: &[&str]) {
    let mut args = vec![json!(FIXTURE), json!("--marker"), json!("started")];
    args.extend(extra.iter().map(|o| json!(o)));
    let config = json!({"mcpServers": {"perm": {"command": "python3", "args": args}}});
    write(&env.path(".mcp.json"), &config.to_string());
}

/// A headless run in the default permission mode, asking `tool`; `extra`:
/// more flags.
fn run_asking(
    env: &Env,
    server: &MockServer,
    tool: &str,
    extra: &[&str],
) -> tokio::process::Command {
    let mut args = vec![
        "run",
        "go",
        "--output-format",
        "stream-json",
        "--permission-mode",
        "default",
        "--permission-prompt-tool",
        tool,
    ];
    args.extend_from_slice(extra);
    env.gyre_on(server, &args)
}

fn started(env: &Env) -> bool {
    Path::new(&env.path("started")).exists()
}

#[tokio::test]
async fn prompt_tool_allows_with_the_updated_input_and_denies_with_its_message() {
    let script = Script::linear(vec![
        vec![call("bash", json!({"command": "echo hello"}))],
        vec![call("bash", json!({"command": "touch x"}))],
        vec![Item::Text("Done.".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    write_mcp_json(&env, &[]);
    // `echo` is read-only, which the default mode runs without asking: an
    // ask rule makes every `bash` call ask.
    let out = output(run_asking(
        &env,
        &server,
        "mcp__perm__approve",
        &["--ask-tools", "bash"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let results = tool_results(&json_lines(&out));
    assert_eq!(results.len(), 2, "{results:?}");

    // Allowed, and run with the input the tool returned.
    assert_ne!(results[0]["is_error"], true, "{}", results[0]);
    assert!(
        result_text(&results[0]).contains("hello world"),
        "{}",
        results[0]
    );

    // Denied: the model sees the tool's message; nothing ran.
    assert_eq!(results[1]["is_error"], true, "{}", results[1]);
    let denied = result_text(&results[1]);
    assert!(
        denied.contains(
            "permission denied: mcp__perm__approve denied it: the approve tool only allows echo, not `touch x`"
        ),
        "{denied}"
    );
    assert!(!env.path("x").exists(), "the denied command did not run");
    assert!(started(&env));
}

#[tokio::test]
async fn prompt_tool_server_is_not_started_by_a_run_that_never_asks() {
    let script = Script::linear(vec![
        vec![call("read", json!({"file_path": "notes.txt"}))],
        vec![Item::Text("Read it.".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    write(&env.path("notes.txt"), "a note\n");
    write_mcp_json(&env, &[]);
    let out = output(run_asking(&env, &server, "mcp__perm__approve", &[])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let results = tool_results(&json_lines(&out));
    assert!(result_text(&results[0]).contains("a note"), "{results:?}");
    assert!(!started(&env), "the server was started without an ask");
}

#[tokio::test]
async fn prompt_tool_that_cannot_start_denies_and_the_run_goes_on() {
    let script = Script::linear(vec![
        vec![call("bash", json!({"command": "touch x"}))],
        vec![Item::Text("Understood.".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    write_mcp_json(&env, &["--exit"]);
    let out = output(run_asking(&env, &server, "mcp__perm__approve", &[])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let results = tool_results(&json_lines(&out));
    assert_eq!(results[0]["is_error"], true, "{}", results[0]);
    let text = result_text(&results[0]);
    assert!(
        text.contains("the permission prompt tool mcp__perm__approve is unavailable: MCP server `perm` exited or closed its connection"),
        "{text}"
    );
    assert!(text.contains("told to exit at start"), "{text}");
    assert!(!env.path("x").exists());
}

#[tokio::test]
async fn prompt_tool_names_are_checked_before_the_run() {
    let server = MockServer::start(always("unused")).await.unwrap();
    let env = Env::new();
    write_mcp_json(&env, &[]);
    let out = output(run_asking(&env, &server, "mcp__nope__approve", &[])).await;
    assert_usage_error(&out, "no MCP server `nope` in");
    assert_usage_error(&out, "(its servers: perm)");
    let out = output(run_asking(&env, &server, "approve", &[])).await;
    assert_usage_error(&out, "is not an MCP tool name; write mcp__SERVER__TOOL");
    std::fs::remove_file(env.path(".mcp.json")).unwrap();
    let out = output(run_asking(&env, &server, "mcp__perm__approve", &[])).await;
    assert_usage_error(&out, ".mcp.json (it has none)");
    assert!(!started(&env));
}

#[tokio::test]
async fn the_prompt_tool_may_be_a_server_of_mcp_config_and_its_denial_is_listed() {
    let script = Script::linear(vec![
        vec![call("bash", json!({"command": "touch x"}))],
        vec![Item::Text("Done.".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    // No .mcp.json: the server comes from Claude Code's --mcp-config.
    let config = json!({"mcpServers": {"perm": {
        "command": "python3", "args": [FIXTURE, "--marker", "started"]}}});
    let out = output(env.gyre_on(
        &server,
        &[
            "-p",
            "go",
            "--output-format",
            "json",
            "--mcp-config",
            &config.to_string(),
            "--permission-prompt-tool",
            "mcp__perm__approve",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let result: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let denials = result["permission_denials"].as_array().unwrap();
    assert_eq!(denials.len(), 1, "{result}");
    assert_eq!(denials[0]["tool_input"]["command"], "touch x");
    assert!(started(&env), "the --mcp-config server was asked");
    assert!(!env.path("x").exists());
}
