//! The app driving runs: prompts, the queue, permission dialogs, Esc.

use std::time::{Duration, Instant};

use crossterm::event::KeyCode;
use gyre_core::PermissionMode;
use gyre_protocol::{Part, Role};
use gyre_store::SessionStore;
use gyre_tui::app::ANSWER_GUARD;
use serde_json::json;

use crate::app_support::*;

/// The user prompts stored in the app's session, in order.
async fn stored_prompts(driver: &Driver) -> Vec<String> {
    let id = driver.app.live().unwrap().id().to_string();
    driver
        .backend()
        .store
        .load_messages(&id)
        .await
        .unwrap()
        .iter()
        .filter(|m| m.role == Role::User && m.parts.iter().all(|p| matches!(p, Part::Text { .. })))
        .map(|m| m.text())
        .collect()
}

#[tokio::test]
async fn a_prompt_creates_the_session_runs_and_its_answer_is_shown() {
    let mut driver = Driver::new(
        vec![otherwise(vec![text("Hello from the **model**.")])],
        PermissionMode::Default,
    )
    .await;
    assert!(driver.app.live().is_none(), "no session before a prompt");
    assert!(
        driver
            .backend()
            .store
            .list_sessions()
            .await
            .unwrap()
            .is_empty()
    );
    assert!(driver.screen(80, 24).contains("Type a prompt"));

    driver.send("say hello").await;
    assert!(driver.app.editor().is_empty(), "the editor is cleared");
    driver.until_idle().await;
    let screen = driver.screen(80, 24);
    assert!(screen.contains("› say hello"), "{screen}");
    assert!(screen.contains("Hello from the model."), "{screen}");
    assert!(screen.contains("● ready"), "{screen}");
    let sessions = driver.backend().store.list_sessions().await.unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].title, "say hello", "titled by the first prompt");
    assert_eq!(stored_prompts(&driver).await, ["say hello"]);
}

#[tokio::test]
async fn a_prompt_typed_while_busy_is_queued_and_runs_after() {
    let mut driver = Driver::new(
        vec![
            on(
                "first",
                Some(1),
                // Busy until the test lets it end, however slow the machine.
                vec![call(
                    "bash",
                    json!({"command": "until [ -e go ]; do sleep 0.01; done; echo slept"}),
                )],
            ),
            on("slept", Some(1), vec![text("First done.")]),
            otherwise(vec![text("Second done.")]),
        ],
        PermissionMode::BypassPermissions,
    )
    .await;
    driver.send("first").await;
    driver
        .until("the bash call to run", |app| {
            app.transcript().status().is_busy()
        })
        .await;
    driver.send("second").await;
    assert_eq!(driver.app.queued(), ["second"]);
    let screen = driver.screen(80, 24);
    assert!(screen.contains("queued: second"), "{screen}");
    assert!(screen.contains("1 queued"), "{screen}");
    assert!(!screen.contains("› second"), "shown when its run starts");

    std::fs::write(driver.backend().path("go"), "").unwrap();
    driver.until_idle().await;
    let screen = driver.screen(100, 30);
    let order: Vec<usize> = ["› first", "First done.", "› second", "Second done."]
        .iter()
        .map(|needle| {
            screen
                .find(needle)
                .unwrap_or_else(|| panic!("{needle}: {screen}"))
        })
        .collect();
    assert!(order.is_sorted(), "in run order: {screen}");
    assert_eq!(stored_prompts(&driver).await, ["first", "second"]);
}

#[tokio::test]
async fn permission_requests_are_asked_one_after_another_and_answered() {
    let mut driver = Driver::new(
        vec![
            on(
                "write both",
                Some(1),
                vec![
                    call("write", json!({"file_path": "a.txt", "content": "a"})),
                    call("write", json!({"file_path": "b.txt", "content": "b"})),
                ],
            ),
            otherwise(vec![text("Wrote what I could.")]),
        ],
        PermissionMode::Default,
    )
    .await;
    driver.send("write both").await;
    driver
        .until_paused("the first request", |app| app.permission().is_some())
        .await;
    let screen = driver.screen(80, 24);
    assert!(screen.contains("Permission needed"), "{screen}");
    assert!(screen.contains("write a.txt"), "{screen}");
    assert!(screen.contains("1. Allow once"), "{screen}");

    // Keys typed as the dialog appears do not answer it, nor until the
    // guard is over.
    driver.type_text("y").await;
    assert!(driver.app.permission().is_some(), "the guard ignored it");
    tokio::time::advance(ANSWER_GUARD - Duration::from_millis(1)).await;
    driver.type_text("y").await;
    assert!(driver.app.permission().is_some(), "the guard ignored it");
    tokio::time::advance(Duration::from_millis(1)).await;
    driver.press(KeyCode::Char('1')).await;
    assert!(driver.app.permission().is_none(), "answered");
    tokio::time::resume();
    driver
        .until_paused("the second request", |app| {
            app.permission()
                .is_some_and(|d| d.call.arguments.contains("b.txt"))
        })
        .await;
    tokio::time::advance(ANSWER_GUARD).await;
    // Arrow keys and Enter: Allow once → Always → Deny.
    driver.press(KeyCode::Down).await;
    driver.press(KeyCode::Down).await;
    driver.press(KeyCode::Enter).await;
    tokio::time::resume();
    driver.until_idle().await;
    assert_eq!(
        std::fs::read_to_string(driver.backend().path("a.txt")).unwrap(),
        "a"
    );
    assert!(!driver.backend().path("b.txt").exists(), "denied");
    let screen = driver.screen(100, 30);
    assert!(screen.contains("Wrote what I could."), "{screen}");
}

