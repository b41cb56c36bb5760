//! A live session: prompts queue behind a busy run and run in order; every
//! reader sees one numbered stream with the session's status in it.

use std::sync::Arc;
use std::time::Duration;

use gyre_core::{
    Abort, Approvals, LiveSession, Numbered, PermissionAnswer, PermissionMode, RunRequest,
    SessionStatus, Submitted, Update,
};
use gyre_mock::Script;
use gyre_protocol::{Event, FinishReason, Role};
use gyre_store::SessionStore;
use serde_json::json;

use crate::harness::*;

/// Reads every update until run `run` finishes and the session is idle.
async fn read_until_idle(live: &Arc<LiveSession>, after: u64, run: u64) -> Vec<Numbered> {
    let mut reader = live.read_after(after);
    let mut seen = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        let mut finished = false;
        loop {
            let numbered = reader.next().await.expect("the reader keeps up");
            let done = matches!(
                numbered.update.as_ref(),
                Update::Status(SessionStatus::Idle)
            );
            if let Update::Event {
                run: of,
                event: Event::RunFinished(_),
            } = numbered.update.as_ref()
            {
                finished |= *of == run;
            }
            seen.push(numbered);
            if done && finished {
                return;
            }
        }
    })
    .await
    .expect("the runs ended within 30 s");
    seen
}

fn runs_of(updates: &[Numbered]) -> Vec<u64> {
    let mut runs: Vec<u64> = updates
        .iter()
        .filter_map(|n| match n.update.as_ref() {
            Update::Event { run, .. } => Some(*run),
            Update::Status(_) => None,
        })
        .collect();
    runs.dedup();
    runs
}

