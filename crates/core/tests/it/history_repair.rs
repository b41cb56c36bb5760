//! Damaged histories (a result without a call, a duplicate call id, a
//! missing result in the middle) are repaired before every request: each
//! request sent is valid, the run completes, and what gyre made up is
//! stored.

use gyre_core::{RunRequest, Session};
use gyre_mock::{Reply, Script, Step, StreamReply, When};
use gyre_protocol::{FinishReason, Message, Outcome, Part, Role, ToolCall, ToolResult};
use gyre_store::SessionStore;
use serde_json::json;

use crate::harness::*;

fn answer(id: &str, calls: &[&str]) -> Message {
    let parts = calls
        .iter()
        .map(|c| Part::ToolCall(ToolCall::new(*c, "ls", "{}")))
        .collect();
    Message::new(id, Role::Assistant, parts)
}

fn results(id: &str, calls: &[&str]) -> Message {
    let parts = calls
        .iter()
        .map(|c| {
            Part::ToolResult(ToolResult::text(
                *c,
                "ls",
                format!("listing for {c}"),
                Outcome::Success,
            ))
        })
        .collect();
    Message::new(id, Role::User, parts)
}

/// Answers every request: a call first (so a repaired history is sent
/// twice), then text; then text again for a run after a reload.
fn script() -> Script {
    let once = |items| Step {
        when: When::default(),
        times: Some(1),
        reply: Reply::Stream(StreamReply {
            items,
            ..StreamReply::default()
        }),
    };
    Script::new(vec![
        once(vec![call("ls", json!({}))]),
        once(vec![text("repaired and done")]),
        once(vec![text("once more")]),
    ])
}

/// Stores `messages` in a new session, loads it, runs a prompt; checks that
/// every request was valid and the run completed; returns what is stored.
async fn run_on(wire: Wire, messages: Vec<Message>) -> (Harness, Vec<Message>, String) {
    let h = Harness::new(wire, script()).await;
    let session = h.session("damaged").await;
    let id = session.id().to_string();
    for message in &messages {
        h.store.append_message(&id, message).await.unwrap();
    }
    let session = Session::load(h.store.as_ref(), &id).await.unwrap();
    let done = h.continue_with(session, RunRequest::prompt("go")).await;
    assert_eq!(
        done.summary.reason,
        FinishReason::Completed,
        "{:?}",
        done.summary.error
    );
    assert_eq!(done.summary.final_text, "repaired and done");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2);
    for body in &bodies {
        assert_valid_pairing(wire, body);
    }
    // The second request extends the first: the repair is stable.
    let first = assert_valid_pairing(wire, &bodies[0]);
    let second = assert_valid_pairing(wire, &bodies[1]);
    assert_eq!(second[..first.len()], first[..]);
    let stored = h.stored(&done.session).await;
    (h, stored, id)
}

const WIRES_CHECKED: [Wire; 2] = [Wire::Anthropic, Wire::OpenAi];

#[tokio::test]
async fn a_result_without_a_call_is_left_out() {
    for wire in WIRES_CHECKED {
        let messages = vec![
            Message::user_text("m1", "list"),
            answer("m2", &["c1"]),
            results("m3", &["c1", "ghost"]),
            results("m4", &["c1"]),
        ];
        let (h, stored, _) = run_on(wire, messages).await;
        let sent: Vec<String> = tool_results_in(&h.bodies()[0])
            .into_iter()
            .map(|r| r.0)
            .collect();
        assert_eq!(sent, ["c1"], "{wire:?}");
        // The store keeps what happened.
        assert_eq!(stored[2].tool_results().count(), 2);
    }
}

#[tokio::test]
async fn a_duplicate_call_id_is_left_out() {
    for wire in WIRES_CHECKED {
        let messages = vec![
            Message::user_text("m1", "list"),
            answer("m2", &["c1", "c1"]),
            results("m3", &["c1", "c1"]),
            answer("m4", &["c2"]),
            results("m5", &["c2"]),
            // Used again in a later answer: that call and its result go.
            answer("m6", &["c1", "c3"]),
            results("m7", &["c1", "c3"]),
        ];
        let (h, _, _) = run_on(wire, messages).await;
        let body = &h.bodies()[0];
        let calls = tool_call_ids_in(body);
        assert_eq!(calls[..3], ["c1", "c2", "c3"], "{wire:?}");
        let sent: Vec<String> = tool_results_in(body).into_iter().map(|r| r.0).collect();
        assert_eq!(sent[..3], ["c1", "c2", "c3"], "{wire:?}");
    }
}

#[tokio::test]
async fn a_missing_result_in_the_middle_is_made_up_and_stored() {
    for wire in WIRES_CHECKED {
        let messages = vec![
            Message::user_text("m1", "list"),
            answer("m2", &["c1", "c2", "c3"]),
            // c2 is missing, and the results are out of order.
            results("m3", &["c3", "c1"]),
            Message::new("m4", Role::Assistant, vec![Part::text("listed")]),
            Message::user_text("m5", "and now?"),
            // An answer followed by another: its results exist only in memory.
            answer("m6", &["c4"]),
            Message::new("m7", Role::Assistant, vec![Part::text("hm")]),
        ];
        let (h, stored, id) = run_on(wire, messages).await;
        let body = &h.bodies()[0];
        let sent = tool_results_in(body);
        let ids: Vec<&str> = sent.iter().map(|r| r.0.as_str()).collect();
        assert_eq!(ids[..4], ["c1", "c2", "c3", "c4"], "{wire:?}");
        assert!(
            sent[1].1.contains("interrupted before it finished"),
            "{wire:?}"
        );
        // Stored before it was sent: appended to the message after the call.
        let m3 = stored.iter().find(|m| m.id == "m3").unwrap();
        let stored_ids: Vec<&str> = m3.tool_results().map(|r| r.call_id.as_str()).collect();
        assert_eq!(stored_ids, ["c3", "c1", "c2"]);
        assert!(m3.tool_results().nth(2).unwrap().is_error);
        // Loaded again, the same repaired history is sent.
        let session = Session::load(h.store.as_ref(), &id).await.unwrap();
        let done = h.continue_with(session, RunRequest::prompt("again")).await;
        assert_eq!(done.summary.final_text, "once more", "{wire:?}");
        let bodies = h.bodies();
        assert_valid_pairing(wire, &bodies[2]);
        let before = tool_results_in(&bodies[1]);
        let after = tool_results_in(&bodies[2]);
        assert_eq!(after[..before.len()], before[..], "{wire:?}");
    }
}