#[tokio::test]
async fn always_allow_adds_the_rule_and_stops_asking() {
    let mut driver = Driver::new(
        vec![
            on(
                "write twice",
                Some(1),
                vec![call("write", json!({"file_path": "a.txt", "content": "1"}))],
            ),
            on(
                "wrote",
                Some(1),
                vec![call("write", json!({"file_path": "b.txt", "content": "2"}))],
            ),
            otherwise(vec![text("Both written.")]),
        ],
        PermissionMode::Default,
    )
    .await;
    driver.send("write twice").await;
    driver
        .until_paused("the request", |app| app.permission().is_some())
        .await;
    let rule = driver
        .app
        .permission()
        .unwrap()
        .always_rule
        .clone()
        .unwrap();
    assert!(driver.screen(100, 30).contains(&rule));
    tokio::time::advance(ANSWER_GUARD).await;
    driver.press(KeyCode::Char('a')).await;
    tokio::time::resume();
    driver.until_idle().await;
    assert!(driver.backend().path("b.txt").exists(), "not asked again");
    let screen = driver.screen(100, 30);
    assert!(
        screen.contains(&format!("Allowed for this session: {rule}")),
        "{screen}"
    );
}

#[tokio::test]
async fn esc_interrupts_the_running_turn_and_the_queue_goes_on() {
    let mut driver = Driver::new(
        vec![
            on(
                "sleep",
                Some(1),
                vec![call("bash", json!({"command": "sleep 30"}))],
            ),
            otherwise(vec![text("After the interruption.")]),
        ],
        PermissionMode::BypassPermissions,
    )
    .await;
    driver.send("sleep please").await;
    driver
        .until("the command to run", |app| {
            app.transcript().tool_state("toolu_0_0")
                == Some(gyre_tui::transcript::ToolState::Running)
        })
        .await;
    driver.send("next one").await;
    assert_eq!(driver.app.queued(), ["next one"]);
    let pressed = Instant::now();
    driver.press(KeyCode::Esc).await;
    driver
        .until("the interruption", |app| {
            app.transcript().tool_state("toolu_0_0")
                == Some(gyre_tui::transcript::ToolState::Interrupted)
                || app.transcript().tool_state("toolu_0_0")
                    == Some(gyre_tui::transcript::ToolState::Failed)
        })
        .await;
    assert!(
        pressed.elapsed() < Duration::from_secs(5),
        "well under 30 s"
    );
    driver.until_idle().await;
    let screen = driver.screen(100, 30);
    assert!(screen.contains("› next one"), "{screen}");
    assert!(screen.contains("After the interruption."), "{screen}");
    assert_eq!(stored_prompts(&driver).await, ["sleep please", "next one"]);
}

#[tokio::test]
async fn esc_on_a_permission_dialog_denies_and_stops_the_turn() {
    let mut driver = Driver::new(
        vec![
            on(
                "write",
                Some(1),
                vec![call("write", json!({"file_path": "x.txt", "content": "x"}))],
            ),
            otherwise(vec![text("unreachable?")]),
        ],
        PermissionMode::Default,
    )
    .await;
    driver.send("write it").await;
    driver
        .until("the request", |app| app.permission().is_some())
        .await;
    driver.press(KeyCode::Esc).await;
    assert!(driver.app.permission().is_none());
    driver.until_idle().await;
    assert!(!driver.backend().path("x.txt").exists());
    let screen = driver.screen(100, 30);
    assert!(screen.contains("cancelled"), "{screen}");
}

/// A prompt sent while the workspace's MCP servers start waits for them
/// (so that their tools are offered from its first request), says so, and
/// goes as soon as they have started; Esc sends it at once.
#[tokio::test]
async fn a_prompt_waits_for_starting_mcp_servers_unless_esc() {
    let mut driver = Driver::new(
        vec![otherwise(vec![text("answered")])],
        PermissionMode::Default,
    )
    .await;
    *driver.backend().mcp_starting.lock().unwrap() = vec!["docs".into()];
    driver.send("first").await;
    let screen = driver.screen(120, 24);
    assert!(
        screen.contains("Waiting for the MCP servers docs to start"),
        "{screen}"
    );
    assert!(driver.app.live().is_none(), "nothing sent yet");
    assert!(driver.backend().server.requests().is_empty());
    // A second prompt typed meanwhile waits behind it.
    driver.send("second").await;
    driver.backend().mcp_starting.lock().unwrap().clear();
    driver.backend().mcp_ready.notify_one();
    driver
        .until("both prompts to run", |app| {
            app.live().is_some() && app.queued().is_empty()
        })
        .await;
    driver.until_idle().await;
    driver.until_idle().await;
    assert_eq!(stored_prompts(&driver).await, ["first", "second"]);

    // Esc does not wait.
    let mut driver = Driver::new(
        vec![otherwise(vec![text("answered")])],
        PermissionMode::Default,
    )
    .await;
    *driver.backend().mcp_starting.lock().unwrap() = vec!["slow".into()];
    driver.send("now please").await;
    assert!(driver.app.live().is_none());
    driver.press(KeyCode::Esc).await;
    driver.until_idle().await;
    assert_eq!(stored_prompts(&driver).await, ["now please"]);
    assert!(driver.screen(80, 24).contains("answered"));
}
