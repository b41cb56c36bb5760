//! What the loop adds around tools: schema validation before a call runs, the
//! output budget on every result, the todo list as an event.

use std::sync::Arc;

use gyre_mock::Script;
use gyre_protocol::{Event, TodoStatus};
use gyre_tools::OutputLimits;
use serde_json::json;

use crate::harness::*;

#[tokio::test]
async fn arguments_are_checked_against_the_schema_before_the_call_runs() {
    let script = Script::linear(vec![
        vec![call("read", json!({"file_path": "a.txt", "limit": "ten"}))],
        vec![text("ok")],
    ]);
    let h = Harness::new(Wire::Anthropic, script).await;
    std::fs::write(h.path("a.txt"), "a\n").unwrap();
    let done = h.run("read").await;
    let result = &results(&done.events)[0];
    assert!(result.is_error);
    let text = result.text_content();
    assert!(
        text.contains("`limit`") && text.contains("integer"),
        "names the field and what was expected: {text}"
    );
}

#[tokio::test]
async fn a_result_over_the_budget_is_cut_and_spilled_whole() {
    let spill = tempfile::tempdir().unwrap();
    let script = Script::linear(vec![
        vec![call("bash", json!({"command": "seq 1 20000"}))],
        vec![text("ok")],
    ]);
    let spill_dir = spill.path().to_path_buf();
    let h = Harness::with(
        Wire::OpenAi,
        script,
        gyre_tools::Registry::builtin(),
        move |c| {
            c.tool_output = Arc::new(OutputLimits {
                max_result_tokens: 1000,
                spill_dir: Some(spill_dir),
            })
        },
    )
    .await;
    let done = h.run("count").await;
    let result = results(&done.events)[0].text_content();
    assert!(
        result.len() <= 1000 * 4,
        "cut to the budget: {} bytes",
        result.len()
    );
    assert!(result.starts_with("1\n2\n3\n"), "the head is kept");
    assert!(result.contains("20000"), "the tail is kept");
    let carried = tool_results_in(&h.bodies()[1]);
    assert_eq!(
        carried[0].1.len(),
        result.len(),
        "the model saw the cut result"
    );
    let spilled: Vec<_> = walk(spill.path());
    assert_eq!(spilled.len(), 1, "{spilled:?}");
    let whole = std::fs::read_to_string(&spilled[0]).unwrap();
    assert_eq!(whole.lines().count(), 20000);
    assert!(
        result.contains(&spilled[0].display().to_string()),
        "the cut result names the spill file"
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn todo_write_updates_the_list_and_tells_the_frontends() {
    let script = Script::linear(vec![
        vec![call(
            "todo_write",
            json!({"todos": [
                {"content": "read the code", "status": "completed"},
                {"content": "fix the bug", "status": "in_progress"}
            ]}),
        )],
        vec![text("ok")],
    ]);
    let h = Harness::new(Wire::Gemini, script).await;
    let done = h.run("plan").await;
    let updates: Vec<_> = done
        .events
        .iter()
        .filter_map(|e| match e {
            Event::TodosUpdated { todos } => Some(todos.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(updates.len(), 1);
    let todos = &updates[0];
    assert_eq!(todos.len(), 2);
    assert_eq!(todos[1].content, "fix the bug");
    assert_eq!(todos[1].status, TodoStatus::InProgress);
    assert_eq!(done.session.tools.todos.snapshot(), *todos);
}
