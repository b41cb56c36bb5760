//! `--dual-model`: two drafts per turn, merged by a synthesis request.

use gyre_mock::{Reply, Script, Step, StreamReply, When};
use gyre_protocol::FinishReason;
use serde_json::json;

use crate::harness::*;

fn when_body(needle: &str, items: Vec<gyre_mock::Item>) -> Step {
    Step {
        when: When {
            body_contains: Some(needle.into()),
            ..When::default()
        },
        times: None,
        reply: Reply::Stream(StreamReply {
            items,
            ..StreamReply::default()
        }),
    }
}

#[tokio::test]
async fn each_turn_is_drafted_twice_and_synthesised() {
    let script = Script::new(vec![
        // The synthesis of turn 0 reads a file; that of turn 1 ends.
        when_body("Drafts of your next answer", vec![text("merged")]),
        when_body(
            "\"model\":\"second-model\"",
            vec![text("draft B: read notes.txt")],
        ),
        Step::on_turn(
            0,
            vec![
                text("draft A"),
                call("read", json!({"file_path": "notes.txt"})),
            ],
        ),
        Step::on_turn(1, vec![text("draft A again")]),
    ]);
    let h = Harness::with(
        Wire::Anthropic,
        script,
        gyre_tools::Registry::builtin(),
        |config| {
            config.dual_model = Some("second-model".into());
        },
    )
    .await;
    std::fs::write(h.path("notes.txt"), "n\n").unwrap();
    let run = h.run("read the notes").await;
    assert_eq!(
        run.summary.reason,
        FinishReason::Completed,
        "{:?}",
        run.summary
    );
    assert_eq!(run.summary.final_text, "merged");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3, "two drafts and a synthesis, one turn");
    let synthesis = bodies[2].to_string();
    assert!(synthesis.contains("draft B: read notes.txt"), "{synthesis}");
    assert!(
        synthesis.contains("draft A") && synthesis.contains("[would call `read`"),
        "{synthesis}"
    );
    assert!(synthesis.contains("\"model\":\"mock-model\""));
    // Nothing of the drafts is stored, and their tool calls never ran.
    let stored = h.stored(&run.session).await;
    assert_eq!(stored.len(), 2, "the prompt and the synthesis");
    assert!(stored.iter().all(|m| !m.text().contains("draft")));
    assert!(results(&run.events).is_empty());
    // The drafts' usage counts.
    assert!(run.summary.usage.output_tokens > 0);
}
