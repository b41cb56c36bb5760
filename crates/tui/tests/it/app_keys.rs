//! The app's keys: the editor, history, completion, `!commands`, quitting,
//! toggles, and no wake-ups while idle.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyModifiers};
use gyre_core::PermissionMode;
use gyre_tui::app::{ANIMATION_TICK, AppOptions, QUIT_WINDOW};
use tokio::time::Instant;

use crate::app_support::*;

async fn quiet() -> Driver {
    Driver::new(vec![otherwise(vec![text("ok")])], PermissionMode::Default).await
}

#[tokio::test]
async fn newline_keys_insert_a_newline_and_a_paste_is_never_sent() {
    let mut driver = quiet().await;
    driver.type_text("one").await;
    driver.key(KeyCode::Enter, KeyModifiers::SHIFT).await;
    driver.type_text("two").await;
    driver.key(KeyCode::Enter, KeyModifiers::ALT).await;
    driver.type_text("three").await;
    driver.ctrl('j').await;
    driver.paste("four\r\nfive\n").await;
    assert_eq!(driver.app.editor().text(), "one\ntwo\nthree\nfour\nfive\n");
    assert!(driver.app.live().is_none(), "nothing was sent");
    let screen = driver.screen(80, 24);
    assert!(screen.contains("│three"), "the input grows: {screen}");
    driver.press(KeyCode::Enter).await;
    driver.until_idle().await;
    assert!(driver.screen(80, 30).contains("› one"));
}

#[tokio::test]
async fn up_and_down_browse_earlier_prompts_which_outlive_the_app() {
    let mut driver = quiet().await;
    for prompt in ["first", "second"] {
        driver.send(prompt).await;
        driver.until_idle().await;
    }
    driver.type_text("draft").await;
    driver.press(KeyCode::Up).await;
    assert_eq!(driver.app.editor().text(), "second");
    driver.press(KeyCode::Up).await;
    assert_eq!(driver.app.editor().text(), "first");
    driver.press(KeyCode::Up).await;
    assert_eq!(driver.app.editor().text(), "first", "the oldest stays");
    driver.press(KeyCode::Down).await;
    driver.press(KeyCode::Down).await;
    assert_eq!(
        driver.app.editor().text(),
        "draft",
        "back to what was typed"
    );

    // A new app over the same home remembers them (the app writes its
    // history before it quits).
    let Driver { mut app, .. } = driver;
    app.shutdown().await;
    let backend = app.into_backend();
    let mut again = Driver::with(backend, AppOptions::default()).await;
    again.press(KeyCode::Up).await;
    assert_eq!(again.app.editor().text(), "second");
}

#[tokio::test]
async fn ctrl_c_clears_and_twice_quits_and_ctrl_d_quits_an_empty_input() {
    let mut driver = quiet().await;
    // The quit window is measured on tokio's clock: paused, only
    // `advance` moves it.
    tokio::time::pause();
    driver.type_text("some text").await;
    driver.ctrl('c').await;
    assert!(driver.app.editor().is_empty());
    assert!(!driver.app.should_quit());
    assert!(driver.screen(80, 24).contains("Press Ctrl-C again to quit"));
    // The hint goes after the window, and so does the chance to quit.
    let armed = Instant::now();
    assert_eq!(
        driver.app.next_wake(armed),
        Some(armed + QUIT_WINDOW),
        "a wake for the hint"
    );
    tokio::time::advance(QUIT_WINDOW).await;
    driver.app.tick(Instant::now());
    assert!(!driver.screen(80, 24).contains("Press Ctrl-C again"));
    assert_eq!(driver.app.next_wake(Instant::now()), None);
    driver.ctrl('c').await;
    tokio::time::advance(QUIT_WINDOW).await;
    driver.ctrl('c').await;
    assert!(!driver.app.should_quit(), "not a second apart");
    tokio::time::advance(QUIT_WINDOW - Duration::from_millis(1)).await;
    driver.ctrl('c').await;
    assert!(driver.app.should_quit(), "twice within a second");
    tokio::time::resume();

    let mut driver = quiet().await;
    driver.type_text("x").await;
    driver.ctrl('d').await;
    assert!(!driver.app.should_quit(), "not with text in the editor");
    driver.press(KeyCode::Backspace).await;
    driver.ctrl('d').await;
    assert!(driver.app.should_quit());
}

