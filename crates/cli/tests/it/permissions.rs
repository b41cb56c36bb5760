//! Permission rules end to end: what a rule refuses never happens, and the
//! model is told which rule refused it and how to allow it.

use gyre_mock::{Item, MockServer, Script};
use serde_json::{Value, json};

use crate::common::*;

fn one_call_then_text(name: &str, arguments: Value) -> Script {
    Script::linear(vec![
        vec![call(name, arguments)],
        vec![Item::Text("Understood.".into())],
    ])
}

#[tokio::test]
async fn a_denied_edit_leaves_the_file_untouched_and_the_model_is_told_which_rule() {
    let script = one_call_then_text(
        "edit",
        json!({"file_path": "src/a.rs", "old_string": "old", "new_string": "new"}),
    );
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    write(&env.path("src/a.rs"), "fn old() {}\n");
    // Deny rules apply in every mode, bypassPermissions included.
    let out = output(env.run_on(&server, "edit it", &["--disallowed-tools", "edit(src/**)"])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let result = tool_results(&json_lines(&out)).remove(0);
    assert_eq!(result["is_error"], true, "{result}");
    let text = result_text(&result);
    assert!(text.contains("denied by the rule `edit(src/**)`"), "{text}");
    assert_eq!(
        std::fs::read_to_string(env.path("src/a.rs")).unwrap(),
        "fn old() {}\n"
    );
}

#[tokio::test]
async fn a_headless_ask_is_refused_with_the_rule_that_would_allow_it() {
    let script = one_call_then_text("bash", json!({"command": "rm x"}));
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    write(&env.path("x"), "keep\n");
    let out =
        output(env.gyre_on(&server, &["run", "clean", "--output-format", "stream-json"])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let result = tool_results(&json_lines(&out)).remove(0);
    assert_eq!(result["is_error"], true, "{result}");
    let text = result_text(&result);
    assert!(text.contains("headless"), "{text}");
    assert!(text.contains("--allowed-tools 'bash(rm:*)'"), "{text}");
    assert!(env.path("x").exists(), "the refused command did not run");
}

#[tokio::test]
async fn a_local_config_deny_rule_applies_through_wrappers() {
    let script = one_call_then_text("bash", json!({"command": "timeout 5 rm -f x"}));
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    write(&env.path("x"), "keep\n");
    write(
        &env.path(".gyre/config.toml"),
        "allowed_tools = [\"bash(timeout:*)\"]\n",
    );
    write(
        &env.path(".gyre/config.local.toml"),
        "disallowed_tools = [\"bash(rm:*)\"]\n",
    );
    let out = output(env.run_on(&server, "clean", &[])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let result = tool_results(&json_lines(&out)).remove(0);
    assert_eq!(result["is_error"], true, "{result}");
    let text = result_text(&result);
    assert!(text.contains("denied by the rule `bash(rm:*)`"), "{text}");
    assert!(env.path("x").exists(), "the denied command did not run");
}

#[tokio::test]
async fn a_bad_rule_is_a_usage_error_in_one_sentence() {
    let env = Env::new();
    let mut cmd = env.gyre(&["run", "x", "--disallowed-tools", "edit(src/[)"]);
    cmd.env("ANTHROPIC_API_KEY", "k");
    let out = output(cmd).await;
    assert_usage_error(&out, "invalid path glob");
}
