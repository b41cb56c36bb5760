//! Hooks in the loop: real shell commands configured on the agent, the
//! scripted model over real HTTP.

use std::sync::Arc;
use std::time::{Duration, Instant};

use gyre_core::hooks::{HookCommand, HookEvent, HookKind, HookMatcher, Hooks, HooksConfig};
use gyre_mock::Script;
use gyre_protocol::{FinishReason, RunErrorKind};
use serde_json::json;

use crate::harness::*;

fn hook(
    event: HookEvent,
    matcher: Option<&str>,
    command: &str,
    timeout: Option<u64>,
) -> HooksConfig {
    let mut config = HooksConfig::new();
    config.insert(
        event,
        vec![HookMatcher {
            matcher: matcher.map(str::to_string),
            hooks: vec![HookCommand {
                kind: HookKind::Command,
                command: command.into(),
                timeout,
            }],
        }],
    );
    config
}

/// A harness whose agent runs `config`'s hooks in a directory of their
/// own (returned, to read what they wrote).
async fn hooked(script: Script, config: HooksConfig) -> (Harness, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Arc::new(Hooks::new(&config, dir.path()).unwrap());
    let h = Harness::with(
        Wire::Anthropic,
        script,
        gyre_tools::Registry::builtin(),
        |c| c.hooks = Some(hooks),
    )
    .await;
    (h, dir)
}

#[tokio::test]
async fn a_pre_tool_use_hook_blocks_rm_rf() {
    let script = Script::linear(vec![
        vec![call("bash", json!({"command": "rm -rf precious"}))],
        vec![text("could not delete")],
    ]);
    let check = "grep -q 'rm -rf' && { echo 'rm -rf is not allowed here' >&2; exit 2; }; exit 0";
    let (h, _dir) = hooked(
        script,
        hook(HookEvent::PreToolUse, Some("Bash"), check, None),
    )
    .await;
    std::fs::create_dir(h.path("precious")).unwrap();
    let run = h.run("clean up").await;
    assert_eq!(run.summary.reason, FinishReason::Completed);
    let refused = results(&run.events)[0].clone();
    assert!(refused.is_error);
    assert_eq!(
        refused.text_content(),
        "blocked by a PreToolUse hook: rm -rf is not allowed here"
    );
    assert!(h.path("precious").exists(), "the command never ran");
}

#[tokio::test]
async fn a_post_tool_use_hooks_output_reaches_the_model() {
    let script = Script::linear(vec![
        vec![call(
            "write",
            json!({"file_path": "a.py", "content": "x=1\n"}),
        )],
        vec![text("done")],
    ]);
    let lint =
        r#"echo '{"decision":"block","reason":"lint: a.py line 1: missing spaces around ="}'"#;
    let (h, _dir) = hooked(
        script,
        hook(HookEvent::PostToolUse, Some("write|edit"), lint, None),
    )
    .await;
    let run = h.run("write a.py").await;
    assert_eq!(run.summary.reason, FinishReason::Completed);
    let second = h.bodies()[1].to_string();
    assert!(
        second.contains("A PostToolUse hook says: lint: a.py line 1"),
        "{second}"
    );
    assert_eq!(std::fs::read_to_string(h.path("a.py")).unwrap(), "x=1\n");
}

#[tokio::test]
async fn a_blocking_stop_hook_makes_the_run_continue() {
    let script = Script::linear(vec![vec![text("done?")], vec![text("now done")]]);
    // Blocks the first time only, and records what it was given.
    let gate = "cat >> stop-inputs.jsonl; echo >> stop-inputs.jsonl; \
        if [ -e once ]; then exit 0; fi; touch once; echo 'run the tests first' >&2; exit 2";
    let (h, dir) = hooked(script, hook(HookEvent::Stop, None, gate, None)).await;
    let run = h.run("finish").await;
    assert_eq!(run.summary.reason, FinishReason::Completed);
    assert_eq!(run.summary.final_text, "now done");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2);
    assert!(bodies[1].to_string().contains("run the tests first"));
    let inputs: Vec<serde_json::Value> =
        std::fs::read_to_string(dir.path().join("stop-inputs.jsonl"))
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    assert_eq!(inputs.len(), 2);
    assert_eq!(inputs[0]["stop_hook_active"], false);
    assert_eq!(inputs[1]["stop_hook_active"], true);
    assert_eq!(inputs[0]["hook_event_name"], "Stop");
}

