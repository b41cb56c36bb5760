//! Claude Code's command line (`claude -p …`, and what the Agent SDKs
//! build) run against gyre: each flag is accepted and does what it does
//! there, proved by the requests the mock model saw, the files the tools
//! touched and the sessions the store holds.

use gyre_mock::{Item, MockServer, Script};
use serde_json::{Value, json};

use crate::common::*;

/// The tool names a recorded request offered.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The one JSON result object of a `--output-format json` run.
fn result_of(out: &std::process::Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
    serde_json::from_str(stdout(out).trim()).unwrap()
}

#[tokio::test]
async fn the_sdk_s_prompt_and_tool_flags_shape_the_request() {
    let outside = tempfile::tempdir().unwrap();
    write(&outside.path().join("notes.txt"), "OUTSIDE-NOTES\n");
    let notes = outside.path().join("notes.txt");
    let script = Script::linear(vec![
        vec![call("read", json!({"file_path": notes.to_str().unwrap()}))],
        vec![Item::Text("Read it.".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    env.write_user_config("append_system_prompt = \"USER-CONFIG-LAYER\"\n");
    write(&env.path("extra.md"), "APPENDED-FROM-FILE");
    let out = output(env.gyre_on(
        &server,
        &[
            "-p",
            "--output-format",
            "json",
            "--verbose",
            "--system-prompt",
            "You are a test double.",
            "--append-system-prompt-file",
            "extra.md",
            "--model",
            "claude-sonnet-4-5",
            "--tools",
            "Read,Bash,Edit,WebFetch,TodoWrite",
            "--disallowedTools",
            "WebFetch",
            "TodoWrite",
            "--settings",
            r#"{"permissions": {"deny": ["Edit"]}}"#,
            "--setting-sources=project",
            "--add-dir",
            outside.path().to_str().unwrap(),
            "--max-turns",
            "4",
            "read my notes",
        ],
    ))
    .await;
    let result = result_of(&out);
    assert_eq!(result["result"], "Read it.", "{result}");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let system = requests[0].body["system"].to_string();
    assert!(system.contains("You are a test double."), "{system}");
    assert!(
        !system.contains("You are gyre"),
        "the base is replaced: {system}"
    );
    assert!(system.contains("<environment>"), "{system}");
    assert!(system.contains("APPENDED-FROM-FILE"), "{system}");
    // `--setting-sources=project`: the user's config file is not read.
    assert!(!system.contains("USER-CONFIG-LAYER"), "{system}");
    // `--tools` picks the built-in tools; `--disallowedTools` in Claude
    // Code's names and `--settings`' deny rule take theirs away.
    let mut tools = offered(&requests[0].body);
    tools.sort();
    assert_eq!(tools, ["bash", "read"]);
    // `--add-dir`: the file outside the workspace was read.
    let fed_back = requests[1].body["messages"].to_string();
    assert!(fed_back.contains("OUTSIDE-NOTES"), "{fed_back}");
}

#[tokio::test]
async fn claude_code_rules_allow_exactly_what_they_name() {
    let script = Script::linear(vec![
        vec![call("bash", json!({"command": "touch allowed.txt"}))],
        vec![call("bash", json!({"command": "mkdir refused"}))],
        vec![Item::Text("Done.".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let out = output(env.gyre_on(
        &server,
        &[
            "-p",
            "make the files",
            "--output-format",
            "json",
            "--allowedTools",
            "Bash(touch:*)",
            "--disallowed-tools",
            "NotebookEdit",
            "--fallback-model",
            "claude-haiku-4-5",
        ],
    ))
    .await;
    result_of(&out);
    assert!(env.path("allowed.txt").exists());
    assert!(!env.path("refused").exists());
    let err = stderr(&out);
    // A rule naming no tool of the run, and a flag without its feature,
    // are said on stderr.
    assert!(
        err.contains("the deny rule `NotebookEdit` names no tool of this run"),
        "{err}"
    );
    assert!(err.contains("--fallback-model is accepted"), "{err}");

    // `--dangerously-skip-permissions`: the same command runs.
    server.set_script(Script::linear(vec![
        vec![call("bash", json!({"command": "mkdir refused"}))],
        vec![Item::Text("Done.".into())],
    ]));
    let out = output(env.gyre_on(
        &server,
        &[
            "-p",
            "--dangerously-skip-permissions",
            "--output-format=json",
            "make the directory",
        ],
    ))
    .await;
    result_of(&out);
    assert!(env.path("refused").is_dir());
}

#[tokio::test]
async fn session_flags_pick_name_and_copy_sessions() {
    let server = MockServer::start(always("noted")).await.unwrap();
    let env = Env::new();
    let id = "0b6c9c1e-1f2a-4d3b-9c4d-5e6f7a8b9c0d";
    let first = result_of(
        &output(env.gyre_on(
            &server,
            &[
                "-p",
                "remember FIRST-PROMPT",
                "--output-format",
                "json",
                "--session-id",
                id,
            ],
        ))
        .await,
    );
    assert_eq!(first["session_id"], id);

    // `--resume=ID` (the SDKs' spelling) goes on in it.
    let resume = format!("--resume={id}");
    let again = result_of(
        &output(env.gyre_on(
            &server,
            &["-p", "--output-format", "json", &resume, "and SECOND"],
        ))
        .await,
    );
    assert_eq!(again["session_id"], id);
    let requests = server.requests();
    assert!(
        requests[1].body["messages"]
            .to_string()
            .contains("FIRST-PROMPT"),
        "the resumed history is sent"
    );

    // `-c --fork-session`: a copy of the newest session, with its history.
    let fork = result_of(
        &output(env.gyre_on(
            &server,
            &[
                "-p",
                "-c",
                "--fork-session",
                "--output-format",
                "json",
                "third",
            ],
        ))
        .await,
    );
    assert_ne!(fork["session_id"], id);
    assert!(
        server.requests()[2].body["messages"]
            .to_string()
            .contains("SECOND"),
    );

    // `-r ID` too; a session id that is not a UUID is bad usage.
    let out = output(env.gyre_on(&server, &["-p", "-r", id, "fourth"])).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = output(env.gyre_on(&server, &["-p", "x", "--session-id", "nope"])).await;
    assert_usage_error(&out, "--session-id `nope` is not a UUID");
}

#[tokio::test]
async fn the_prompt_may_come_last_or_on_stdin_and_unknown_values_are_usage_errors() {
    let server = MockServer::start(always("fine")).await.unwrap();
    let env = Env::new();
    // Claude Code's order: `-p`, flags, then the prompt.
    let out = output(env.gyre_on(
        &server,
        &["-p", "--output-format", "text", "--verbose", "say fine"],
    ))
    .await;
    assert_eq!(stdout(&out).trim(), "fine", "{}", stderr(&out));
    let system = server.requests()[0].body["messages"].to_string();
    assert!(system.contains("say fine"), "{system}");

    // `-p` alone reads the prompt from stdin.
    let mut cmd = env.gyre_on(&server, &["-p", "--output-format", "text"]);
    cmd.stdin(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"FROM-STDIN").await.unwrap();
    }
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stdout(&out).trim(), "fine", "{}", stderr(&out));
    assert!(
        server.requests()[1].body["messages"]
            .to_string()
            .contains("FROM-STDIN")
    );

    for (args, needle) in [
        (
            vec!["-p", "x", "--setting-sources", "user,cloud"],
            "unknown source `cloud`",
        ),
        (vec!["-p", "x", "--settings", "{oops"], "--settings (JSON)"),
        (
            vec!["-p", "x", "--mcp-config", "/no/such/mcp.json"],
            "--mcp-config /no/such/mcp.json",
        ),
    ] {
        let out = output(env.gyre_on(&server, &args)).await;
        assert_usage_error(&out, needle);
    }
}

/// A model that edits a file and runs a command, then claims success.
fn edit_and_command() -> Script {
    Script::linear(vec![
        vec![
            call(
                "write",
                json!({"file_path": "new.txt", "content": "made\n"}),
            ),
            call("bash", json!({"command": "mkdir build"})),
        ],
        vec![Item::Text("All done!".into())],
    ])
}

#[tokio::test]
async fn refused_calls_are_listed_in_the_result_and_on_stderr() {
    let server = MockServer::start(edit_and_command()).await.unwrap();
    let env = Env::new();
    let out = output(env.gyre_on(&server, &["-p", "build it", "--output-format", "json"])).await;
    let result = result_of(&out);
    let denials = result["permission_denials"].as_array().unwrap().clone();
    assert_eq!(denials.len(), 2, "{result}");
    assert_eq!(denials[0]["tool_name"], "write");
    assert_eq!(denials[0]["tool_input"]["file_path"], "new.txt");
    assert_eq!(denials[1]["tool_name"], "bash");
    assert_eq!(denials[1]["tool_input"]["command"], "mkdir build");
    assert!(
        denials[1]["tool_use_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
    assert!(!env.path("new.txt").exists());

    // Text mode: the model's claim on stdout, one line per refusal on
    // stderr naming the target and what would allow it; exit 0.
    server.set_script(edit_and_command());
    let out = output(env.gyre_on(&server, &["-p", "build it"])).await;
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out).trim(), "All done!");
    let err = stderr(&out);
    let refused: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("gyre: refused"))
        .collect();
    assert_eq!(refused.len(), 2, "{err}");
    assert!(
        refused[0].starts_with("gyre: refused write `new.txt`"),
        "{err}"
    );
    assert!(refused[0].contains("acceptEdits"), "{err}");
    assert!(
        refused[1].starts_with("gyre: refused bash `mkdir build`"),
        "{err}"
    );
    assert!(refused[1].contains("--allowed-tools"), "{err}");

    // In acceptEdits mode the write runs; the command's hint names a mode
    // that really runs it, not acceptEdits.
    server.set_script(edit_and_command());
    let out = output(env.gyre_on(
        &server,
        &[
            "-p",
            "build it",
            "--permission-mode",
            "acceptEdits",
            "--output-format",
            "stream-json",
            "--verbose",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(env.path("new.txt").exists());
    let lines = json_lines(&out);
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(
        result["permission_denials"].as_array().unwrap().len(),
        1,
        "{result}"
    );
    let hint = result_text(&tool_results(&lines)[1]);
    assert!(
        hint.contains("--permission-mode bypassPermissions"),
        "{hint}"
    );
    assert!(!hint.contains("--permission-mode acceptEdits"), "{hint}");
}

#[tokio::test]
async fn system_init_carries_the_warnings_of_the_flags() {
    let server = MockServer::start(always("ok")).await.unwrap();
    let env = Env::new();
    let out = output(env.gyre_on(
        &server,
        &[
            "-p",
            "hi",
            "--output-format",
            "stream-json",
            "--verbose",
            "--disallowedTools",
            "NotebookEdit",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let init = &json_lines(&out)[0];
    assert_eq!(init["subtype"], "init");
    let warnings = init["gyre_warnings"].to_string();
    assert!(warnings.contains("`NotebookEdit` names no tool"), "{init}");
}
