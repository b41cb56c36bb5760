//! `context::usage_now`: the gauge a frontend shows for a session before
//! its next request is what the loop then measures, from the provider's
//! count while it holds and from the history counted afresh for a session
//! just loaded; nothing without a known window.

use std::sync::Arc;
use std::time::Duration;

use gyre_core::context::usage_now;
use gyre_core::{LiveSession, RunRequest, Session, SessionStatus, Submitted, Update};
use gyre_mock::Script;
use gyre_protocol::Event;
use gyre_tools::Registry;

use crate::harness::*;

const WINDOW: u64 = 100_000;

/// What `usage_now` says, as (used, usable, window).
async fn shown(live: &LiveSession) -> (u64, u64, u64) {
    match usage_now(live).await {
        Some(Event::ContextUsage {
            used_tokens,
            usable_tokens,
            window,
        }) => (used_tokens, usable_tokens, window),
        other => panic!("not a gauge: {other:?}"),
    }
}

/// Sends a one-letter prompt; the loop's first measure of its run, once
/// the session is idle again.
async fn measured_next(live: &Arc<LiveSession>) -> (u64, u64, u64) {
    let mut reader = live.read_after(live.last_seq());
    let run = match live.submit(RunRequest::prompt("x")) {
        Submitted::Started { run } => run,
        other => panic!("not started: {other:?}"),
    };
    tokio::time::timeout(Duration::from_secs(30), async {
        let (mut measured, mut finished) = (None, false);
        loop {
            let numbered = reader.next().await.expect("the reader keeps up");
            match numbered.update.as_ref() {
                Update::Event { run: of, event } if *of == run => match event {
                    Event::ContextUsage {
                        used_tokens,
                        usable_tokens,
                        window,
                    } if measured.is_none() => {
                        measured = Some((*used_tokens, *usable_tokens, *window))
                    }
                    Event::RunFinished(_) => finished = true,
                    _ => {}
                },
                Update::Status(SessionStatus::Idle) if finished => {
                    return measured.expect("the loop measured");
                }
                _ => {}
            }
        }
    })
    .await
    .expect("the run ended within 30 s")
}

/// `shown`, then the loop's measure with one short prompt more.
async fn agrees(live: &Arc<LiveSession>) {
    let before = shown(live).await;
    let measured = measured_next(live).await;
    assert_eq!((measured.1, measured.2), (before.1, before.2));
    assert_eq!(before.2, WINDOW);
    assert!(
        measured.0 > before.0 && measured.0 <= before.0 + 64,
        "shown {before:?}, the loop measured {measured:?}"
    );
}

#[tokio::test]
async fn the_gauge_before_a_request_is_what_the_loop_measures() {
    let long = "The answer goes on and on. ".repeat(750);
    let script = Script::linear(vec![
        vec![text(&long)],
        vec![text("Done.")],
        vec![text("Done.")],
    ]);
    let h = Harness::with(Wire::Anthropic, script, Registry::builtin(), |c| {
        c.context.window = Some(WINDOW);
    })
    .await;
    let session = h.session("first").await;
    let id = session.id().to_string();
    let live = LiveSession::new(h.agent.clone(), session);
    // An empty session: the system prompt and the tools.
    agrees(&live).await;
    // After an answer: from the provider's count.
    agrees(&live).await;
    let (in_memory, ..) = shown(&live).await;
    assert!(in_memory > long.len() as u64 / 8, "{in_memory}");
    live.close().await;

    // Loaded again (a resume): counted afresh, with the calibrated ratio.
    let loaded = Session::load(h.store.as_ref(), &id).await.unwrap();
    let live = LiveSession::new(h.agent.clone(), loaded);
    let (afresh, ..) = shown(&live).await;
    assert!(afresh > long.len() as u64 / 8, "{afresh}");
    agrees(&live).await;
}

#[tokio::test]
async fn no_gauge_without_a_window() {
    let h = Harness::new(Wire::Anthropic, Script::linear(vec![])).await;
    let live = LiveSession::new(h.agent.clone(), h.session("first").await);
    assert_eq!(usage_now(&live).await, None);
}
