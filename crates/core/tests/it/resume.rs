//! Resuming a session a crash left in the middle of a turn: the last answer's
//! calls have no results. Read-only calls run again; mutating ones are
//! reported as interrupted and never run twice.

use gyre_core::{RunRequest, Session};
use gyre_mock::{Script, Step};
use gyre_protocol::{Event, FinishReason, Message, Outcome, Part, Role, ToolCall, ToolResult};
use gyre_store::SessionStore;

use crate::harness::*;

const INTERRUPTED: &str = "interrupted before it finished; check the workspace";

fn call(id: &str, name: &str, arguments: &str) -> Part {
    Part::ToolCall(ToolCall::new(id, name, arguments))
}

/// A session as a kill after the answer was stored (and the `bash` call had
/// run) leaves it: the prompt, the answer with two calls, no results.
async fn crashed_session(h: &Harness, results: Vec<Part>) -> String {
    let session = h.session("look and log").await;
    let store = h.store.as_ref();
    let id = session.id().to_string();
    store
        .append_message(&id, &Message::user_text("m1", "look and log"))
        .await
        .unwrap();
    let answer = Message::new(
        "m2",
        Role::Assistant,
        vec![
            Part::text("Reading, then logging."),
            call("call_read", "read", r#"{"file_path":"notes.txt"}"#),
            call("call_bash", "bash", r#"{"command":"echo line >> log.txt"}"#),
        ],
    );
    store.append_message(&id, &answer).await.unwrap();
    if !results.is_empty() {
        let message = Message::new("m3", Role::User, results);
        store.append_message(&id, &message).await.unwrap();
    }
    // The bash call ran once before the kill.
    std::fs::write(h.path("log.txt"), "line\n").unwrap();
    std::fs::write(h.path("notes.txt"), "the notes\n").unwrap();
    id
}

fn script() -> Script {
    // One answer in the history before the resumed run's first request.
    Script::new(vec![Step::on_turn(1, vec![text("resumed and done")])])
}

async fn pending_calls_are_answered_on_resume(wire: Wire) {
    let h = Harness::new(wire, script()).await;
    let id = crashed_session(&h, Vec::new()).await;

    let session = Session::load(h.store.as_ref(), &id).await.unwrap();
    let done = h
        .continue_with(session, RunRequest::prompt("carry on"))
        .await;
    assert_eq!(
        done.summary.reason,
        FinishReason::Completed,
        "{:?}",
        done.summary.error
    );
    assert_eq!(done.summary.final_text, "resumed and done");

    // The mutating call did not run again.
    assert_eq!(
        std::fs::read_to_string(h.path("log.txt")).unwrap(),
        "line\n"
    );

    // The frontends saw both results, before the first turn.
    let results = results(&done.events);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].call_id, "call_read");
    assert!(!results[0].is_error);
    assert!(results[0].text_content().contains("the notes"));
    assert_eq!(results[1].call_id, "call_bash");
    assert!(results[1].is_error);
    assert_eq!(results[1].text_content(), INTERRUPTED);
    let first_turn = done
        .events
        .iter()
        .position(|e| matches!(e, Event::TurnStarted { .. }))
        .unwrap();
    let last_result = done
        .events
        .iter()
        .rposition(|e| matches!(e, Event::ToolResult { .. }))
        .unwrap();
    assert!(last_result < first_turn);

    // Stored: the results, then the new prompt, then the answer.
    let stored = h.stored(&done.session).await;
    let roles: Vec<Role> = stored.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::User,
            Role::User,
            Role::Assistant
        ]
    );
    let ids: Vec<&str> = stored[2]
        .tool_results()
        .map(|r| r.call_id.as_str())
        .collect();
    assert_eq!(ids, ["call_read", "call_bash"]);
    assert_eq!(stored[3].text(), "carry on");

    // The request was valid: every call answered, in order.
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 1);
    assert_eq!(
        assert_valid_pairing(wire, &bodies[0]),
        ["call_read", "call_bash"]
    );
    let carried = tool_results_in(&bodies[0]);
    assert!(carried[0].1.contains("the notes"));
    assert!(carried[1].1.contains(INTERRUPTED));
}

