//! Stored sessions: one run at a time per session, checkpoints and rewind,
//! and replay.

use std::time::Duration;

use futures::StreamExt;
use gyre_core::sessions::{RewindScope, replay, rewind};
use gyre_core::{RunRequest, Session};
use gyre_mock::{Item, Reply, Script, Step, StreamReply, When};
use gyre_protocol::{Event, FinishReason, Role};
use gyre_store::SessionStore;
use serde_json::json;

use crate::harness::*;

fn on(last: &str, items: Vec<Item>, stall_ms: u64) -> Step {
    Step {
        when: When {
            last_message_contains: Some(last.into()),
            ..When::default()
        },
        times: None,
        reply: Reply::Stream(StreamReply {
            items,
            stall_before_headers_ms: stall_ms,
            ..StreamReply::default()
        }),
    }
}

/// Two runs on one session at once: the second waits for the first, then
/// goes on from the history the first left; everything ends up in order.
#[tokio::test]
async fn a_second_run_on_a_busy_session_waits_then_goes_on() {
    let script = Script::new(vec![
        on("first", vec![text("one")], 600),
        on("second", vec![text("two")], 0),
    ]);
    let h = Harness::new(Wire::Anthropic, script).await;
    let session = h.session("first").await;
    let id = session.id().to_string();
    let mut first = h.agent.run(session, "first".into());
    // The first run holds the session once it has started.
    while let Some(event) = first.events.next().await {
        if matches!(event, Event::TurnStarted { .. }) {
            break;
        }
    }
    let copy = Session::load(h.store.as_ref(), &id).await.unwrap();
    let second = h.continue_with(copy, RunRequest::prompt("second"));
    let drain_first = async {
        while first.events.next().await.is_some() {}
        first.finish().await.unwrap()
    };
    let (finished, _) = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::join!(second, drain_first)
    })
    .await
    .unwrap();
    assert_eq!(finished.summary.reason, FinishReason::Completed);
    assert!(
        finished
            .events
            .iter()
            .any(|e| matches!(e, Event::SessionBusy { pid, .. } if *pid == std::process::id())),
        "the second run said it waited"
    );
    let texts: Vec<String> = h
        .stored(&finished.session)
        .await
        .iter()
        .map(|m| m.text())
        .collect();
    assert_eq!(texts, ["first", "one", "second", "two"]);
    // The second request carried the first run's answer.
    let last = h.bodies().pop().unwrap().to_string();
    assert!(
        last.contains("\"one\"") && last.contains("\"first\""),
        "{last}"
    );
}

/// A copy of a session kept open (a server's, another host's) while another
/// run moved the stored session on: its next run goes on from the store,
/// not from the stale copy.
#[tokio::test]
async fn a_run_on_a_stale_copy_goes_on_from_the_stored_history() {
    let script = Script::new(vec![
        on("first", vec![text("one")], 0),
        on("second", vec![text("two")], 0),
    ]);
    let h = Harness::new(Wire::Anthropic, script).await;
    let session = h.session("first").await;
    let id = session.id().to_string();
    let stale = Session::load(h.store.as_ref(), &id).await.unwrap();
    let first = h.continue_with(session, RunRequest::prompt("first")).await;
    assert_eq!(first.summary.reason, FinishReason::Completed);

    let second = h.continue_with(stale, RunRequest::prompt("second")).await;
    assert_eq!(second.summary.reason, FinishReason::Completed);
    let texts: Vec<String> = h
        .stored(&second.session)
        .await
        .iter()
        .map(|m| m.text())
        .collect();
    assert_eq!(texts, ["first", "one", "second", "two"]);
    let last = h.bodies().pop().unwrap().to_string();
    assert!(last.contains("\"one\""), "{last}");
    assert_eq!(second.session.state.runs.len(), 2, "both runs recorded");

    // An untouched copy is not reloaded (its messages stay the same ones).
    let kept = second.session.history[0].clone();
    let third = h
        .continue_with(second.session, RunRequest::prompt("second again"))
        .await;
    assert_eq!(third.summary.reason, FinishReason::Completed);
    assert!(std::sync::Arc::ptr_eq(&kept, &third.session.history[0]));
}

