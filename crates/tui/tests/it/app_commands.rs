//! The slash commands, against real sessions in a real store.

use crossterm::event::KeyCode;
use gyre_core::PermissionMode;
use gyre_protocol::Role;
use gyre_store::SessionStore;
use serde_json::json;

use crate::app_support::*;

async fn quiet() -> Driver {
    Driver::new(vec![otherwise(vec![text("ok")])], PermissionMode::Default).await
}

#[tokio::test]
async fn help_fits_80x24_and_any_key_closes_it() {
    let mut driver = quiet().await;
    driver.send("/help").await;
    assert!(driver.app.is_showing_help());
    insta::assert_snapshot!("app_help_80x24", driver.screen(80, 24));
    driver.press(KeyCode::Char('x')).await;
    assert!(!driver.app.is_showing_help());
    assert!(driver.app.editor().is_empty(), "the key only closed help");
}

#[tokio::test]
async fn an_unknown_command_is_a_notice_and_nothing_is_sent() {
    let mut driver = quiet().await;
    driver.send("/frobnicate now").await;
    let screen = driver.screen(80, 24);
    assert!(screen.contains("Unknown command /frobnicate"), "{screen}");
    assert!(driver.app.live().is_none());
}

#[tokio::test]
async fn model_agent_and_mode_switch_for_the_next_prompts() {
    let mut driver = quiet().await;
    driver.send("/model").await;
    assert!(driver.screen(100, 30).contains("Model: mock-model"));
    driver.send("/model no-such-model").await;
    assert!(
        driver
            .screen(100, 30)
            .contains("no model is called no-such-model")
    );
    assert_eq!(driver.app.transcript().status().model, "mock-model", "kept");
    driver.send("/model other-model").await;
    assert_eq!(driver.app.transcript().status().model, "other-model");
    // A name neither catalogued nor configured is taken, with a warning.
    let screen = driver.screen(100, 30);
    assert!(
        screen.contains("Model other-model for the next prompts, but it is neither"),
        "{screen}"
    );
    assert!(screen.contains("prices unknown"), "{screen}");
    // The argument completes from the backend's models.
    driver.type_text("/model mo").await;
    let labels = driver.completion_labels();
    assert_eq!(labels, ["mock-model"]);
    driver.press(KeyCode::Enter).await;
    assert_eq!(driver.app.transcript().status().model, "mock-model");
    assert!(
        driver
            .screen(100, 30)
            .contains("Model mock-model for the next prompts (prices unknown")
    );
    driver.send("/model other-model").await;

    driver.send("/agents").await;
    let screen = driver.screen(100, 30);
    assert!(screen.contains("› build"), "{screen}");
    assert!(screen.contains("plan  plans it"), "{screen}");
    driver.send("/agents plan").await;
    assert_eq!(driver.app.transcript().status().agent, "plan");

    driver.send("/permissions acceptEdits").await;
    assert_eq!(
        driver.app.transcript().status().permission_mode,
        "acceptEdits"
    );
    driver.send("/permissions sometimes").await;
    assert_eq!(
        driver.app.transcript().status().permission_mode,
        "acceptEdits"
    );
    driver.send("/permissions").await;
    let screen = driver.screen(100, 30);
    assert!(screen.contains("Permission mode: acceptEdits"), "{screen}");
    assert!(
        screen.contains("Modes: default, acceptEdits, plan"),
        "{screen}"
    );

    driver.send("hello").await;
    driver.until_idle().await;
    let requests = driver.backend().server.requests();
    assert_eq!(
        requests.last().unwrap().body["model"],
        "other-model",
        "the next prompt used it"
    );
    assert_eq!(driver.app.transcript().status().model, "other-model");
}

