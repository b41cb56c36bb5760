//! Background subagents: the notification to an idle parent, `task_output`,
//! and cancellation reaching foreground and background children.

use std::time::{Duration, Instant};

use futures::StreamExt;
use gyre_core::RunRequest;
use gyre_core::agents::ToolSelection;
use gyre_mock::{Script, Step};
use gyre_protocol::{Event, FinishReason, Role};
use gyre_store::SessionStore;
use serde_json::json;

use crate::harness::*;
use crate::subagents::{KID, kid, on, slow, task, with_kids};

#[tokio::test]
async fn a_background_subagent_notifies_its_idle_parent() {
    let script = Script::new(vec![
        slow(on(KID, 0, vec![text("background result")]), 500),
        Step::on_turn(
            0,
            vec![task(
                json!({"description": "slow job", "prompt": "Work slowly.", "agent": "kid", "background": true}),
            )],
        ),
        Step::on_turn(1, vec![text("I will wait for it.")]),
        Step::on_turn(2, vec![text("Got the result.")]),
    ]);
    let kid = kid("kid", KID, ToolSelection::ReadOnly);
    let h = with_kids(script, vec![kid]).await;
    let run = h.run("start a background job").await;
    assert_eq!(
        run.summary.reason,
        FinishReason::Completed,
        "{:?}",
        run.summary
    );
    assert_eq!(run.summary.final_text, "Got the result.");

    // The call returned at once, with the id.
    let started = results(&run.events)[0].text_content();
    assert!(started.contains("in the background"), "{started}");
    let notified: Vec<_> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::TaskNotification {
                final_text,
                reason,
                task_id,
                ..
            } => Some((final_text, *reason, task_id)),
            _ => None,
        })
        .collect();
    assert_eq!(notified.len(), 1, "told once");
    assert_eq!(notified[0].0, "background result");
    assert_eq!(notified[0].1, FinishReason::Completed);
    assert!(started.contains(notified[0].2.as_str()));

    // The parent idled after its text answer and was woken by the end.
    let parent_bodies: Vec<String> = h
        .bodies()
        .iter()
        .map(|b| b.to_string())
        .filter(|b| !b.contains(KID))
        .collect();
    assert_eq!(parent_bodies.len(), 3);
    assert!(!parent_bodies[1].contains("<task-id>"));
    assert!(parent_bodies[2].contains("<task-id>"));
    assert!(parent_bodies[2].contains("background result"));
    let stored = h.stored(&run.session).await;
    let notice = stored.iter().rev().find(|m| m.role == Role::User).unwrap();
    assert!(
        notice.text().contains("<status>completed</status>"),
        "{}",
        notice.text()
    );
}

#[tokio::test]
async fn cancelling_the_parent_cancels_its_subagents() {
    const SLEEPER: &str = "SLEEPER-AGENT-PROMPT";
    for background in [false, true] {
        let script = Script::new(vec![
            on(
                SLEEPER,
                0,
                vec![call("bash", json!({"command": "sleep 30"}))],
            ),
            Step::on_turn(
                0,
                vec![task(
                    json!({"description": "sleep", "prompt": "Sleep.", "agent": "sleeper", "background": background}),
                )],
            ),
            Step::on_turn(1, vec![text("waiting")]),
        ]);
        let sleeper = kid("sleeper", SLEEPER, ToolSelection::All);
        let h = with_kids(script, vec![sleeper]).await;
        let session = h.session("sleep").await;
        let mut run = h.agent.start(session, RunRequest::prompt("sleep"));
        let started = Instant::now();
        let mut events = Vec::new();
        let collect = async {
            while let Some(event) = run.events.next().await {
                if let Event::Subagent { inner, .. } = &event
                    && matches!(inner.as_ref(), Event::ToolCallReady { call } if call.name == "bash")
                {
                    run.handle.cancel();
                }
                events.push(event);
            }
        };
        tokio::time::timeout(Duration::from_secs(20), collect)
            .await
            .expect("the run ends");
        let parent = run.finish().await.unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the sleep was not waited for"
        );
        let Some(Event::RunFinished(summary)) = events.last() else {
            panic!("no end");
        };
        assert_eq!(
            summary.reason,
            FinishReason::Cancelled,
            "background: {background}"
        );

        // The child stopped too, and its session says so.
        let child = h.store.list_children(parent.id()).await.unwrap().remove(0);
        let deadline = Instant::now() + Duration::from_secs(10);
        let reason = loop {
            let state = h.store.load_state(&child.id).await.unwrap();
            let reason = state.and_then(|s| {
                s["runs"][0]["summary"]["reason"]
                    .as_str()
                    .map(str::to_string)
            });
            match reason {
                Some(reason) => break reason,
                None if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await
                }
                None => panic!("the child's run never ended (background: {background})"),
            }
        };
        assert_eq!(reason, "cancelled", "background: {background}");
    }
}

#[tokio::test]
async fn task_output_waits_for_a_background_task_and_reads_it() {
    let script = Script::new(vec![
        slow(on(KID, 0, vec![text("late result")]), 300),
        Step::on_turn(
            0,
            vec![task(
                json!({"description": "slow", "prompt": "Work.", "agent": "kid", "background": true}),
            )],
        ),
        Step::on_turn(
            1,
            vec![call(
                "task_output",
                json!({"task_id": "$after:Started task ", "block": true}),
            )],
        ),
        Step::on_turn(2, vec![text("read it")]),
    ]);
    let kid = kid("kid", KID, ToolSelection::ReadOnly);
    let h = with_kids(script, vec![kid]).await;
    let run = h.run("start and wait").await;
    assert_eq!(run.summary.final_text, "read it");
    let output = results(&run.events)[1].text_content();
    assert!(
        output.contains("completed") && output.contains("late result"),
        "{output}"
    );
    // Read through task_output, so not notified again.
    assert!(
        !run.events
            .iter()
            .any(|e| matches!(e, Event::TaskNotification { .. }))
    );
    assert_eq!(
        h.bodies()
            .iter()
            .filter(|b| !b.to_string().contains(KID))
            .count(),
        3
    );
}
