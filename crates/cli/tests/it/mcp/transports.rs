//! Tools of the reference servers called through `gyre run` over stdio
//! (from `.mcp.json`), streamable HTTP (from `config.toml`), the
//! filesystem server's approvals, and both transports in one first turn.

use super::*;

#[tokio::test]
async fn a_stdio_server_from_mcp_json_answers_through_gyre() {
    let script = call_once_offered(
        "mcp__everything__echo",
        json!({"message": "hello from gyre"}),
        "Echo: hello from gyre",
    );
    let server = MockServer::start(script).await.unwrap();
    let env = env();
    // A slow start (1 s more): the run waits for it before its first
    // request.
    let slow = format!("sleep 1 && exec {} stdio", npm_bin("mcp-server-everything"));
    let config = json!({"mcpServers": {"everything": {"command": "sh", "args": ["-c", slow]}}});
    write(&env.path(".mcp.json"), &config.to_string());
    let out = output(run(&env, &server)).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);

    // Waited for, as Claude Code's `-p` does: in the init line and offered
    // from the first request, so the first turn calls it.
    let init = &lines[0];
    assert_eq!(init["subtype"], "init");
    let tools: Vec<&str> = init["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(tools.contains(&"mcp__everything__echo"), "{tools:?}");
    assert!(
        server.requests()[0]
            .body
            .to_string()
            .contains("\"name\":\"mcp__everything__echo\"")
    );
    let statuses = system_lines(&lines, "mcp_server_status");
    assert_eq!(statuses[0]["server"], "everything");
    assert!(
        statuses.iter().any(|s| s["status"] == "ready"
            && s["message"]
                .as_str()
                .unwrap()
                .starts_with("MCP server `everything` is ready with ")),
        "{statuses:?}"
    );
    // Nothing joined later.
    assert!(system_lines(&lines, "tools_changed").is_empty());

    // The result reached the model.
    let results = tool_results(&lines);
    let echo = results
        .iter()
        .find(|r| result_text(r) == "Echo: hello from gyre");
    assert!(echo.is_some(), "{results:?}");
    assert!(last_request_results(&server).contains("Echo: hello from gyre"));
    assert_eq!(lines.last().unwrap()["subtype"], "success");
}

#[tokio::test]
async fn a_streamable_http_server_from_config_toml_answers_through_gyre() {
    let everything = http_everything().await;
    let script = call_once_offered(
        "mcp__web__get-sum",
        json!({"a": 2, "b": 40}),
        "The sum of 2 and 40 is 42.",
    );
    let server = MockServer::start(script).await.unwrap();
    let env = env();
    env.write_user_config(&format!(
        "{BASE}[mcp_servers.web]\nurl = \"{}\"\nhttp_headers = {{ \"X-Gyre\" = \"1\" }}\n",
        everything.url
    ));
    let out = output(run(&env, &server)).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    // Ready before the run began: its tools are offered from the first
    // request.
    let status = &system_lines(&lines, "mcp_server_status")[0];
    assert_eq!(status["status"], "ready", "{status}");
    assert!(
        server.requests()[0]
            .body
            .to_string()
            .contains("\"name\":\"mcp__web__get-sum\"")
    );
    let results = tool_results(&lines);
    assert!(
        results
            .iter()
            .any(|r| result_text(r) == "The sum of 2 and 40 is 42."),
        "{results:?}"
    );
    assert!(last_request_results(&server).contains("The sum of 2 and 40 is 42."));
}

#[tokio::test]
async fn a_filesystem_server_reads_and_its_writes_need_approval() {
    let env = env();
    write(&env.path("notes.txt"), "a note from the workspace\n");
    let root = env.workspace.path().canonicalize().unwrap();
    let notes = root.join("notes.txt").display().to_string();
    let script = Script::new(vec![
        step(after("needs approval"), vec![Item::Text("done".into())]),
        step(
            after("a note from the workspace"),
            vec![call(
                "mcp__fs__write_file",
                json!({"path": notes, "content": "overwritten"}),
            )],
        ),
        step(
            offered("mcp__fs__read_text_file"),
            vec![call("mcp__fs__read_text_file", json!({"path": notes}))],
        ),
        wait(),
    ]);
    let server = MockServer::start(script).await.unwrap();
    // `${VAR}` in args, expanded from gyre's environment as Claude Code does.
    let config = json!({"mcpServers": {"fs": {"command": npm_bin("mcp-server-filesystem"), "args": ["${GYRE_TEST_FS_ROOT}"]}}});
    write(&env.path(".mcp.json"), &config.to_string());
    let mut cmd = env.gyre_on(
        &server,
        &[
            "run",
            "read the notes",
            "--output-format",
            "stream-json",
            "--permission-mode",
            "default",
            "--allowed-tools",
            "bash(sleep:*)",
            "--max-turns",
            "60",
        ],
    );
    cmd.env("GYRE_TEST_FS_ROOT", &root);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    let results = [
        results_of(&lines, "mcp__fs__read_text_file"),
        results_of(&lines, "mcp__fs__write_file"),
    ]
    .concat();
    let read = results
        .iter()
        .find(|r| result_text(r).contains("a note from the workspace"))
        .unwrap_or_else(|| panic!("{results:?}"));
    assert_ne!(read["is_error"], true);
    let write_result = results.last().unwrap();
    assert_eq!(write_result["is_error"], true, "{write_result}");
    assert!(
        result_text(write_result).contains("`mcp__fs__write_file` needs approval"),
        "{write_result}"
    );
    assert_eq!(
        std::fs::read_to_string(env.path("notes.txt")).unwrap(),
        "a note from the workspace\n"
    );
}

#[tokio::test]
async fn a_first_turn_calls_tools_of_a_stdio_and_a_streamable_http_server() {
    let everything = http_everything().await;
    // No waiting step: the very first answer calls both servers' tools.
    let script = Script::linear(vec![
        vec![
            call("mcp__local__echo", json!({"message": "first turn"})),
            call("mcp__web__get-sum", json!({"a": 20, "b": 22})),
        ],
        vec![Item::Text("done".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = env();
    // One server from --mcp-config, one from config.toml.
    let slow = format!("sleep 1 && exec {} stdio", npm_bin("mcp-server-everything"));
    let local = json!({"mcpServers": {"local": {"command": "sh", "args": ["-c", slow]}}});
    env.write_user_config(&format!(
        "{BASE}[mcp_servers.web]\nurl = \"{}\"\n",
        everything.url
    ));
    let out = output(env.gyre_on(
        &server,
        &[
            "-p",
            "use both servers",
            "--output-format",
            "json",
            "--dangerously-skip-permissions",
            "--mcp-config",
            &local.to_string(),
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(result["result"], "done", "{result}");
    assert_eq!(result["num_turns"], 2, "{result}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let seen = requests[1].body.to_string();
    assert!(seen.contains("Echo: first turn"), "{seen}");
    assert!(seen.contains("The sum of 20 and 22 is 42."), "{seen}");
}
