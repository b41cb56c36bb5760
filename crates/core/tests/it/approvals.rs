//! Interactive runs ask before a call that needs approval, and wait for the
//! answer through the run handle.

use std::time::Duration;

use futures::StreamExt;
use gyre_core::{Approvals, PermissionAnswer, PermissionMode};
use gyre_mock::Script;
use gyre_protocol::{Event, FinishReason};
use serde_json::json;

use crate::harness::*;

async fn answer_with(answer: PermissionAnswer) -> (Vec<Event>, Harness) {
    let script = Script::linear(vec![
        vec![call(
            "write",
            json!({"file_path": "approved.txt", "content": "yes"}),
        )],
        vec![text("Finished.")],
    ]);
    let h = Harness::with(
        Wire::Anthropic,
        script,
        gyre_tools::Registry::builtin(),
        |c| {
            c.permissions.mode = PermissionMode::Default;
            c.approvals = Approvals::Interactive;
        },
    )
    .await;
    let session = h.session("write it").await;
    let mut run = h.agent.run(session, "write it".into());
    let mut events = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(event) = run.events.next().await {
            if let Event::PermissionRequested {
                request_id, call, ..
            } = &event
            {
                assert_eq!(call.name, "write");
                assert!(
                    !h.path("approved.txt").exists(),
                    "nothing runs before the answer"
                );
                assert!(run.handle.answer_permission(request_id, answer));
                assert!(
                    !run.handle.answer_permission(request_id, answer),
                    "answered once"
                );
            }
            events.push(event);
        }
    })
    .await
    .expect("the run did not finish");
    (events, h)
}

#[tokio::test]
async fn an_allowed_call_runs_after_the_answer() {
    let (events, h) = answer_with(PermissionAnswer::Allow).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::PermissionRequested { .. }))
    );
    assert_eq!(
        std::fs::read_to_string(h.path("approved.txt")).unwrap(),
        "yes"
    );
    assert!(!results(&events)[0].is_error);
}

#[tokio::test]
async fn a_declined_call_is_refused_and_the_model_is_told() {
    let (events, h) = answer_with(PermissionAnswer::Deny).await;
    assert!(!h.path("approved.txt").exists());
    let result = results(&events)[0];
    assert!(result.is_error);
    assert!(result.text_content().contains("declined"), "{result:?}");
    match events.last() {
        Some(Event::RunFinished(summary)) => assert_eq!(summary.reason, FinishReason::Completed),
        other => panic!("{other:?}"),
    }
}
