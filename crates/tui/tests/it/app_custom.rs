//! Custom commands and `/init` in the app: completed with the built-in
//! commands, expanded (arguments, files) into the prompt the model
//! receives, and `/init`'s AGENTS.md write shown for approval.

use gyre_core::PermissionMode;
use serde_json::json;

use crate::app_support::*;

#[tokio::test]
async fn a_custom_command_completes_and_expands_into_the_prompt() {
    let mut driver = Driver::new(vec![otherwise(vec![text("ok")])], PermissionMode::Default).await;
    let commands = driver.backend().path(".claude/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("explain.md"),
        "---\ndescription: Explain a file\nargument-hint: [file]\n---\nExplain @$1 to $2.",
    )
    .unwrap();
    std::fs::write(driver.backend().path("lib.rs"), "fn LIB_BODY() {}").unwrap();

    driver.type_text("/ex").await;
    let labels = driver.completion_labels();
    assert!(labels.contains(&"/explain".to_string()), "{labels:?}");
    for _ in 0..3 {
        driver.press(crossterm::event::KeyCode::Backspace).await;
    }
    // The built-in `/init` completes with the rest.
    driver.type_text("/in").await;
    let labels = driver.completion_labels();
    assert_eq!(labels, ["/init"]);
    for _ in 0..3 {
        driver.press(crossterm::event::KeyCode::Backspace).await;
    }

    driver.send("/explain lib.rs newcomers").await;
    driver.until_idle().await;
    let requests = driver.backend().server.requests();
    assert_eq!(requests.len(), 1);
    let sent = requests[0].body["messages"].to_string();
    assert!(
        sent.contains("Explain <file path=\\\"lib.rs\\\">"),
        "{sent}"
    );
    assert!(sent.contains("LIB_BODY"), "{sent}");
    assert!(sent.contains("to newcomers."), "{sent}");
}

#[tokio::test]
async fn init_asks_for_agents_md_and_its_write_waits_for_approval() {
    let mut driver = Driver::new(
        vec![
            on(
                "AGENTS.md",
                Some(1),
                vec![call(
                    "write",
                    json!({"file_path": "AGENTS.md", "content": "# AGENTS.md\n"}),
                )],
            ),
            otherwise(vec![text("Wrote it.")]),
        ],
        PermissionMode::Default,
    )
    .await;
    driver.send("/init").await;
    driver
        .until("the write's permission request", |app| {
            app.permission().is_some()
        })
        .await;
    let screen = driver.screen(100, 30);
    assert!(screen.contains("write AGENTS.md"), "{screen}");
    let prompt = driver.backend().server.requests()[0].body["messages"].to_string();
    assert!(prompt.contains("build, test"), "{prompt}");
    assert!(
        !driver.backend().path("AGENTS.md").exists(),
        "not yet approved"
    );
}
