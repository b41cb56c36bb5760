//! State that follows the conversation: after `/rewind`, `/resume` and
//! `/clear` the todo panel, totals and cells are the session's, and a
//! resumed history is drawn as the live one was.

use crossterm::event::KeyCode;
use gyre_core::{PermissionMode, QueryState};
use gyre_protocol::{Todo, TodoStatus};
use gyre_store::SessionStore;
use gyre_tui::Backend;
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

/// `text` without the durations of finished calls (`✓ write a.txt  19ms`):
/// the one thing a stored call does not keep, so a resumed cell shows none.
fn without_durations(text: &str) -> String {
    text.lines()
        .map(|line| {
            let finished = ["✓ ", "✗ ", "⊘ ", "■ "].iter().any(|m| line.starts_with(m));
            match line.rsplit_once("  ") {
                Some((head, duration))
                    if finished
                        && duration.starts_with(|c: char| c.is_ascii_digit())
                        && duration.ends_with('s') =>
                {
                    head.trim_end().to_string()
                }
                _ => line.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The transcript rows of a screen (above the input box): what the cells
/// draw, without the status line.
fn cells_of(screen: &str) -> String {
    screen
        .lines()
        .take_while(|line| !line.starts_with('╭'))
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_string()
}

#[tokio::test]
async fn a_resumed_session_is_drawn_as_the_live_one_was() {
    let mut driver = Driver::new(
        vec![
            on(
                "look around",
                Some(1),
                vec![
                    text("Reading first."),
                    call(
                        "write",
                        json!({"file_path": "a.txt", "content": "one\ntwo\n"}),
                    ),
                    call("todo_write", todos("in_progress")),
                ],
            ),
            otherwise(vec![text("All **done**.")]),
        ],
        PermissionMode::BypassPermissions,
    )
    .await;
    driver.send("look around").await;
    driver.until_idle().await;
    let live = without_durations(&cells_of(&driver.screen(80, 30)));
    let id = driver.app.live().unwrap().id().to_string();

    let backend = driver.app.into_backend();
    let opened = backend
        .open_session(&id, &gyre_tui::app::AgentChoice::default())
        .await
        .unwrap();
    let options = gyre_tui::AppOptions {
        opened: Some(opened),
        ..gyre_tui::AppOptions::default()
    };
    let mut resumed = Driver::with(backend, options).await;
    let again = cells_of(&resumed.screen(80, 30));
    insta::assert_snapshot!("resumed_as_live", again);
    assert_eq!(again, live);
}