#[tokio::test]
async fn effort_is_set_for_the_next_prompts_and_shown_in_the_status_line() {
    let mut driver = quiet().await;
    driver.send("/effort").await;
    let screen = driver.screen(100, 30);
    assert!(
        screen.contains("Reasoning effort: the provider's default"),
        "{screen}"
    );
    driver.send("/effort extreme").await;
    assert!(driver.screen(100, 30).contains("unknown effort `extreme`"));
    assert_eq!(driver.app.transcript().status().effort, "");
    driver.send("/effort high").await;
    assert_eq!(driver.app.transcript().status().effort, "high");
    let screen = driver.screen(100, 30);
    assert!(screen.contains("effort high"), "the status line: {screen}");
    driver.send("hello").await;
    driver.until_idle().await;
    let requests = driver.backend().server.requests();
    assert_eq!(
        requests.last().unwrap().body["thinking"],
        json!({"type": "enabled", "budget_tokens": 4096}),
        "the next prompt thinks (high, under the output limit of 8192)"
    );
    driver.send("/effort default").await;
    assert_eq!(driver.app.transcript().status().effort, "");
}

#[tokio::test]
async fn an_image_mention_and_a_pasted_image_path_go_with_the_prompt() {
    let mut driver = quiet().await;
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-tui-image";
    std::fs::write(driver.backend().path("shot.png"), png).unwrap();
    let pasted = driver.backend().path("pasted.png");
    std::fs::write(&pasted, png).unwrap();
    driver
        .send(&format!("what is on @shot.png and {}?", pasted.display()))
        .await;
    driver.until_idle().await;
    let requests = driver.backend().server.requests();
    let content = &requests.last().unwrap().body["messages"][0]["content"];
    let images: Vec<&serde_json::Value> = content
        .as_array()
        .unwrap()
        .iter()
        .filter(|block| block["type"] == "image")
        .collect();
    assert_eq!(images.len(), 2, "{content}");
    assert_eq!(images[0]["source"]["media_type"], "image/png");
    assert!(content[0]["text"].as_str().unwrap().contains("@shot.png"));
}

#[tokio::test]
async fn clear_starts_a_new_session_and_resume_opens_a_stored_one() {
    let mut driver = quiet().await;
    driver.send("first prompt").await;
    driver.until_idle().await;
    let first = driver.app.live().unwrap().id().to_string();

    driver.send("/clear").await;
    assert!(driver.app.live().is_none());
    assert!(
        driver
            .screen(80, 24)
            .contains("Type a prompt and press Enter")
    );
    driver.send("second prompt").await;
    driver.until_idle().await;
    let second = driver.app.live().unwrap().id().to_string();
    assert_ne!(first, second);

    // Ids as people read them: a UUIDv7's first 13 characters (its
    // creation time to the millisecond), the same in every place.
    let (short_first, short_second) = (&first[..13], &second[..13]);
    assert_ne!(short_first, short_second);
    driver.send("/sessions").await;
    let screen = driver.screen(100, 30);
    assert!(
        screen.contains(&format!("{short_first}  ")) && screen.contains(short_second),
        "{screen}"
    );
    assert!(!screen.contains(&first), "{screen}");

    driver.send("/resume").await;
    assert!(driver.app.is_picking_session());
    let screen = driver.screen(100, 30);
    assert!(screen.contains("Resume a session"), "{screen}");
    assert!(screen.contains("first prompt"), "{screen}");
    assert!(screen.contains("1 of 1"), "not the current one: {screen}");
    assert!(screen.contains(&format!("› {short_first}  ")), "{screen}");
    driver.type_text("fir").await;
    driver.press(KeyCode::Enter).await;
    assert_eq!(driver.app.live().unwrap().id(), first);
    let screen = driver.screen(100, 30);
    assert!(screen.contains("› first prompt"), "its history: {screen}");
    assert!(
        screen.contains(&format!("Resumed session {short_first}.")),
        "{screen}"
    );

    // The resumed session goes on where it was.
    driver.send("third prompt").await;
    driver.until_idle().await;
    let stored = driver.backend().store.load_messages(&first).await.unwrap();
    let prompts: Vec<String> = stored
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.text())
        .collect();
    assert_eq!(prompts, ["first prompt", "third prompt"]);

    // Quitting names the session in the same short form, and that form
    // finds it again (as `--resume` does).
    driver.send("/quit").await;
    driver.app.shutdown().await;
    let line = driver.app.exit_line().unwrap();
    assert_eq!(
        line,
        format!("To go on with this session: gyre --resume {short_first}")
    );
    let printed = line.rsplit(' ').next().unwrap();
    let store = driver.backend().store.clone();
    let location = gyre_store::Location::sqlite(driver.backend().home.path().join("sessions.db"));
    let found = gyre_host::session_choice::resolve_id(store.as_ref(), &location, printed)
        .await
        .unwrap();
    assert_eq!(found, first);
}

