//! The model-visible request, snapshotted so prompt changes show in review.

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
        };
        insta::with_settings!({filters => vec![
            (r"/tmp/[.A-Za-z0-9_/-]+", "[TMP]"),
        ]}, {
            insta::assert_json_snapshot!(name, second);
        });
    }
}
