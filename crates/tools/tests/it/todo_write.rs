use gyre_protocol::{Todo, TodoStatus};
use gyre_tools::{ToolError, ToolKind};
use serde_json::json;

use crate::Fixture;

#[tokio::test]
async fn todo_write_replaces_the_list_and_renders_it() {
    let fx = Fixture::new();
    let out = fx
        .call(
            "todo_write",
            json!({"todos": [
                {"content": "Read the code", "status": "completed"},
                {"content": "  Write the fix ", "status": "in_progress"},
                {"content": "Run the tests", "status": "pending"},
                {"content": "Port to Windows", "status": "cancelled"},
            ]}),
        )
        .await
        .unwrap();
    assert_eq!(
        crate::text(&out),
        "The todo list now has 4 items:\n[x] Read the code\n[>] Write the fix\n\
         [ ] Run the tests\n[-] Port to Windows\n"
    );
    assert_eq!(out.title, "todo_write: 1/4 completed");
    let todos = fx.ctx.session.todos.snapshot();
    assert_eq!(
        todos[1],
        Todo {
            content: "Write the fix".into(),
            status: TodoStatus::InProgress
        }
    );
    assert_eq!(todos.len(), 4);

    let out = fx
        .ok(
            "todo_write",
            json!({"todos": [{"content": "Only this", "status": "pending"}]}),
        )
        .await;
    assert_eq!(out, "The todo list now has 1 items:\n[ ] Only this\n");
    assert_eq!(fx.ctx.session.todos.snapshot().len(), 1);

    let out = fx.ok("todo_write", json!({"todos": []})).await;
    assert_eq!(out, "The todo list is now empty.");
    assert!(fx.ctx.session.todos.snapshot().is_empty());
}

#[tokio::test]
async fn bad_lists_change_nothing() {
    let fx = Fixture::new();
    fx.ok(
        "todo_write",
        json!({"todos": [{"content": "Keep me", "status": "pending"}]}),
    )
    .await;
    let err = fx
        .err(
            "todo_write",
            json!({"todos": [
                {"content": "Fine", "status": "pending"},
                {"content": "   ", "status": "pending"},
            ]}),
        )
        .await;
    assert!(matches!(err, ToolError::InvalidArguments(_)));
    assert_eq!(
        err.to_string(),
        "invalid arguments for `todo_write`: item 2 has empty content; say what to do"
    );
    let err = fx
        .err(
            "todo_write",
            json!({"todos": [{"content": "x", "status": "done"}]}),
        )
        .await
        .to_string();
    assert!(err.contains("unknown variant `done`"), "{err}");
    let too_many: Vec<_> = (0..101)
        .map(|i| json!({"content": format!("step {i}"), "status": "pending"}))
        .collect();
    let err = fx
        .err("todo_write", json!({"todos": too_many}))
        .await
        .to_string();
    assert!(err.contains("101 items is too many"), "{err}");
    assert_eq!(
        fx.ctx.session.todos.snapshot(),
        vec![Todo {
            content: "Keep me".into(),
            status: TodoStatus::Pending
        }]
    );
    let kind = fx.registry.get("todo_write").unwrap().kind(&json!({}));
    assert_eq!(kind, ToolKind::ReadOnly);
}