#[tokio::test]
async fn no_exit_line_without_a_session_with_messages() {
    let mut driver = quiet().await;
    driver.send("/quit").await;
    driver.app.shutdown().await;
    assert_eq!(driver.app.exit_line(), None);
}

#[tokio::test]
async fn rewind_puts_files_and_conversation_back_to_before_a_prompt() {
    let mut driver = Driver::new(
        vec![
            on(
                "make a",
                Some(1),
                vec![call("write", json!({"file_path": "a.txt", "content": "a"}))],
            ),
            on(
                "make b",
                Some(1),
                vec![call("write", json!({"file_path": "b.txt", "content": "b"}))],
            ),
            otherwise(vec![text("Made.")]),
        ],
        PermissionMode::BypassPermissions,
    )
    .await;
    driver.send("/rewind").await;
    assert!(
        driver
            .screen(80, 24)
            .contains("No prompt to rewind to yet.")
    );
    for prompt in ["make a", "make b"] {
        driver.send(prompt).await;
        driver.until_idle().await;
    }
    assert!(driver.backend().path("b.txt").exists());
    driver.send("/rewind").await;
    assert!(driver.app.is_picking_rewind());
    let screen = driver.screen(100, 30);
    assert!(screen.contains("Rewind to before a prompt"), "{screen}");
    assert!(screen.contains("› #2  make b"), "newest first: {screen}");
    assert!(screen.contains("#1  make a"), "{screen}");
    driver.press(KeyCode::Enter).await;
    assert!(!driver.app.is_picking_rewind());

    assert!(
        !driver.backend().path("b.txt").exists(),
        "its change is undone"
    );
    assert!(
        driver.backend().path("a.txt").exists(),
        "the one before stays"
    );
    assert_eq!(driver.app.editor().text(), "make b", "the prompt is back");
    let id = driver.app.live().unwrap().id().to_string();
    let stored = driver.backend().store.load_messages(&id).await.unwrap();
    assert!(stored.iter().all(|m| m.text() != "make b"), "{stored:?}");
    let screen = driver.screen(100, 30);
    assert!(screen.contains("› make a"), "{screen}");
    assert!(!screen.contains("› make b"), "{screen}");
    assert!(screen.contains("messages removed"), "{screen}");
}

#[tokio::test]
async fn compact_summarises_the_conversation_on_request() {
    let mut driver = quiet().await;
    driver.send("/compact").await;
    assert!(driver.screen(80, 24).contains("Nothing to compact yet."));
    for prompt in ["one", "two"] {
        driver.send(prompt).await;
        driver.until_idle().await;
    }
    driver.send("/compact keep the names").await;
    driver.until_idle().await;
    let screen = driver.screen(100, 30);
    assert!(
        screen.contains("Conversation compacted (manual)"),
        "{screen}"
    );
    let requests = driver.backend().server.requests();
    let last = requests.last().unwrap().body.to_string();
    assert!(last.contains("keep the names"), "the focus was asked for");
}

#[tokio::test]
async fn cost_todos_mcp_and_quit() {
    let mut driver = quiet().await;
    driver.send("hello").await;
    driver.until_idle().await;
    driver.send("/cost").await;
    let screen = driver.screen(100, 30);
    assert!(screen.contains("Tokens this session:"), "{screen}");
    assert!(screen.contains(" uncached), "), "{screen}");
    assert!(
        screen.contains("Cache: 0.0 % of the input served from it"),
        "{screen}"
    );
    assert!(
        screen.contains("Cost: unknown (no prices for mock-model)"),
        "{screen}"
    );
    driver.send("/todos").await;
    assert!(!driver.app.shows_todos());
    driver.send("/mcp").await;
    assert!(driver.screen(100, 30).contains("No MCP servers"));
    driver.send("/quit").await;
    assert!(driver.app.should_quit());
}
