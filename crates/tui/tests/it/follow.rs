//! State that follows the conversation: after `/rewind`, `/resume` and
//! `/clear` the todo panel, totals and cells are the session's, and a
//! resumed history is drawn as the live one was.

use crossterm::event::KeyCode;
use gyre_core::{PermissionMode, QueryState};
use gyre_protocol::{Todo, TodoStatus};
use gyre_store::SessionStore;
use serde_json::json;

use crate::app_support::*;

fn todos(status: &str) -> serde_json::Value {
    json!({"todos": [
        {"content": "read the code", "status": status},
        {"content": "fix the bug", "status": status},
        {"content": "run the tests", "status": status},
    ]})
}

/// The todo list stored in the session's loop state.
async fn stored_todos(driver: &Driver, id: &str) -> Vec<Todo> {
    let value = driver.backend().store.load_state(id).await.unwrap();
    value
        .map(|v| serde_json::from_value::<QueryState>(v).unwrap().todos)
        .unwrap_or_default()
}

fn statuses(todos: &[Todo]) -> Vec<TodoStatus> {
    todos.iter().map(|t| t.status).collect()
}

#[tokio::test]
async fn todos_after_rewind_resume_and_clear_are_the_sessions() {
    let mut driver = Driver::new(
        vec![
            on(
                "plan it",
                Some(1),
                vec![call("todo_write", todos("pending"))],
            ),
            on(
                "finish it",
                Some(1),
                vec![call("todo_write", todos("completed"))],
            ),
            otherwise(vec![text("Done.")]),
        ],
        PermissionMode::BypassPermissions,
    )
    .await;
    for prompt in ["plan it", "finish it"] {
        driver.send(prompt).await;
        driver.until_idle().await;
    }
    let id = driver.app.live().unwrap().id().to_string();
    assert_eq!(
        statuses(driver.app.transcript().todos()),
        [TodoStatus::Completed; 3]
    );

    // Back to before "finish it": the list "plan it" wrote.
    driver.send("/rewind").await;
    driver.press(KeyCode::Enter).await;
    assert_eq!(driver.app.editor().text(), "finish it");
    let stored = stored_todos(&driver, &id).await;
    assert_eq!(statuses(&stored), [TodoStatus::Pending; 3]);
    assert_eq!(driver.app.transcript().todos(), stored.as_slice());

    // Back to before the first prompt: no list at all.
    driver.ctrl('c').await; // the prompt put back goes
    driver.send("/rewind").await;
    driver.press(KeyCode::Enter).await;
    assert_eq!(driver.app.editor().text(), "plan it");
    assert!(stored_todos(&driver, &id).await.is_empty());
    assert!(driver.app.transcript().todos().is_empty());
    let screen = driver.screen(100, 30);
    assert!(
        !screen.contains("0/3") && !screen.contains("3/3"),
        "{screen}"
    );

    // A new session has none; the emptied one, resumed, has none either.
    driver.ctrl('c').await;
    driver.send("/clear").await;
    assert!(driver.app.transcript().todos().is_empty());
    driver.send("something else").await;
    driver.until_idle().await;
    driver.send("/resume").await;
    driver.type_text("plan").await;
    driver.press(KeyCode::Enter).await;
    assert_eq!(driver.app.live().unwrap().id(), id);
    assert!(driver.app.transcript().todos().is_empty());
}
