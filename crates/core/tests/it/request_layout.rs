//! The model-visible request, snapshotted so prompt changes show in review.

use gyre_core::SubagentLimits;
use gyre_mock::Script;
use serde_json::json;

use crate::harness::*;

#[tokio::test]
async fn request_layout_after_a_tool_round() {
    for wire in WIRES {
        let script = Script::linear(vec![
            vec![
                text("Looking."),
                call("read", json!({"file_path": "a.txt"})),
            ],
            vec![text("Done.")],
        ]);
        let h = Harness::new(wire, script).await;
        std::fs::write(h.path("a.txt"), "alpha\n").unwrap();
        h.run("read a.txt").await;
        let second = h.bodies().remove(1);
        let name = match wire {
            Wire::Anthropic => "anthropic_second_request",
            Wire::OpenAi => "openai_second_request",
            Wire::OpenAiResponses => "openai_responses_second_request",
            Wire::Gemini => "gemini_second_request",
        };
        insta::with_settings!({filters => vec![
            (r"/tmp/[.A-Za-z0-9_/-]+", "[TMP]"),
            (r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", "[SESSION]"),
        ]}, {
            insta::assert_json_snapshot!(name, second);
        });
    }
}

/// The field of a request body that holds the conversation, per wire API.
fn history_field(body: &serde_json::Value) -> &'static str {
    ["messages", "contents", "input"]
        .into_iter()
        .find(|f| body.get(*f).is_some_and(|v| v.is_array()))
        .expect("a request body with a history")
}

#[tokio::test]
async fn each_request_is_the_previous_one_plus_appended_messages() {
    for wire in WIRES {
        let script = Script::linear(vec![
            vec![
                text("Looking."),
                call("read", json!({"file_path": "a.txt"})),
            ],
            vec![call("ls", json!({})), call("glob", json!({"pattern": "*"}))],
            vec![call("read", json!({"file_path": "a.txt"}))],
            vec![text("Done.")],
        ]);
        let h = Harness::new(wire, script).await;
        std::fs::write(h.path("a.txt"), "alpha\n").unwrap();
        h.run("look around").await;
        let bodies: Vec<_> = h
            .bodies()
            .iter()
            .map(gyre_mock::without_cache_control)
            .collect();
        assert_eq!(bodies.len(), 4, "{wire:?}");
        for pair in bodies.windows(2) {
            let (before, after) = (&pair[0], &pair[1]);
            let field = history_field(before);
            let mut rest_before = before.clone();
            let mut rest_after = after.clone();
            let old = rest_before[field].take();
            let new = rest_after[field].take();
            assert_eq!(
                rest_before, rest_after,
                "{wire:?}: everything but the history is identical"
            );
            let (old, new) = (old.as_array().unwrap(), new.as_array().unwrap());
            assert!(new.len() > old.len(), "{wire:?}: the history grew");
            assert_eq!(
                serde_json::to_string(old).unwrap(),
                serde_json::to_string(&new[..old.len()]).unwrap(),
                "{wire:?}: the old history is a byte-identical prefix"
            );
        }
    }
}

/// The first request of the built-in `build` and `plan` agents, and of an
/// `explore` subagent: system prompt layers and tool lists.
#[tokio::test]
async fn request_layout_of_the_agents() {
    let filters = vec![
        (r"/tmp/[.A-Za-z0-9_/-]+", "[TMP]"),
        (r"Today's date: \d{4}-\d{2}-\d{2}", "Today's date: [DATE]"),
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}",
            "[SESSION]",
        ),
    ];
    for agent in ["build", "plan"] {
        let script = Script::linear(vec![vec![text("ok")]]);
        let h = Harness::with_agents(
            Wire::Anthropic,
            script,
            agent,
            vec![],
            SubagentLimits::default(),
            |_| {},
        )
        .await;
        h.run("look around").await;
        let first = h.bodies().remove(0);
        insta::with_settings!({filters => filters.clone()}, {
            insta::assert_json_snapshot!(format!("agent_{agent}_first_request"), first);
        });
    }

    let marker = "You explore a codebase quickly";
    let script = Script::new(vec![
        crate::subagents::on(marker, 0, vec![text("found it")]),
        gyre_mock::Step::on_turn(
            0,
            vec![call(
                "task",
                json!({"description": "find the parser", "prompt": "Where is the parser?", "agent": "explore"}),
            )],
        ),
        gyre_mock::Step::on_turn(1, vec![text("done")]),
    ]);
    let h = Harness::with_agents(
        Wire::Anthropic,
        script,
        "build",
        vec![],
        SubagentLimits::default(),
        |_| {},
    )
    .await;
    h.run("delegate").await;
    let child = h
        .bodies()
        .into_iter()
        .find(|b| b.to_string().contains(marker))
        .expect("the subagent's request");
    insta::with_settings!({filters => filters}, {
        insta::assert_json_snapshot!("agent_explore_subagent_first_request", child);
    });
}
