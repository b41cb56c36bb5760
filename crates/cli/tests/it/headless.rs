//! `gyre run` / `gyre -p` and the three output formats.

use gyre_mock::{Item, MockServer, Script};
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn version_prints_name_and_version() {
    let env = Env::new();
    let out = output(env.gyre(&["--version"])).await;
    assert!(out.status.success());
    assert_eq!(
        stdout(&out),
        format!("gyre {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[tokio::test]
async fn stream_json_three_step_task_anthropic() {
    let server = MockServer::start(three_step_script()).await.unwrap();
    let env = Env::new();
    write(&env.path("notes.txt"), "milk\n");
    let out = output(env.gyre_on(
        &server,
        &[
            "run",
            "do it",
            "--output-format",
            "stream-json",
            "--permission-mode",
            "bypassPermissions",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    check_three_step_stream(&json_lines(&out));
    assert_eq!(
        std::fs::read_to_string(env.path("out.txt")).unwrap(),
        "built\n"
    );
    assert!(
        stderr(&out).is_empty(),
        "nothing on stderr on success: {}",
        stderr(&out)
    );
}

#[tokio::test]
async fn stream_json_three_step_task_openai() {
    let server = MockServer::start(three_step_script()).await.unwrap();
    let env = Env::new();
    write(&env.path("notes.txt"), "milk\n");
    let mut cmd = env.gyre(&[
        "-p",
        "do it",
        "--provider",
        "openai",
        "--output-format",
        "stream-json",
        "--permission-mode",
        "bypassPermissions",
    ]);
    cmd.env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", server.openai_base_url());
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    check_three_step_stream(&json_lines(&out));
    assert_eq!(server.requests()[0].path, "/v1/chat/completions");
}

fn check_three_step_stream(lines: &[serde_json::Value]) {
    let init = &lines[0];
    assert_eq!(
        (init["type"].as_str(), init["subtype"].as_str()),
        (Some("system"), Some("init"))
    );
    let session_id = init["session_id"].as_str().unwrap();
    assert!(
        init["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "bash")
    );
    assert!(init["cwd"].as_str().unwrap().starts_with('/'));

    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "system",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
            "result"
        ]
    );
    assert!(lines.iter().all(|l| l["session_id"] == session_id));

    let tool_use = &lines[1]["message"]["content"][1];
    assert_eq!(tool_use["type"], "tool_use");
    assert_eq!(tool_use["input"], json!({"file_path": "notes.txt"}));
    let result = &lines[2]["message"]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], tool_use["id"]);
    assert_eq!(result["is_error"], false);
    assert!(result["content"].as_str().unwrap().contains("milk"));

    let last = lines.last().unwrap();
    assert_eq!(last["subtype"], "success");
    assert_eq!(last["is_error"], false);
    assert_eq!(last["num_turns"], 3);
    assert_eq!(last["result"], "All done.");
    for key in [
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ] {
        assert!(last["usage"][key].is_u64(), "usage.{key}");
    }
    assert!(last["usage"]["input_tokens"].as_u64().unwrap() > 0);
    assert!(last["duration_ms"].is_u64() && last["total_cost_usd"].is_number());
}

#[tokio::test]
async fn json_prints_only_the_result_and_text_only_the_final_text() {
    let script = Script::linear(vec![vec![Item::Text("Hello there.".into())]]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();

    let out = output(env.gyre_on(&server, &["run", "hi", "--output-format", "json"])).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["type"], "result");
    assert_eq!(lines[0]["result"], "Hello there.");
    assert_eq!(lines[0]["num_turns"], 1);

    let out = output(env.gyre_on(&server, &["-p", "hi"])).await;
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "Hello there.\n");
}

#[tokio::test]
async fn partial_messages_stream_deltas_and_logs_stay_off_stdout() {
    let script = Script::linear(vec![vec![Item::Text(
        "A longer answer, in several deltas.".into(),
    )]]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let mut cmd = env.gyre_on(
        &server,
        &[
            "run",
            "hi",
            "--output-format",
            "stream-json",
            "--include-partial-messages",
        ],
    );
    cmd.env("GYRE_LOG", "debug");
    let out = output(cmd).await;
    let lines = json_lines(&out);
    let deltas: String = lines
        .iter()
        .filter(|l| l["type"] == "stream_event" && l["event"]["delta"]["type"] == "text_delta")
        .map(|l| l["event"]["delta"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(deltas, "A longer answer, in several deltas.");
    let log = std::fs::read_to_string(env.home.path().join("logs/gyre.log")).unwrap();
    assert!(!log.is_empty(), "debug logs go to the log file");
}

#[tokio::test]
async fn prompt_from_stdin_with_a_dash() {
    let script = Script::linear(vec![vec![Item::Text("ok".into())]]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let mut cmd = env.gyre_on(&server, &["-p", "-"]);
    cmd.stdin(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use tokio::io::AsyncWriteExt;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"the prompt from a pipe").await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let body = server.requests()[0].body.to_string();
    assert!(body.contains("the prompt from a pipe"));
}

#[tokio::test]
async fn max_turns_exits_3_with_error_max_turns() {
    let script = Script::linear(vec![
        vec![call("ls", json!({}))],
        vec![call("ls", json!({}))],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let out = output(env.gyre_on(
        &server,
        &["run", "list", "--max-turns", "2", "--output-format", "json"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let result = &json_lines(&out)[0];
    assert_eq!(result["subtype"], "error_max_turns");
    assert_eq!(result["num_turns"], 2);
    assert!(stderr(&out).contains("--max-turns"));
}

#[tokio::test]
async fn headless_default_mode_denies_commands_and_says_how_to_allow_them() {
    let script = Script::linear(vec![
        vec![call("bash", json!({"command": "touch made.txt"}))],
        vec![Item::Text("I was not allowed.".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let out =
        output(env.gyre_on(&server, &["run", "touch", "--output-format", "stream-json"])).await;
    assert_eq!(out.status.code(), Some(0));
    let lines = json_lines(&out);
    let result = &lines[2]["message"]["content"][0];
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("--allowed-tools 'bash(touch:*)'")
    );
    assert!(!env.path("made.txt").exists());

    // Allowed by a rule, the same call runs.
    let out = output(env.gyre_on(
        &server,
        &[
            "run",
            "touch",
            "--allowed-tools",
            "bash(touch:*)",
            "--output-format",
            "json",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0));
    assert!(env.path("made.txt").exists());
}

#[tokio::test]
async fn disallowed_tools_are_not_offered() {
    let script = Script::linear(vec![vec![Item::Text("ok".into())]]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let out = output(env.gyre_on(
        &server,
        &[
            "run",
            "hi",
            "--disallowed-tools",
            "bash,write",
            "--output-format",
            "stream-json",
        ],
    ))
    .await;
    let tools = json_lines(&out)[0]["tools"].clone();
    assert!(
        !tools
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "bash" || t == "write")
    );
    let sent: Vec<String> = server.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(sent.contains(&"read".to_string()) && !sent.contains(&"bash".to_string()));
}
