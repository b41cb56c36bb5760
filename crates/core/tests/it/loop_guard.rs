//! The loop guard against the scripted model: identical calls, cycles, and
//! legitimate work that must never trip it.

use std::time::Duration;

use futures::StreamExt;
use gyre_core::{Approvals, PermissionAnswer};
use gyre_mock::{Item, Script};
use gyre_protocol::{Event, FinishReason, RunErrorKind};
use serde_json::json;

use crate::harness::*;

fn read(path: &str) -> Item {
    call("read", json!({"file_path": path}))
}

/// `turns` answers from the items, then a text answer.
fn script(turns: Vec<Item>) -> Script {
    let mut answers: Vec<Vec<Item>> = turns.into_iter().map(|item| vec![item]).collect();
    answers.push(vec![text("finished")]);
    Script::linear(answers)
}

#[tokio::test]
async fn the_third_identical_call_is_refused_headless() {
    let h = Harness::new(
        Wire::Anthropic,
        script(vec![read("a.txt"), read("a.txt"), read("a.txt")]),
    )
    .await;
    std::fs::write(h.path("a.txt"), "alpha\n").unwrap();
    let run = h.run("read it").await;
    assert_eq!(run.summary.reason, FinishReason::Completed);
    let results = results(&run.events);
    assert!(!results[0].is_error && !results[1].is_error);
    assert!(results[2].is_error);
    let note = results[2].text_content();
    assert!(
        note.contains("loop guard") && note.contains("call 3 in a row of `read`"),
        "{note}"
    );
}

#[tokio::test]
async fn the_third_identical_call_is_asked_about_interactively() {
    let h = Harness::with(
        Wire::Anthropic,
        script(vec![read("a.txt"), read("a.txt"), read("a.txt")]),
        gyre_tools::Registry::builtin(),
        |c| c.approvals = Approvals::Interactive,
    )
    .await;
    std::fs::write(h.path("a.txt"), "alpha\n").unwrap();
    let session = h.session("read it").await;
    let mut run = h.agent.run(session, "read it".into());
    let mut asked = Vec::new();
    let mut events = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(event) = run.events.next().await {
            if let Event::PermissionRequested {
                request_id, reason, ..
            } = &event
            {
                asked.push(reason.clone());
                assert!(
                    run.handle
                        .answer_permission(request_id, PermissionAnswer::Allow)
                );
            }
            events.push(event);
        }
    })
    .await
    .expect("the run ends");
    assert_eq!(
        asked.len(),
        1,
        "only the third call is asked about: {asked:?}"
    );
    assert!(
        asked[0].contains("same input 3 times in a row"),
        "{}",
        asked[0]
    );
    assert!(
        results(&events).iter().all(|r| !r.is_error),
        "allowed, it ran"
    );
}

#[tokio::test]
async fn a_repeating_cycle_is_nudged_then_stopped() {
    let cycle: Vec<Item> = (0..12)
        .map(|i| {
            if i % 2 == 0 {
                read("a.txt")
            } else {
                call("grep", json!({"pattern": "alpha"}))
            }
        })
        .collect();
    let h = Harness::new(Wire::Anthropic, script(cycle)).await;
    std::fs::write(h.path("a.txt"), "alpha\n").unwrap();
    let run = h.run("loop").await;
    assert_eq!(
        run.summary.reason,
        FinishReason::LoopGuard,
        "{:?}",
        run.summary
    );
    let error = run.summary.error.as_ref().unwrap();
    assert_eq!(error.kind, RunErrorKind::Limit);
    assert!(
        error.message.contains("sequence of 2 tool calls"),
        "{}",
        error.message
    );
    // Nudged once, after the sixth call; stopped at the twelfth.
    let bodies: Vec<String> = h.bodies().iter().map(|b| b.to_string()).collect();
    assert_eq!(bodies.len(), 12);
    let nudged: Vec<usize> = bodies
        .iter()
        .enumerate()
        .filter(|(_, b)| b.contains("the same sequence of tool calls"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        nudged.first(),
        Some(&6),
        "the request after the sixth call carries the nudge"
    );
    let last = (*results(&run.events).last().unwrap()).clone();
    assert!(last.is_error && last.text_content().contains("the run stops"));
}

#[tokio::test]
async fn reading_many_files_in_turn_never_trips_it() {
    let reads: Vec<Item> = (0..15).map(|i| read(&format!("f{i}.txt"))).collect();
    let h = Harness::new(Wire::OpenAi, script(reads)).await;
    for i in 0..15 {
        std::fs::write(h.path(&format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    let run = h.run("read them all").await;
    assert_eq!(run.summary.reason, FinishReason::Completed);
    assert_eq!(run.summary.num_turns, 16);
    assert!(results(&run.events).iter().all(|r| !r.is_error));
    assert!(
        !h.bodies()
            .iter()
            .any(|b| b.to_string().contains("same sequence"))
    );
}

#[tokio::test]
async fn insisting_on_the_same_call_stops_the_run() {
    let h = Harness::new(Wire::Anthropic, script(vec![read("a.txt"); 8])).await;
    std::fs::write(h.path("a.txt"), "alpha\n").unwrap();
    let run = h.run("insist").await;
    assert_eq!(run.summary.reason, FinishReason::LoopGuard);
    assert_eq!(h.bodies().len(), 6, "stopped at the sixth identical call");
    let refused = results(&run.events).iter().filter(|r| r.is_error).count();
    assert_eq!(refused, 4, "calls 3 to 6 were not run");
}