#[tokio::test]
async fn pending_calls_are_answered_on_resume_anthropic() {
    pending_calls_are_answered_on_resume(Wire::Anthropic).await;
}

#[tokio::test]
async fn pending_calls_are_answered_on_resume_openai() {
    pending_calls_are_answered_on_resume(Wire::OpenAi).await;
}

#[tokio::test]
async fn a_crash_while_results_were_stored_keeps_the_finished_ones() {
    let h = Harness::new(Wire::Anthropic, script()).await;
    // The read's result was stored; the kill came before the bash's.
    let read_result = ToolResult::text("call_read", "read", "kept from before", Outcome::Success);
    let id = crashed_session(&h, vec![Part::ToolResult(read_result)]).await;
    std::fs::write(h.path("notes.txt"), "changed since\n").unwrap();

    let session = Session::load(h.store.as_ref(), &id).await.unwrap();
    let done = h
        .continue_with(session, RunRequest::prompt("carry on"))
        .await;
    assert_eq!(done.summary.reason, FinishReason::Completed);
    // Only the call without a result was answered, into the same message.
    let results = results(&done.events);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].text_content(), INTERRUPTED);
    let stored = h.stored(&done.session).await;
    assert_eq!(stored.len(), 5);
    assert_eq!(stored[2].id, "m3");
    let texts: Vec<String> = stored[2].tool_results().map(|r| r.text_content()).collect();
    assert_eq!(texts, ["kept from before", INTERRUPTED]);
    assert_eq!(
        std::fs::read_to_string(h.path("log.txt")).unwrap(),
        "line\n"
    );
    assert_valid_pairing(Wire::Anthropic, &h.bodies()[0]);
}

#[tokio::test]
async fn pending_calls_to_unknown_tools_or_with_bad_arguments_get_errors() {
    let h = Harness::new(Wire::OpenAi, script()).await;
    let session = h.session("x").await;
    let id = session.id().to_string();
    let store = h.store.as_ref();
    store
        .append_message(&id, &Message::user_text("m1", "x"))
        .await
        .unwrap();
    let answer = Message::new(
        "m2",
        Role::Assistant,
        vec![
            call("c_unknown", "no_such_tool", "{}"),
            call("c_bad", "read", "{not json"),
            call("c_schema", "read", r#"{"file_path": 7}"#),
            call("c_ls", "ls", "{}"),
        ],
    );
    store.append_message(&id, &answer).await.unwrap();

    let session = Session::load(store, &id).await.unwrap();
    let done = h.continue_with(session, RunRequest::prompt("go")).await;
    assert_eq!(done.summary.reason, FinishReason::Completed);
    let results = results(&done.events);
    let errors: Vec<(&str, bool)> = results
        .iter()
        .map(|r| (r.call_id.as_str(), r.is_error))
        .collect();
    assert_eq!(
        errors,
        [
            ("c_unknown", true),
            ("c_bad", true),
            ("c_schema", true),
            ("c_ls", false)
        ]
    );
    assert!(results[0].text_content().contains("unknown tool"));
    assert!(results[1].text_content().contains("not valid JSON"));
    assert_valid_pairing(Wire::OpenAi, &h.bodies()[0]);
}

#[tokio::test]
async fn a_session_without_pending_calls_resumes_as_it_was() {
    let script = Script::linear(vec![vec![text("first")], vec![text("second")]]);
    let h = Harness::new(Wire::Anthropic, script).await;
    let first = h.run("one").await;
    let id = first.session.id().to_string();
    let session = Session::load(h.store.as_ref(), &id).await.unwrap();
    let done = h.continue_with(session, RunRequest::prompt("two")).await;
    assert_eq!(done.summary.final_text, "second");
    assert!(results(&done.events).is_empty());
    assert_eq!(h.stored(&done.session).await.len(), 4);
}
