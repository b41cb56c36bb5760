//! Servers that fail: those that never start are reported and hold the
//! first turn back only up to their timeout; one that crashes mid-session
//! is reported and restarted.

use super::*;

#[tokio::test]
async fn servers_that_never_start_are_reported_and_delay_the_first_turn_only_to_their_timeout() {
    let script = Script::linear(vec![
        vec![call("bash", json!({"command": "sleep 2.5"}))],
        vec![Item::Text("done".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = env();
    let config =
        json!({"mcpServers": {"missing": {"command": "/nonexistent/mcp-server", "args": ["--x"]}}});
    write(&env.path(".mcp.json"), &config.to_string());
    env.write_user_config(&format!(
        "{BASE}[mcp_servers.hang]\ncommand = \"python3\"\nargs = [\"{}\", \"--silent\"]\nstartup_timeout_sec = 2\n",
        fixture("permission_server.py")
    ));
    let started = std::time::Instant::now();
    let out = output(run(&env, &server)).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(10));
    let lines = json_lines(&out);
    // The run waited for them: `system/init` says how each ended up.
    let init = &system_lines(&lines, "init")[0];
    for name in ["missing", "hang"] {
        let listed = init["mcp_servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {init}"));
        assert_eq!(listed["status"], "failed", "{init}");
    }
    let failed: Vec<&Value> = system_lines(&lines, "mcp_server_status")
        .into_iter()
        .filter(|l| l["status"] == "failed")
        .collect();
    let message = |server: &str| {
        failed
            .iter()
            .find(|l| l["server"] == server)
            .unwrap_or_else(|| panic!("no failed line for {server}: {lines:#?}"))["message"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        message("missing").starts_with(
            "MCP server `missing` could not be started (`/nonexistent/mcp-server --x`): "
        ),
        "{}",
        message("missing")
    );
    assert_eq!(
        message("hang"),
        "MCP server `hang` did not answer the initialize handshake within 2 s"
    );
    // The run waited for the hanging server up to its start timeout (2 s),
    // then went on without it: its failure precedes the first answer.
    let first_answer = lines.iter().position(|l| l["type"] == "assistant").unwrap();
    let hang_failed = lines
        .iter()
        .position(|l| {
            l["subtype"] == "mcp_server_status" && l["server"] == "hang" && l["status"] == "failed"
        })
        .unwrap();
    assert!(hang_failed < first_answer, "{lines:#?}");
    assert!(system_lines(&lines, "tools_changed").is_empty());
    assert_eq!(lines.last().unwrap()["subtype"], "success");
}

#[tokio::test]
async fn a_server_that_crashes_mid_session_is_reported_and_restarted() {
    let tick = "mcp__crashy__tick";
    let crashed = "exited or closed its connection";
    let script = Script::new(vec![
        step(
            When {
                last_message_contains: Some("tick 1 from".into()),
                body_contains: Some(crashed.into()),
                ..When::default()
            },
            vec![Item::Text("done".into())],
        ),
        step(after("tick 1 from"), vec![call(tick, json!({"n": 2}))]),
        step(after(crashed), vec![call(tick, json!({"n": 3}))]),
        step(offered(tick), vec![call(tick, json!({"n": 1}))]),
        wait(),
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = env();
    let config = json!({"mcpServers": {"crashy": {"command": "python3", "args": [fixture("crash_server.py"), "--starts", "starts"]}}});
    write(&env.path(".mcp.json"), &config.to_string());
    let out = output(run(&env, &server)).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    let ticks = results_of(&lines, tick);
    assert_eq!(ticks.len(), 3, "{ticks:#?}");
    assert!(result_text(&ticks[0]).starts_with("tick 1 from "));
    assert_eq!(ticks[1]["is_error"], true);
    let error = result_text(&ticks[1]);
    assert!(
        error.starts_with("MCP server `crashy` exited or closed its connection"),
        "{error}"
    );
    assert!(error.contains("crash_server: exiting on call 2"), "{error}");
    assert!(
        error.ends_with("gyre starts the server again on the next call of one of its tools"),
        "{error}"
    );
    assert_ne!(ticks[2]["is_error"], true);
    assert!(result_text(&ticks[2]).starts_with("tick 1 from "));
    assert_ne!(
        result_text(&ticks[0]),
        result_text(&ticks[2]),
        "a new process"
    );

    let states: Vec<&str> = system_lines(&lines, "mcp_server_status")
        .iter()
        .map(|l| l["status"].as_str().unwrap())
        .collect();
    // (A server that was up before the run began is `ready` at its start.)
    let states = states.strip_prefix(&["starting"]).unwrap_or(&states);
    assert_eq!(states, ["ready", "crashed", "starting", "ready"]);
    let crash = system_lines(&lines, "mcp_server_status")
        .into_iter()
        .find(|l| l["status"] == "crashed")
        .unwrap();
    assert!(
        crash["message"]
            .as_str()
            .unwrap()
            .ends_with("it is started again on the next call of one of its tools"),
        "{crash}"
    );
    let starts = std::fs::read_to_string(env.path("starts")).unwrap();
    assert_eq!(starts.lines().count(), 2);
    assert_eq!(lines.last().unwrap()["subtype"], "success");
}