#[tokio::test]
async fn a_prompt_sent_while_busy_waits_and_runs_next_in_order() {
    let script = Script::linear(vec![
        vec![call("bash", json!({"command": "sleep 0.3; echo first"}))],
        vec![text("First done.")],
        vec![text("Second done.")],
    ]);
    let h = Harness::new(Wire::Anthropic, script).await;
    let live = LiveSession::new(h.agent.clone(), h.session("first").await);
    assert_eq!(live.status(), SessionStatus::Idle);

    let first = live.submit(RunRequest::prompt("first"));
    assert_eq!(first, Submitted::Started { run: 1 });
    assert_eq!(live.status(), SessionStatus::Busy, "busy at once");
    let second = live.submit(RunRequest::prompt("second"));
    assert_eq!(second, Submitted::Queued { run: 2, ahead: 1 });
    assert_eq!(live.queued(), vec!["second".to_string()]);

    let updates = read_until_idle(&live, 0, 2).await;
    let seqs: Vec<u64> = updates.iter().map(|n| n.seq).collect();
    assert_eq!(
        seqs,
        (1..=updates.len() as u64).collect::<Vec<_>>(),
        "no gaps"
    );
    assert_eq!(
        updates[0].update.as_ref(),
        &Update::Status(SessionStatus::Busy)
    );
    assert_eq!(
        runs_of(&updates),
        vec![1, 2],
        "run 2 starts after run 1 ends"
    );
    let finals: Vec<String> = updates
        .iter()
        .filter_map(|n| match n.update.as_ref() {
            Update::Event {
                event: Event::RunFinished(summary),
                ..
            } => Some(summary.final_text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(finals, ["First done.", "Second done."]);
    assert!(live.queued().is_empty());
    within(live.idle()).await;

    // Both prompts are in the one stored conversation, in order.
    let stored = h.store.load_messages(live.id()).await.unwrap();
    let prompts: Vec<String> = stored
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.text())
        .filter(|t| t == "first" || t == "second")
        .collect();
    assert_eq!(prompts, ["first", "second"]);

    // A late reader starting after any number sees the rest, in order.
    let mut late = live.read_after(3);
    assert_eq!(late.next().await.unwrap().seq, 4);
}

#[tokio::test]
async fn the_status_says_when_a_permission_is_waiting_and_answers_go_through() {
    let script = Script::linear(vec![
        vec![call(
            "write",
            json!({"file_path": "approved.txt", "content": "yes"}),
        )],
        vec![text("Written.")],
    ]);
    let h = Harness::with(Wire::OpenAi, script, gyre_tools::Registry::builtin(), |c| {
        c.permissions.mode = PermissionMode::Default;
        c.approvals = Approvals::Interactive;
    })
    .await;
    let live = LiveSession::new(h.agent.clone(), h.session("write it").await);
    let (submitted, mut reader) = live.submit_and_read(RunRequest::prompt("write it"));
    let mut statuses = Vec::new();
    let summary = tokio::time::timeout(
        Duration::from_secs(30),
        reader.until_finished(submitted.run(), |n| match n.update.as_ref() {
            Update::Status(status) => statuses.push(*status),
            Update::Event {
                event: Event::PermissionRequested { request_id, .. },
                ..
            } => {
                assert_eq!(live.status(), SessionStatus::WaitingForPermission);
                assert!(!live.answer_permission("no-such-request", PermissionAnswer::Allow));
                assert!(live.answer_permission(request_id, PermissionAnswer::Allow));
            }
            _ => {}
        }),
    )
    .await
    .expect("the run ended")
    .expect("the reader kept up");
    assert_eq!(summary.reason, FinishReason::Completed);
    assert_eq!(
        statuses,
        [
            SessionStatus::Busy,
            SessionStatus::WaitingForPermission,
            SessionStatus::Busy
        ]
    );
    assert_eq!(
        std::fs::read_to_string(h.path("approved.txt")).unwrap(),
        "yes"
    );
    live.idle().await;
    assert_eq!(live.status(), SessionStatus::Idle);
}

#[tokio::test]
async fn aborting_the_current_run_keeps_the_queue_and_aborting_everything_drops_it() {
    let script = Script::linear(vec![
        vec![call("bash", json!({"command": "sleep 30"}))],
        vec![text("After the interrupt.")],
        vec![call("bash", json!({"command": "sleep 30"}))],
    ]);
    let h = Harness::new(Wire::Anthropic, script).await;
    let live = LiveSession::new(h.agent.clone(), h.session("slow").await);
    let (first, mut reader) = live.submit_and_read(RunRequest::prompt("slow"));
    live.submit(RunRequest::prompt("next"));
    let started = std::time::Instant::now();
    let summary = tokio::time::timeout(
        Duration::from_secs(20),
        reader.until_finished(first.run(), |n| {
            if let Update::Event {
                event: Event::ToolCallReady { .. },
                ..
            } = n.update.as_ref()
            {
                assert!(live.abort(Abort::CurrentRun).is_empty());
            }
        }),
    )
    .await
    .expect("the interrupted run ended")
    .expect("kept up");
    assert_eq!(summary.reason, FinishReason::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(20));
    let summary = within(reader.until_finished(2, |_| {}))
        .await
        .expect("kept up");
    assert_eq!(summary.final_text, "After the interrupt.");

    // A third run is aborted with a fourth queued: both go.
    let (third, mut reader) = live.submit_and_read(RunRequest::prompt("slow again"));
    live.submit(RunRequest::prompt("never"));
    let summary = within(reader.until_finished(third.run(), |n| {
        if let Update::Event {
            event: Event::ToolCallReady { .. },
            ..
        } = n.update.as_ref()
        {
            assert_eq!(live.abort(Abort::Everything), ["never"]);
        }
    }))
    .await
    .expect("kept up");
    assert_eq!(summary.reason, FinishReason::Cancelled);
    tokio::time::timeout(Duration::from_secs(10), live.idle())
        .await
        .expect("idle after the abort");
    assert_eq!(h.server.requests().len(), 3, "the dropped prompt never ran");
}

#[tokio::test]
async fn a_closed_session_says_so_and_ends_a_late_prompt_at_once() {
    let h = Harness::new(Wire::Anthropic, Script::linear(vec![vec![text("Once.")]])).await;
    let live = LiveSession::new(h.agent.clone(), h.session("once").await);
    assert!(!live.is_closed());
    within(live.close()).await;
    assert!(live.is_closed());
    let (submitted, mut reader) = live.submit_and_read(RunRequest::prompt("too late"));
    let summary = within(reader.until_finished(submitted.run(), |_| {}))
        .await
        .expect("kept up");
    assert_eq!(summary.reason, FinishReason::Failed);
    assert!(summary.error.unwrap().message.contains("open it again"));
    assert!(
        h.server.requests().is_empty(),
        "a closed session runs nothing"
    );
}

#[tokio::test]
async fn an_abort_right_after_the_submit_cancels_the_run_as_it_starts() {
    let script = Script::linear(vec![vec![call("bash", json!({"command": "sleep 30"}))]]);
    let h = Harness::new(Wire::Anthropic, script).await;
    let live = LiveSession::new(h.agent.clone(), h.session("slow").await);
    let (first, mut reader) = live.submit_and_read(RunRequest::prompt("slow"));
    let (second, _) = live.submit_and_read(RunRequest::prompt("dropped"));
    // Before the spawned run has taken a step.
    assert_eq!(live.abort(Abort::Everything), ["dropped"]);
    // The dropped run ends at once, before the first one does.
    let mut ends = Vec::new();
    while ends.len() < 2 {
        let numbered = within(reader.next()).await.expect("kept up");
        if let Update::Event {
            run,
            event: Event::RunFinished(summary),
        } = numbered.update.as_ref()
        {
            ends.push((*run, summary.reason));
        }
    }
    ends.sort_by_key(|(run, _)| *run);
    let ends: Vec<FinishReason> = ends.into_iter().map(|(_, reason)| reason).collect();
    assert_eq!((first.run(), second.run()), (1, 2));
    assert_eq!(ends, [FinishReason::Cancelled, FinishReason::Cancelled]);
    within(live.idle()).await;
}

#[tokio::test]
async fn an_abort_right_after_the_previous_run_ended_stops_the_next_one() {
    let script = Script::linear(vec![
        vec![text("One.")],
        vec![call("bash", json!({"command": "sleep 30"}))],
    ]);
    let h = Harness::new(Wire::Anthropic, script).await;
    let live = LiveSession::new(h.agent.clone(), h.session("one").await);
    let (first, mut reader) = live.submit_and_read(RunRequest::prompt("one"));
    within(reader.until_finished(first.run(), |_| {}))
        .await
        .expect("kept up");
    // The first run may still be being put away: the abort is the next one's.
    let (second, mut reader) = live.submit_and_read(RunRequest::prompt("slow"));
    live.abort(Abort::CurrentRun);
    let summary = within(reader.until_finished(second.run(), |_| {}))
        .await
        .expect("kept up");
    assert_eq!(summary.reason, FinishReason::Cancelled);
}

/// `future`, bounded: a test never waits forever.
async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("done within 20 s")
}
