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

/// Runs `prompt` in `session`, answering every permission request with
/// `answer`; the events and the session after the run.
async fn run_answering(
    h: &Harness,
    session: gyre_core::Session,
    prompt: &str,
    answer: PermissionAnswer,
) -> (Vec<Event>, gyre_core::Session) {
    let mut run = h.agent.run(session, prompt.into());
    let mut events = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(event) = run.events.next().await {
            if let Event::PermissionRequested { request_id, .. } = &event {
                assert!(run.handle.answer_permission(request_id, answer));
            }
            events.push(event);
        }
    })
    .await
    .expect("the run did not finish");
    (events, run.finish().await.unwrap())
}

fn requests(events: &[Event]) -> Vec<(String, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::PermissionRequested {
                call, always_rule, ..
            } => Some((call.arguments.clone(), always_rule.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn always_allow_adds_a_prefix_rule_for_the_rest_of_the_session() {
    let mkdir = |dir: &str| call("bash", json!({ "command": format!("mkdir -p {dir}") }));
    let script = Script::linear(vec![
        vec![mkdir("a")],
        vec![mkdir("b")],
        vec![call("bash", json!({"command": "touch b/t"}))],
        vec![text("Made them.")],
        vec![mkdir("c")],
        vec![text("Made another.")],
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
    let session = h.session("make dirs").await;
    let (events, session) =
        run_answering(&h, session, "make dirs", PermissionAnswer::AlwaysAllow).await;
    // One request for `mkdir` (the second `mkdir` ran without one), and one
    // for `touch`, a different command.
    let asked = requests(&events);
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].0.contains("mkdir -p a"), "{asked:?}");
    assert_eq!(asked[0].1.as_deref(), Some("bash(mkdir:*)"));
    assert_eq!(asked[1].1.as_deref(), Some("bash(touch:*)"));
    assert!(h.path("a").is_dir() && h.path("b").is_dir() && h.path("b/t").exists());
    let shown: Vec<String> = session
        .always_rules()
        .iter()
        .map(|r| r.to_string())
        .collect();
    assert_eq!(shown, ["bash(mkdir:*)", "bash(touch:*)"]);

    // The next run of the session remembers; a plain Allow adds nothing.
    let (events, session) = run_answering(&h, session, "one more", PermissionAnswer::Allow).await;
    assert!(requests(&events).is_empty(), "{:?}", requests(&events));
    assert!(h.path("c").is_dir());
    assert_eq!(session.always_rules().len(), 2);
}

#[tokio::test]
async fn a_plain_allow_remembers_nothing() {
    let write = |name: &str| call("write", json!({ "file_path": name, "content": "x" }));
    let script = Script::linear(vec![
        vec![write("one.txt")],
        vec![write("two.txt")],
        vec![text("Wrote.")],
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
    let session = h.session("write").await;
    let (events, session) = run_answering(&h, session, "write", PermissionAnswer::Allow).await;
    let asked = requests(&events);
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0].1.as_deref(), Some("edit(**)"));
    assert!(session.always_rules().is_empty());
    assert!(h.path("two.txt").exists());
}
