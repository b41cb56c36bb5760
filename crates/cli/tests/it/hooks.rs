//! Hooks from the config files, end to end through the real binary.

use gyre_mock::{MockServer, Script};
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn a_project_hook_blocks_a_command_and_the_model_sees_why() {
    let script = Script::linear(vec![
        vec![call("bash", json!({"command": "rm -rf build"}))],
        vec![gyre_mock::Item::Text("left it".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    std::fs::create_dir_all(env.path("build")).unwrap();
    write(
        &env.path(".gyre/config.toml"),
        "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\n\
         hooks = [{ type = \"command\", command = \"grep -q 'rm -rf' && { echo 'ask before deleting' >&2; exit 2; }; exit 0\", timeout = 5 }]\n",
    );
    let out = output(env.run_on(&server, "clean", &[])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    let result = tool_results(&lines).remove(0);
    assert_eq!(result["is_error"], true);
    assert_eq!(
        result["content"],
        "blocked by a PreToolUse hook: ask before deleting"
    );
    assert!(env.path("build").exists());
}

#[tokio::test]
async fn a_bad_hook_matcher_is_a_usage_error() {
    let env = Env::new();
    env.write_user_config(
        "[[hooks.PreToolUse]]\nmatcher = \"(\"\nhooks = [{ type = \"command\", command = \"true\" }]\n",
    );
    let server = MockServer::start(always("hi")).await.unwrap();
    let out = output(env.run_on(&server, "hello", &[])).await;
    assert_usage_error(&out, "hook matcher `(`");
}
