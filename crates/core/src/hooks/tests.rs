//! Hooks as real shell commands.

use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;

fn hooks(toml: &str, cwd: &Path) -> Hooks {
    #[derive(serde::Deserialize)]
    struct Wrapper {
        hooks: HooksConfig,
    }
    let parsed: Wrapper = toml::from_str(toml).unwrap();
    Hooks::new(&parsed.hooks, cwd).unwrap()
}

#[tokio::test]
async fn exit_2_blocks_with_stderr_and_json_decides() {
    let dir = tempfile::tempdir().unwrap();
    let h = hooks(
        r#"
[[hooks.PreToolUse]]
matcher = "Bash"
hooks = [{ type = "command", command = "grep -q 'rm -rf' && { echo 'no rm -rf here' >&2; exit 2; } || exit 0" }]
[[hooks.PreToolUse]]
matcher = "edit|write"
hooks = [{ type = "command", command = "echo '{\"hookSpecificOutput\":{\"permissionDecision\":\"ask\",\"permissionDecisionReason\":\"edits are reviewed\"}}'" }]
[[hooks.PreToolUse]]
matcher = "read"
hooks = [{ type = "command", command = "echo '{\"hookSpecificOutput\":{\"permissionDecision\":\"allow\",\"updatedInput\":{\"file_path\":\"b.txt\"}}}'" }]
"#,
        dir.path(),
    );
    let cancel = CancellationToken::new();
    let rm = h
        .pre_tool_use("s", "bash", &json!({"command": "rm -rf /"}), &cancel)
        .await;
    assert_eq!(rm, PreToolUse::Deny("no rm -rf here".into()));
    let ls = h
        .pre_tool_use("s", "bash", &json!({"command": "ls"}), &cancel)
        .await;
    assert_eq!(ls, PreToolUse::Continue);
    let edit = h.pre_tool_use("s", "edit", &json!({}), &cancel).await;
    assert_eq!(edit, PreToolUse::Ask("edits are reviewed".into()));
    let read = h
        .pre_tool_use("s", "read", &json!({"file_path": "a.txt"}), &cancel)
        .await;
    assert_eq!(
        read,
        PreToolUse::Allow {
            updated_input: Some(json!({"file_path": "b.txt"}))
        }
    );
    assert!(!h.has(HookEvent::PreToolUse, Some("grep")));
}

#[tokio::test]
async fn the_input_reaches_the_hook_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let h = hooks(
        r#"
[[hooks.PostToolUse]]
hooks = [{ type = "command", command = "cat > seen.json; echo '{\"decision\":\"block\",\"reason\":\"lint failed\"}'" }]
"#,
        dir.path(),
    );
    let said = h
        .post_tool_use(
            "s1",
            "edit",
            &json!({"file_path": "a.rs"}),
            "edited",
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(said.as_deref(), Some("lint failed"));
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("seen.json")).unwrap())
            .unwrap();
    assert_eq!(seen["hook_event_name"], "PostToolUse");
    assert_eq!(seen["session_id"], "s1");
    assert_eq!(seen["tool_name"], "edit");
    assert_eq!(seen["tool_input"]["file_path"], "a.rs");
    assert_eq!(seen["tool_response"], "edited");
}

#[tokio::test]
async fn a_hanging_hook_times_out_and_a_failing_one_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let h = hooks(
        r#"
[[hooks.Stop]]
hooks = [
  { type = "command", command = "sleep 30", timeout = 1 },
  { type = "command", command = "exit 7" },
]
"#,
        dir.path(),
    );
    let started = Instant::now();
    let said = h
        .stop(HookEvent::Stop, "s", false, &CancellationToken::new())
        .await;
    assert_eq!(said, Said::default());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn prompt_hooks_add_context_or_block() {
    let dir = tempfile::tempdir().unwrap();
    let h = hooks(
        r#"
[[hooks.UserPromptSubmit]]
hooks = [{ type = "command", command = "grep -q secret && { echo 'no secrets in prompts' >&2; exit 2; }; echo 'branch: main'" }]
"#,
        dir.path(),
    );
    let cancel = CancellationToken::new();
    let fine = h.user_prompt_submit("s", "fix the bug", &cancel).await;
    assert_eq!(fine.block, None);
    assert_eq!(fine.context.as_deref(), Some("branch: main"));
    let blocked = h.user_prompt_submit("s", "print the secret", &cancel).await;
    assert_eq!(blocked.block.as_deref(), Some("no secrets in prompts"));
}

#[test]
fn a_bad_matcher_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = HooksConfig::new();
    config.insert(
        HookEvent::PreToolUse,
        vec![HookMatcher {
            matcher: Some("(".into()),
            hooks: Vec::new(),
        }],
    );
    let err = Hooks::new(&config, dir.path()).unwrap_err();
    assert!(err.contains("`(`") && err.contains("PreToolUse"), "{err}");
}