#[tokio::test]
async fn no_wake_while_idle_and_ticks_while_a_run_animates() {
    let mut driver = Driver::new(
        vec![
            on(
                "sleep",
                Some(1),
                vec![call("bash", serde_json::json!({"command": "echo slept"}))],
            ),
            otherwise(vec![text("done")]),
        ],
        PermissionMode::BypassPermissions,
    )
    .await;
    let now = Instant::now();
    assert_eq!(driver.app.next_wake(now), None, "idle: nothing to wake for");
    driver.send("sleep a bit").await;
    driver
        .until("the run to start", |app| {
            app.transcript().status().is_busy()
        })
        .await;
    assert_eq!(driver.app.next_wake(now), Some(now + ANIMATION_TICK));
    driver.until_idle().await;
    assert_eq!(driver.app.next_wake(Instant::now()), None, "idle again");
    assert!(!driver.app.is_dirty() || driver.screen(80, 24).contains("done"));
}

#[tokio::test]
async fn ctrl_t_and_ctrl_r_toggle_the_todo_panel_and_reasoning() {
    let mut driver = quiet().await;
    assert!(driver.app.shows_todos());
    driver.ctrl('t').await;
    assert!(!driver.app.shows_todos());
    let before = driver.app.transcript().reasoning_view();
    driver.ctrl('r').await;
    assert_ne!(driver.app.transcript().reasoning_view(), before);
}

#[tokio::test]
async fn at_completes_workspace_paths_and_tab_accepts() {
    let mut driver = quiet().await;
    for file in ["src/main.rs", "src/lib.rs", "README.md", "target/junk.rs"] {
        let path = driver.backend().path(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x").unwrap();
    }
    std::fs::write(driver.backend().path(".gitignore"), "target/\n").unwrap();
    driver.type_text("look at @mai").await;
    driver
        .until("the paths to be listed", |app| app.completion().is_some())
        .await;
    let labels = driver.completion_labels();
    assert_eq!(labels[0], "@src/main.rs", "{labels:?}");
    assert!(!labels.iter().any(|l| l.contains("target")), "{labels:?}");
    assert!(driver.screen(80, 24).contains("@src/main.rs"));
    driver.press(KeyCode::Tab).await;
    assert_eq!(driver.app.editor().text(), "look at @src/main.rs ");
    assert!(driver.app.completion().is_none());

    // Esc closes the popup; it stays closed for that word.
    driver.type_text("@lib").await;
    assert!(driver.app.completion().is_some());
    driver.press(KeyCode::Esc).await;
    assert!(driver.app.completion().is_none());
    driver.press(KeyCode::Left).await;
    assert!(driver.app.completion().is_none());
}

#[tokio::test]
async fn slash_opens_command_completion_and_enter_runs_the_command() {
    let mut driver = quiet().await;
    driver.type_text("/he").await;
    let completion = driver.app.completion().unwrap();
    assert_eq!(completion.popup.items[0].label, "/help");
    driver.press(KeyCode::Enter).await;
    assert!(driver.app.is_showing_help());
    assert!(driver.app.editor().is_empty());
}

#[tokio::test]
async fn a_bang_command_runs_in_the_workspace_and_esc_stops_a_long_one() {
    let mut driver = quiet().await;
    std::fs::write(driver.backend().path("here.txt"), "x").unwrap();
    driver.send("!ls; echo from-the-shell").await;
    assert!(driver.app.is_running_shell());
    driver
        .until("the command to end", |app| !app.is_running_shell())
        .await;
    let screen = driver.screen(100, 30);
    assert!(screen.contains("bash ls; echo from-the-shell"), "{screen}");
    assert!(screen.contains("here.txt"), "{screen}");
    assert!(screen.contains("from-the-shell"), "{screen}");
    assert!(driver.app.live().is_none(), "the model was not involved");

    driver.send("!sleep 30").await;
    let started = Instant::now();
    driver.press(KeyCode::Esc).await;
    driver
        .until("the command to stop", |app| !app.is_running_shell())
        .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let screen = driver.screen(100, 30);
    assert!(screen.contains("interrupted"), "{screen}");
}
