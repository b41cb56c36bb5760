//! Bad input becomes an error result the model sees, and the run goes on.

use gyre_mock::{Item, Script};
use gyre_protocol::FinishReason;
use serde_json::{Value, json};

use crate::harness::*;

/// Runs one bad call then a closing turn, over each wire API; returns the
/// error text the model saw (checked to be the same on both wires).
async fn error_seen_by_model(bad_call: Item) -> String {
    let mut seen = Vec::new();
    for wire in WIRES {
        let script = Script::linear(vec![vec![bad_call.clone()], vec![text("I see the error.")]]);
        let h = Harness::new(wire, script).await;
        let done = h.run("try it").await;

        assert_eq!(
            done.summary.reason,
            FinishReason::Completed,
            "{wire:?}: {:?}",
            done.summary
        );
        assert_eq!(
            done.summary.num_turns, 2,
            "{wire:?}: the run went on after the error"
        );
        let results = results(&done.events);
        assert_eq!(results.len(), 1, "{wire:?}");
        assert!(results[0].is_error, "{wire:?}: {:?}", results[0]);
        // The model was told, paired with the call, flagged as an error on
        // the wire when the API has such a flag.
        let carried = tool_results_in(&h.bodies()[1]);
        assert_eq!(carried.len(), 1, "{wire:?}");
        assert_eq!(carried[0].1, results[0].text_content(), "{wire:?}");
        if wire == Wire::Anthropic {
            assert!(carried[0].2, "is_error on the wire");
        }
        let root = h
            .workspace
            .path()
            .canonicalize()
            .unwrap()
            .display()
            .to_string();
        seen.push(results[0].text_content().replace(&root, "WORKSPACE"));
    }
    assert_eq!(seen[0], seen[1]);
    seen.remove(0)
}

#[tokio::test]
async fn arguments_that_are_not_json() {
    let err = error_seen_by_model(call(
        "read",
        Value::String(r#"{"file_path": "a.txt"#.into()),
    ))
    .await;
    assert!(err.contains("not valid JSON"), "{err}");
}

#[tokio::test]
async fn arguments_missing_a_required_field() {
    let err = error_seen_by_model(call("read", json!({"offset": 2}))).await;
    assert!(err.contains("file_path"), "{err}");
}

#[tokio::test]
async fn an_unknown_tool() {
    let err = error_seen_by_model(call("teleport", json!({"to": "mars"}))).await;
    assert!(err.contains("unknown tool `teleport`"), "{err}");
    assert!(err.contains("read"), "lists the available tools: {err}");
}

#[tokio::test]
async fn a_path_outside_the_workspace() {
    let err = error_seen_by_model(call("read", json!({"file_path": "/etc/passwd"}))).await;
    assert!(err.contains("outside the workspace"), "{err}");
    let err = error_seen_by_model(call(
        "write",
        json!({"file_path": "../escape.txt", "content": "x"}),
    ))
    .await;
    assert!(err.contains("outside the workspace"), "{err}");
}

#[tokio::test]
async fn a_command_that_exceeds_its_timeout() {
    let started = std::time::Instant::now();
    let err = error_seen_by_model(call(
        "bash",
        json!({"command": "sleep 20", "timeout_ms": 300}),
    ))
    .await;
    assert!(err.to_lowercase().contains("timed out"), "{err}");
    assert!(
        started.elapsed().as_secs() < 15,
        "the command was not cut at its timeout"
    );
}

#[tokio::test]
async fn a_denied_permission_in_a_headless_run() {
    for wire in WIRES {
        let script = Script::linear(vec![
            vec![call("bash", json!({"command": "touch should-not-exist"}))],
            vec![text("Understood.")],
        ]);
        let h = Harness::with(wire, script, gyre_tools::Registry::builtin(), |c| {
            c.permissions.mode = gyre_core::PermissionMode::Default;
        })
        .await;
        let done = h.run("touch a file").await;
        assert_eq!(done.summary.reason, FinishReason::Completed);
        let result = results(&done.events)[0].clone();
        assert!(result.is_error);
        assert!(
            result.text_content().contains("permission denied"),
            "{result:?}"
        );
        assert!(
            result
                .text_content()
                .contains("--allowed-tools 'bash(touch:*)'"),
            "{result:?}"
        );
        assert!(!h.path("should-not-exist").exists());
    }
}

#[tokio::test]
async fn results_go_back_in_call_order_when_the_first_call_is_broken_json() {
    for wire in WIRES {
        let calls = vec![
            Item::ToolCall {
                id: Some("c0".into()),
                name: "read".into(),
                arguments: Value::String(r#"{"file_path": "a.txt"#.into()),
                fragments: None,
            },
            Item::ToolCall {
                id: Some("c1".into()),
                name: "ls".into(),
                arguments: json!({}),
                fragments: None,
            },
            Item::ToolCall {
                id: Some("c2".into()),
                name: "ls".into(),
                arguments: json!({}),
                fragments: None,
            },
        ];
        let script = Script::linear(vec![calls, vec![text("done")]]);
        let h = Harness::new(wire, script).await;
        let done = h.run("try it").await;
        assert_eq!(done.summary.reason, FinishReason::Completed, "{wire:?}");
        let carried: Vec<String> = tool_results_in(&h.bodies()[1])
            .into_iter()
            .map(|r| r.0)
            .collect();
        assert_eq!(carried.len(), 3, "{wire:?}");
        if wire != Wire::Gemini {
            assert_eq!(carried, ["c0", "c1", "c2"], "{wire:?}");
        }
        let results = results(&done.events);
        assert!(results[0].is_error, "{wire:?}: {:?}", results[0]);
        assert!(!results[1].is_error && !results[2].is_error, "{wire:?}");
    }
}
