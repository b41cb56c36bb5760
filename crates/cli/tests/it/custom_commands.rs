//! Custom slash commands and `gyre init` headless, asserted on the request
//! the model receives: a Claude Code `.claude/commands` file (copied as its
//! documentation writes one) and a gemini-cli TOML command expanded with
//! their arguments, files and command output; a refused inclusion; a
//! command's model; `gyre init` writing AGENTS.md.

use gyre_mock::{Item, MockServer, Script};
use serde_json::{Value, json};

use crate::common::*;

/// As Claude Code's documentation writes a command: `argument-hint` in
/// brackets (not YAML), `allowed-tools` granting the inclusion.
const FIX_ISSUE: &str = "---\nallowed-tools: Bash(echo:*)\nargument-hint: [issue] [priority]\n\
    description: Fix an issue\n---\n\nFix issue #$1 with priority $2.\n\
    Notes: @notes.md\nStatus: !`echo STATUS-$1`\n";

/// The text of the first request's last user message.
fn prompt_of(request: &Value) -> String {
    let last = request["messages"].as_array().unwrap().last().unwrap();
    match &last["content"] {
        Value::String(text) => text.clone(),
        blocks => blocks
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
    }
}

/// `gyre run PROMPT` in the default permission mode.
fn run_default(env: &Env, server: &MockServer, prompt: &str) -> tokio::process::Command {
    let mut cmd = env.gyre_on(server, &["run", prompt, "--output-format", "json"]);
    cmd.env("HOME", env.home.path());
    cmd
}

#[tokio::test]
async fn a_claude_code_command_is_expanded_with_its_arguments_files_and_output() {
    let server = MockServer::start(always("fixed")).await.unwrap();
    let env = Env::new();
    write(&env.path(".claude/commands/fix-issue.md"), FIX_ISSUE);
    write(&env.path("notes.md"), "NOTES-TEXT");
    let out = output(run_default(&env, &server, "/fix-issue 123 high")).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let requests = server.requests();
    let prompt = prompt_of(&requests[0].body);
    assert!(
        prompt.starts_with("Fix issue #123 with priority high."),
        "{prompt}"
    );
    assert!(prompt.contains("NOTES-TEXT"), "{prompt}");
    assert!(prompt.contains("Status: STATUS-123"), "{prompt}");
    assert!(!prompt.contains("$1") && !prompt.contains("!`"), "{prompt}");
}

#[tokio::test]
async fn a_gemini_toml_command_takes_args_and_an_unknown_name_is_a_prompt() {
    let server = MockServer::start(always("ok")).await.unwrap();
    let env = Env::new();
    write(
        &env.path(".gemini/commands/git/commit.toml"),
        "description = \"Write a commit message\"\nprompt = \"\"\"\nWrite a commit message for {{args}}.\n\"\"\"\n",
    );
    let out = output(run_default(&env, &server, "/git:commit the parser fix")).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let out = output(run_default(&env, &server, "/nothing here")).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let requests = server.requests();
    assert_eq!(
        prompt_of(&requests[0].body),
        "Write a commit message for the parser fix."
    );
    assert_eq!(prompt_of(&requests[1].body), "/nothing here");

    // stream-json's `init` lists them, as Claude Code lists its commands.
    let mut cmd = env.gyre_on(&server, &["run", "hi", "--output-format", "stream-json"]);
    cmd.env("HOME", env.home.path());
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let init = &json_lines(&out)[0];
    let names: Vec<&str> = init["slash_commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        names.contains(&"git:commit") && names.contains(&"init"),
        "{init}"
    );
}

#[tokio::test]
async fn an_inclusion_the_permissions_refuse_runs_nothing() {
    let server = MockServer::start(always("never")).await.unwrap();
    let env = Env::new();
    write(
        &env.path(".gyre/commands/touchy.md"),
        "Made: !`touch made-by-command`",
    );
    let out = output(run_default(&env, &server, "/touchy")).await;
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    assert!(stderr(&out).contains("was not run"), "{}", stderr(&out));
    assert!(!env.path("made-by-command").exists());
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_commands_model_runs_it() {
    let server = MockServer::start(always("ok")).await.unwrap();
    let env = Env::new();
    write(
        &env.path(".gyre/commands/quick.md"),
        "---\ndescription: Quick\nmodel: claude-haiku-4-5\n---\nBe quick about $ARGUMENTS.",
    );
    let out = output(run_default(&env, &server, "/quick it")).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests[0].body["model"], "claude-haiku-4-5");
    assert_eq!(prompt_of(&requests[0].body), "Be quick about it.");
}

#[tokio::test]
async fn gyre_init_asks_for_agents_md_and_the_edit_is_made() {
    let script = Script::linear(vec![
        vec![call(
            "write",
            json!({"file_path": "AGENTS.md", "content": "# AGENTS.md\n\nBuild: make\n"}),
        )],
        vec![Item::Text("Wrote AGENTS.md.".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    write(&env.path("Makefile"), "all:\n\ttrue\n");
    let mut cmd = env.gyre_on(
        &server,
        &[
            "init",
            "the tests",
            "--permission-mode",
            "acceptEdits",
            "--output-format",
            "json",
        ],
    );
    cmd.env("HOME", env.home.path());
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let prompt = prompt_of(&server.requests()[0].body);
    assert!(prompt.contains("AGENTS.md"), "{prompt}");
    assert!(prompt.contains("build, test"), "{prompt}");
    assert!(prompt.ends_with("ARGUMENTS: the tests"), "{prompt}");
    assert_eq!(
        std::fs::read_to_string(env.path("AGENTS.md")).unwrap(),
        "# AGENTS.md\n\nBuild: make\n"
    );
}
