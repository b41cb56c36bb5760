//! The daily keys: readline editing, Shift+Tab through the permission
//! modes, Ctrl-O's full output of a tool call; and the inline screen's
//! history (finished cells handed out once, in order).

use crossterm::event::{KeyCode, KeyModifiers};
use gyre_core::PermissionMode;
use gyre_tui::app::AppOptions;
use serde_json::json;

use crate::app_support::*;

#[tokio::test]
async fn readline_keys_edit_the_line() {
    let mut driver = Driver::new(vec![otherwise(vec![text("ok")])], PermissionMode::Default).await;
    driver.type_text("one two three").await;
    driver.ctrl('w').await;
    assert_eq!(driver.app.editor().text(), "one two ");
    driver.ctrl('a').await;
    driver.key(KeyCode::Char('f'), KeyModifiers::ALT).await;
    driver.ctrl('k').await;
    assert_eq!(
        driver.app.editor().text(),
        "one ",
        "Alt-F: to the next word"
    );
    driver.ctrl('e').await;
    driver.type_text("four").await;
    driver.key(KeyCode::Char('b'), KeyModifiers::ALT).await;
    driver.type_text("x").await;
    assert_eq!(driver.app.editor().text(), "one xfour");
    driver.ctrl('u').await;
    assert_eq!(
        driver.app.editor().text(),
        "four",
        "Ctrl-U deletes to the start"
    );
    driver.ctrl('e').await;
    driver.ctrl('u').await;
    assert_eq!(driver.app.editor().text(), "");
}

#[tokio::test]
async fn shift_tab_cycles_the_permission_mode_shown_in_the_status_line() {
    let mut driver = Driver::new(vec![otherwise(vec![text("ok")])], PermissionMode::Default).await;
    let status = |driver: &mut Driver| {
        let screen = driver.screen(100, 10);
        screen.lines().last().unwrap_or_default().to_string()
    };
    assert!(status(&mut driver).contains("default"));
    for mode in ["acceptEdits", "plan", "default", "acceptEdits"] {
        driver.press(KeyCode::BackTab).await;
        let line = status(&mut driver);
        assert!(line.contains(mode), "{mode}: {line}");
        assert_eq!(driver.app.transcript().status().permission_mode, mode);
    }
}

#[tokio::test]
async fn ctrl_o_shows_the_whole_output_of_the_last_tool_call() {
    let steps = vec![
        on(
            "print rows",
            Some(1),
            vec![call("bash", json!({"command": "seq -f 'row %03g' 1 400"}))],
        ),
        otherwise(vec![text("Printed.")]),
    ];
    let backend = CoreBackend::new(
        gyre_mock::Script::new(steps),
        PermissionMode::BypassPermissions,
    )
    .await;
    let mut driver = Driver::with(backend, AppOptions::default()).await;
    driver.ctrl('o').await;
    assert!(driver.app.output_view().is_none(), "nothing to show yet");
    driver.send("print rows").await;
    driver.until_idle().await;
    let screen = driver.screen(80, 24);
    assert!(
        !screen.contains("row 001"),
        "collapsed in the cell: {screen}"
    );

    driver.ctrl('o').await;
    let view = driver.app.output_view().expect("the output view");
    assert_eq!(view.lines(), 400);
    let screen = driver.screen(80, 24);
    assert!(screen.contains("bash seq"), "{screen}");
    assert!(
        screen.contains("row 001") && screen.contains("row 022"),
        "{screen}"
    );
    driver.press(KeyCode::End).await;
    let screen = driver.screen(80, 24);
    assert!(
        screen.contains("row 400") && screen.contains("row 379"),
        "{screen}"
    );
    assert!(screen.contains("of 400"), "{screen}");
    driver.press(KeyCode::PageUp).await;
    assert!(driver.screen(80, 24).contains("row 357"));
    driver.press(KeyCode::Home).await;
    assert!(driver.screen(80, 24).contains("row 001"));
    driver.press(KeyCode::Esc).await;
    assert!(driver.app.output_view().is_none());
    assert!(driver.screen(80, 24).contains("Printed."));
}

#[tokio::test]
async fn inline_the_finished_cells_are_handed_out_once_in_order() {
    let steps = vec![otherwise(vec![text("The answer.")])];
    let backend = CoreBackend::new(gyre_mock::Script::new(steps), PermissionMode::Default).await;
    let options = AppOptions {
        inline: true,
        ..AppOptions::default()
    };
    let mut driver = Driver::with(backend, options).await;
    assert!(driver.app.take_history(80).is_empty());
    driver.send("first question").await;
    driver.until_idle().await;
    driver.send("second question").await;
    driver.until_idle().await;
    let history: Vec<String> = driver
        .app
        .take_history(80)
        .iter()
        .map(|line| line.to_string())
        .collect();
    let text = history.join("\n");
    assert!(text.contains("› first question"), "{text}");
    assert!(text.contains("› second question"), "{text}");
    let first = text.find("first question").unwrap();
    assert!(text[first..].contains("The answer."), "{text}");
    assert!(driver.app.take_history(80).is_empty(), "once");
    // The last cell stays live (on screen, not in the history) until the
    // app ends.
    let screen = driver.screen(80, 12);
    assert!(!screen.contains("first question"), "{screen}");
    assert!(screen.contains("The answer."), "{screen}");
    let rest: Vec<String> = driver
        .app
        .take_all_history(80)
        .iter()
        .map(|line| line.to_string())
        .collect();
    assert!(rest.join("\n").contains("The answer."), "{rest:?}");
    assert!(driver.app.inline_height(80, 40) <= 8);
}

#[tokio::test]
async fn at_60_columns_the_status_line_keeps_the_mode_and_marks_what_it_left_out() {
    let steps = vec![otherwise(vec![text("ok")])];
    let mut driver = Driver::new(steps, PermissionMode::AcceptEdits).await;
    driver.send("hello").await;
    driver.until_idle().await;
    let wide = driver.screen(120, 12);
    let wide = wide.lines().last().unwrap().to_string();
    assert!(!wide.contains('…'), "{wide}");
    let screen = driver.screen(60, 12);
    let line = screen.lines().last().unwrap().trim_end().to_string();
    assert!(line.ends_with("acceptEdits"), "{line}");
    let screen = driver.screen(44, 12);
    let line = screen.lines().last().unwrap().trim_end().to_string();
    assert!(line.ends_with("acceptEdits"), "{line}");
    assert!(line.contains('…'), "{line}");
    assert!(line.contains("● ready"), "{line}");
    let narrow = driver.screen(30, 12);
    let line = narrow.lines().last().unwrap().trim_end().to_string();
    assert!(
        line.contains("● ready") && line.ends_with("acceptEdits"),
        "{line}"
    );
}

#[test]
fn a_tool_duration_counts_from_its_arguments_complete_not_from_their_streaming() {
    use crate::support::{at, ready, result, screen_text, started};
    use gyre_tui::transcript::Transcript;
    let mut t = Transcript::new();
    // The model takes 2.9 s to stream the arguments; the call then runs
    // for 40 ms.
    t.apply(&started("t1", "todo_write"), at(0));
    let args = json!({"todos": [{"content": "a", "status": "pending"}]});
    t.apply(&ready("t1", "todo_write", args), at(2900));
    t.apply(
        &result(
            "t1",
            "todo_write",
            "todo_write 1 item",
            "ok",
            gyre_protocol::Outcome::Success,
        ),
        at(2940),
    );
    let screen = screen_text(&t, 70, 6, at(5000));
    assert!(screen.contains("40ms"), "{screen}");
    assert!(!screen.contains("2.9s"), "{screen}");
}