#[tokio::test]
async fn a_stop_hook_that_always_blocks_is_bounded() {
    let (h, _dir) = hooked(
        Script::new(vec![crate::completion::always(vec![text("done")])]),
        hook(HookEvent::Stop, None, "echo 'never done' >&2; exit 2", None),
    )
    .await;
    let run = h.run("finish").await;
    assert_eq!(run.summary.reason, FinishReason::Completed);
    assert_eq!(
        h.bodies().len(),
        4,
        "three forced continuations, then the end"
    );
}

#[tokio::test]
async fn a_hanging_hook_times_out_and_the_run_goes_on() {
    let script = Script::linear(vec![
        vec![call("read", json!({"file_path": "a.txt"}))],
        vec![text("read it")],
    ]);
    let (h, _dir) = hooked(
        script,
        hook(HookEvent::PreToolUse, None, "sleep 30", Some(1)),
    )
    .await;
    std::fs::write(h.path("a.txt"), "alpha\n").unwrap();
    let started = Instant::now();
    let run = h.run("read").await;
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(run.summary.final_text, "read it");
    assert!(
        !results(&run.events)[0].is_error,
        "the call ran after the timeout"
    );
}

#[tokio::test]
async fn a_prompt_hook_adds_context_or_blocks() {
    let script = Script::linear(vec![vec![text("ok")]]);
    let check = "grep -q secret && { echo 'no secrets' >&2; exit 2; }; echo 'on branch main'";
    let (h, _dir) = hooked(script, hook(HookEvent::UserPromptSubmit, None, check, None)).await;
    let run = h.run("fix it").await;
    assert_eq!(run.summary.reason, FinishReason::Completed);
    assert!(h.bodies()[0].to_string().contains("on branch main"));
    let run = h.run("tell the secret").await;
    assert_eq!(run.summary.reason, FinishReason::Failed);
    let error = run.summary.error.unwrap();
    assert_eq!(error.kind, RunErrorKind::Hook);
    assert!(error.message.contains("no secrets"), "{}", error.message);
    assert_eq!(h.bodies().len(), 1, "a blocked prompt is never sent");
}

#[tokio::test]
async fn a_subagent_stop_hook_keeps_the_subagent_working() {
    use crate::subagents::{kid, on};
    use gyre_core::SubagentLimits;
    use gyre_core::agents::ToolSelection;
    use gyre_mock::Step;
    const KID: &str = "HOOKED-KID-PROMPT";
    let script = Script::new(vec![
        on(KID, 0, vec![text("kid done?")]),
        on(KID, 1, vec![text("kid really done")]),
        Step::on_turn(
            0,
            vec![call(
                "task",
                json!({"description": "work", "prompt": "Work.", "agent": "kid"}),
            )],
        ),
        Step::on_turn(1, vec![text("parent done")]),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let gate = "if [ -e once ]; then exit 0; fi; touch once; echo 'check your work' >&2; exit 2";
    let hooks =
        Arc::new(Hooks::new(&hook(HookEvent::SubagentStop, None, gate, None), dir.path()).unwrap());
    let h = Harness::with_agents(
        Wire::Anthropic,
        script,
        "build",
        vec![kid("kid", KID, ToolSelection::ReadOnly)],
        SubagentLimits::default(),
        |c| c.hooks = Some(hooks),
    )
    .await;
    let run = h.run("delegate").await;
    assert_eq!(run.summary.final_text, "parent done");
    let task = results(&run.events)[0].text_content();
    assert!(task.starts_with("kid really done"), "{task}");
    // The hook ran and blocked once; the subagent answered twice.
    assert!(dir.path().join("once").exists());
    let kid_bodies = h
        .bodies()
        .iter()
        .filter(|b| b.to_string().contains(KID))
        .count();
    assert_eq!(kid_bodies, 2);
}
