//! The context gauge and the totals follow the conversation: right after
//! `/resume`, `/rewind` and `--continue` the gauge is the session's (the
//! estimate the loop makes before its next request, against the agent's
//! window), the tokens and cost are the session's stored totals (a rewind
//! does not give back what was spent), and `/clear` empties the gauge.

use crossterm::event::KeyCode;
use gyre_core::PermissionMode;
use gyre_mock::Script;
use gyre_protocol::Usage;
use gyre_tui::transcript::ContextGauge;
use gyre_tui::{AppOptions, Backend};

use crate::app_support::*;

const WINDOW: u64 = 100_000;

/// About 20 kB of text: a session that has it is measurably larger.
fn long_answer() -> String {
    "The answer goes on and on. ".repeat(750)
}

/// A backend whose agents know their window (so the loop measures).
async fn backend() -> CoreBackend {
    let steps = vec![
        on("first", Some(1), vec![text(&long_answer())]),
        otherwise(vec![text("Done.")]),
    ];
    let mut backend = CoreBackend::new(Script::new(steps), PermissionMode::BypassPermissions).await;
    backend.window = Some(WINDOW);
    backend
}

fn gauge(driver: &Driver) -> ContextGauge {
    driver
        .app
        .transcript()
        .status()
        .context
        .expect("the gauge is shown")
}

fn usage(driver: &Driver) -> Usage {
    driver.app.transcript().status().usage
}

/// The gauge `shown` is what the loop measures before its next request:
/// sending a one-letter prompt, the loop's own measure is `shown` plus
/// that prompt (one short message, a few dozen bytes at most).
async fn next_request_agrees(driver: &mut Driver, shown: ContextGauge) {
    driver.send("x").await;
    driver.until_idle().await;
    let measured = gauge(driver);
    assert_eq!(
        (measured.window, measured.usable_tokens),
        (shown.window, shown.usable_tokens)
    );
    assert!(
        measured.used_tokens > shown.used_tokens && measured.used_tokens <= shown.used_tokens + 64,
        "shown {shown:?}, the loop measured {measured:?}"
    );
}

/// The status line's share, as drawn.
fn shows(driver: &mut Driver, gauge: ContextGauge) {
    let screen = driver.screen(100, 30);
    assert!(
        screen.contains(&format!("ctx {}%", gauge.percent())),
        "{screen}"
    );
}

#[tokio::test]
async fn the_gauge_is_the_sessions_after_resume_rewind_and_clear() {
    let mut driver = Driver::with(backend().await, AppOptions::default()).await;
    for prompt in ["first", "second"] {
        driver.send(prompt).await;
        driver.until_idle().await;
    }
    let id = driver.app.live().unwrap().id().to_string();
    let spent = usage(&driver);
    assert!(spent.output_tokens > 0);

    // A new session: nothing measured yet.
    driver.send("/clear").await;
    assert_eq!(driver.app.transcript().status().context, None);
    assert!(!driver.screen(100, 30).contains("ctx "));

    // The stored session, measured at once: the long answer is in it.
    driver.send("/resume").await;
    driver.type_text("first").await;
    driver.press(KeyCode::Enter).await;
    assert_eq!(driver.app.live().unwrap().id(), id);
    let resumed = gauge(&driver);
    assert_eq!(resumed.window, WINDOW);
    assert!(
        resumed.used_tokens > long_answer().len() as u64 / 8,
        "{resumed:?}"
    );
    shows(&mut driver, resumed);
    assert_eq!(usage(&driver), spent);
    next_request_agrees(&mut driver, resumed).await;
    let spent = usage(&driver);

    // Back to before the first prompt: the long answer is gone from the
    // gauge, not from what was spent (as /cost says).
    driver.send("/rewind").await;
    driver.type_text("first").await;
    driver.press(KeyCode::Enter).await;
    assert_eq!(driver.app.editor().text(), "first");
    let rewound = gauge(&driver);
    assert_eq!(rewound.window, WINDOW);
    assert!(
        rewound.used_tokens + long_answer().len() as u64 / 8 < resumed.used_tokens,
        "resumed {resumed:?}, rewound {rewound:?}"
    );
    shows(&mut driver, rewound);
    assert_eq!(usage(&driver), spent);
    driver.ctrl('c').await; // the prompt put back goes
    next_request_agrees(&mut driver, rewound).await;
}

#[tokio::test]
async fn the_gauge_is_the_sessions_when_continued() {
    let mut driver = Driver::with(backend().await, AppOptions::default()).await;
    driver.send("first").await;
    driver.until_idle().await;
    let id = driver.app.live().unwrap().id().to_string();
    let spent = usage(&driver);

    // What `gyre --continue` does: the app starts on the opened session.
    let backend = driver.app.into_backend();
    let opened = backend
        .open_session(&id, &gyre_tui::app::AgentChoice::default())
        .await
        .unwrap();
    let options = AppOptions {
        opened: Some(opened),
        ..AppOptions::default()
    };
    let mut continued = Driver::with(backend, options).await;
    let shown = gauge(&continued);
    assert_eq!(shown.window, WINDOW);
    assert!(
        shown.used_tokens > long_answer().len() as u64 / 8,
        "{shown:?}"
    );
    shows(&mut continued, shown);
    assert_eq!(usage(&continued), spent);
    next_request_agrees(&mut continued, shown).await;
}