/// Edits of two files and a `bash` that deletes a third, then a rewind to
/// the first message: all three are back exactly, and the conversation too.
#[tokio::test]
async fn rewinding_restores_edited_and_deleted_files() {
    let script = Script::linear(vec![
        vec![
            call("read", json!({"file_path": "a.txt"})),
            call("read", json!({"file_path": "b.txt"})),
        ],
        vec![call(
            "edit",
            json!({"file_path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"}),
        )],
        vec![call(
            "edit",
            json!({"file_path": "b.txt", "old_string": "beta", "new_string": "BETA"}),
        )],
        vec![call(
            "bash",
            json!({"command": "rm c.txt && echo made > d.txt"}),
        )],
        vec![text("done")],
    ]);
    let h = Harness::with_checkpoints(Wire::Anthropic, script).await;
    for (name, text) in [
        ("a.txt", "alpha\n"),
        ("b.txt", "beta\n"),
        ("c.txt", "gamma\n"),
    ] {
        std::fs::write(h.path(name), text).unwrap();
    }
    let finished = h.run("change things").await;
    assert_eq!(finished.summary.reason, FinishReason::Completed);
    assert_eq!(std::fs::read_to_string(h.path("a.txt")).unwrap(), "ALPHA\n");
    assert!(!h.path("c.txt").exists());
    let id = finished.session.id().to_string();
    let checkpoints = h.store.checkpoints(&id).await.unwrap();
    assert_eq!(checkpoints.len(), 3, "one before each mutating call");

    let stored = h.stored(&finished.session).await;
    let first = stored[0].id.clone();
    assert_eq!(stored[0].role, Role::User);
    let home = h._home.path().join("checkpoints");
    let checkpointer = gyre_core::checkpoint::Checkpointer::new(
        gyre_core::checkpoint::Checkpointer::dir_for(&home, h.workspace.path()),
        h.workspace.path(),
    );
    let rewound = rewind(
        h.store.as_ref(),
        &checkpointer,
        &id,
        &first,
        RewindScope::FilesAndConversation,
    )
    .await
    .unwrap();
    assert_eq!(std::fs::read_to_string(h.path("a.txt")).unwrap(), "alpha\n");
    assert_eq!(std::fs::read_to_string(h.path("b.txt")).unwrap(), "beta\n");
    assert_eq!(std::fs::read_to_string(h.path("c.txt")).unwrap(), "gamma\n");
    assert!(!h.path("d.txt").exists(), "a file made later is removed");
    assert_eq!(rewound.messages_removed as usize, stored.len() - 1);
    assert_eq!(h.stored(&finished.session).await.len(), 1);
    assert!(h.store.checkpoints(&id).await.unwrap().is_empty());
}

/// A rewind of the files only keeps the conversation; one of the
/// conversation only keeps the files.
#[tokio::test]
async fn rewinding_files_or_conversation_alone() {
    let script = Script::linear(vec![
        vec![call("bash", json!({"command": "echo two > a.txt"}))],
        vec![text("done")],
    ]);
    let h = Harness::with_checkpoints(Wire::Anthropic, script).await;
    std::fs::write(h.path("a.txt"), "one\n").unwrap();
    let finished = h.run("change a").await;
    let id = finished.session.id().to_string();
    let stored = h.stored(&finished.session).await;
    let home = h._home.path().join("checkpoints");
    let checkpointer = gyre_core::checkpoint::Checkpointer::new(
        gyre_core::checkpoint::Checkpointer::dir_for(&home, h.workspace.path()),
        h.workspace.path(),
    );
    rewind(
        h.store.as_ref(),
        &checkpointer,
        &id,
        &stored[0].id,
        RewindScope::ConversationOnly,
    )
    .await
    .unwrap();
    assert_eq!(std::fs::read_to_string(h.path("a.txt")).unwrap(), "two\n");
    assert_eq!(h.stored(&finished.session).await.len(), 1);
    // The checkpoints went with the messages: nothing left to restore.
    let again = rewind(
        h.store.as_ref(),
        &checkpointer,
        &id,
        &stored[0].id,
        RewindScope::FilesOnly,
    )
    .await
    .unwrap();
    assert_eq!(again.files, None);
    let err = rewind(
        h.store.as_ref(),
        &checkpointer,
        &id,
        "nope",
        RewindScope::FilesOnly,
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("no message nope"), "{err}");
}

/// What a frontend saw that is stored, replayed without a model.
fn stored_kinds(events: &[Event]) -> Vec<Event> {
    events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::RunStarted { .. }
                    | Event::MessageAppended { .. }
                    | Event::CompactBoundary { .. }
                    | Event::RunFinished(_)
            )
        })
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_replay_re_emits_every_run_as_it_happened() {
    let script = Script::new(vec![
        Step {
            when: When {
                last_message_contains: Some("list".into()),
                ..When::default()
            },
            times: Some(1),
            reply: Reply::Stream(StreamReply {
                items: vec![text("Listing."), call("ls", json!({}))],
                ..StreamReply::default()
            }),
        },
        on("again", vec![text("Still one file.")], 0),
        Step {
            when: When::default(),
            times: None,
            reply: Reply::Stream(StreamReply {
                items: vec![text("One file.")],
                ..StreamReply::default()
            }),
        },
    ]);
    let h = Harness::new(Wire::Anthropic, script).await;
    std::fs::write(h.path("a.txt"), "a").unwrap();
    let first = h.run("list the files").await;
    let second = h
        .continue_with(first.session, RunRequest::prompt("again"))
        .await;
    let mut live = stored_kinds(&first.events);
    live.extend(stored_kinds(&second.events));
    let replayed = replay(h.store.as_ref(), second.session.id()).await.unwrap();
    assert_eq!(replayed.len(), live.len());
    for (seen, again) in live.iter().zip(&replayed) {
        match (seen, again) {
            (Event::RunFinished(a), Event::RunFinished(b)) => {
                assert_eq!(a, b, "the same result, timings included (they are stored)");
            }
            _ => assert_eq!(seen, again),
        }
    }
}
