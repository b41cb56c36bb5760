//! Completion mode (seed 000) and the todo list kept in the session.

use gyre_core::agents::{Completion, ToolSelection};
use gyre_core::{RunRequest, Session, SubagentLimits};
use gyre_mock::{Reply, Script, Step, StreamReply};
use gyre_protocol::{Event, FinishReason, Origin, TodoStatus};
use serde_json::json;

use crate::harness::*;
use crate::subagents::kid;

/// Any request, any number of times.
pub fn always(items: Vec<gyre_mock::Item>) -> Step {
    Step {
        reply: Reply::Stream(StreamReply {
            items,
            ..StreamReply::default()
        }),
        ..Step::default()
    }
}

async fn finisher(script: Script) -> Harness {
    let mut agent = kid("finisher", "FINISHER", ToolSelection::All);
    agent.completion = Completion::Required;
    Harness::with_agents(
        Wire::Anthropic,
        script,
        "finisher",
        vec![agent],
        SubagentLimits::default(),
        |_| {},
    )
    .await
}

#[tokio::test]
async fn text_only_answers_get_exactly_three_reminders() {
    let h = finisher(Script::new(vec![always(vec![text("I think it is done.")])])).await;
    assert!(
        h.agent
            .tool_names()
            .contains(&"attempt_completion".to_string())
    );
    let run = h.run("do it").await;
    assert_eq!(run.summary.reason, FinishReason::Completed);
    assert_eq!(run.summary.final_text, "I think it is done.");
    let bodies: Vec<String> = h.bodies().iter().map(|b| b.to_string()).collect();
    assert_eq!(bodies.len(), 4, "one answer and three reminded ones");
    for (i, body) in bodies.iter().enumerate() {
        let reminders = body
            .matches("call `attempt_completion` with the result")
            .count();
        assert_eq!(reminders, i, "request {i} carries the reminders so far");
    }
    // The reminders are gyre's, not the user's.
    let stored = h.stored(&run.session).await;
    let notices = stored.iter().filter(|m| m.origin == Origin::Gyre).count();
    assert_eq!(notices, 3);
    assert_eq!(run.session.state.reminder_count, 3);
}

#[tokio::test]
async fn open_todos_earn_more_reminders_and_tool_use_resets_the_count() {
    let todo = json!({"todos": [{"content": "write the fix", "status": "pending"}]});
    let h = finisher(Script::new(vec![
        Step::on_turn(0, vec![text("first"), call("todo_write", todo)]),
        always(vec![text("still thinking")]),
    ]))
    .await;
    let run = h.run("do it").await;
    assert_eq!(run.summary.reason, FinishReason::Completed);
    let bodies: Vec<String> = h.bodies().iter().map(|b| b.to_string()).collect();
    // The todo call, then ten reminded answers, then the last one.
    assert_eq!(bodies.len(), 12);
    assert!(bodies[2].contains("the todo list still has open items"));
    assert_eq!(run.session.state.reminder_count, 10);
}

#[tokio::test]
async fn attempt_completion_ends_the_run_with_its_result() {
    let h = finisher(Script::linear(vec![
        vec![call(
            "attempt_completion",
            json!({"result": "ALL DONE: fixed and tested"}),
        )],
        vec![text("never asked")],
    ]))
    .await;
    let run = h.run("do it").await;
    assert_eq!(run.summary.reason, FinishReason::Completed);
    assert_eq!(run.summary.final_text, "ALL DONE: fixed and tested");
    assert_eq!(h.bodies().len(), 1);
    assert_eq!(run.summary.num_turns, 1);

    // An empty result is refused, and the run goes on.
    let h = finisher(Script::linear(vec![
        vec![call("attempt_completion", json!({"result": " "}))],
        vec![call("attempt_completion", json!({"result": "done"}))],
    ]))
    .await;
    let run = h.run("do it").await;
    assert_eq!(run.summary.final_text, "done");
    assert!(results(&run.events)[0].is_error);
}

#[tokio::test]
async fn completion_mode_is_off_by_default() {
    let h = Harness::new(
        Wire::Anthropic,
        Script::new(vec![always(vec![text("done")])]),
    )
    .await;
    assert!(
        !h.agent
            .tool_names()
            .contains(&"attempt_completion".to_string())
    );
    let run = h.run("do it").await;
    assert_eq!(run.summary.final_text, "done");
    assert_eq!(h.bodies().len(), 1);
}

#[tokio::test]
async fn the_todo_list_survives_a_resume() {
    let todo = json!({"todos": [
        {"content": "read the code", "status": "completed"},
        {"content": "fix the bug", "status": "in_progress"}
    ]});
    let h = Harness::new(
        Wire::Anthropic,
        Script::new(vec![
            Step::on_turn(0, vec![call("todo_write", todo)]),
            always(vec![text("ok")]),
        ]),
    )
    .await;
    let run = h.run("plan it").await;
    assert_eq!(run.session.state.todos.len(), 2);

    // A new process loads the session: the list is back, and announced.
    let session = Session::load(h.store.as_ref(), run.session.id())
        .await
        .unwrap();
    let todos = session.tools.todos.snapshot();
    assert_eq!(todos.len(), 2);
    assert_eq!(todos[1].status, TodoStatus::InProgress);
    let run = h.continue_with(session, RunRequest::prompt("go on")).await;
    let announced = run.events.iter().find_map(|e| match e {
        Event::TodosUpdated { todos } => Some(todos.clone()),
        _ => None,
    });
    assert_eq!(announced.map(|t| t.len()), Some(2));
}
