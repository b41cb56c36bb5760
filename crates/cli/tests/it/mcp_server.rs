//! `gyre mcp-server` spoken to by a real MCP client (gyre's own
//! `gyre_mcp::McpClient`, on rmcp) over the real binary's stdio, against
//! the scripted model.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gyre_mcp::client::{McpClient, McpError, Timeouts};
use gyre_mcp::config::{ServerConfig, StdioServer};
use gyre_mock::{Item, MockServer, Script};
use gyre_protocol::Part;
use gyre_store::SessionStore;
use gyre_store_sql::SqliteStore;
use serde_json::{Map, Value, json};

use crate::common::*;

/// `gyre mcp-server FLAGS` against `server`, started by an MCP client.
async fn start(env: &Env, server: &MockServer, flags: &[&str]) -> McpClient {
    let mut args = vec![
        "mcp-server".to_string(),
        "--provider".into(),
        "anthropic".into(),
    ];
    args.extend(flags.iter().map(|f| f.to_string()));
    let vars = [
        ("GYRE_HOME", env.home.path().display().to_string()),
        ("XDG_CONFIG_HOME", env.config.path().display().to_string()),
        ("ANTHROPIC_API_KEY", "test-key".to_string()),
        ("ANTHROPIC_BASE_URL", server.anthropic_base_url()),
        // Empty counts as unset: the SQLite store in GYRE_HOME.
        ("GYRE_DATABASE_URL", String::new()),
        ("NO_COLOR", "1".to_string()),
    ];
    let config = ServerConfig::Stdio(StdioServer {
        command: GYRE.to_string(),
        args,
        env: vars
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<BTreeMap<_, _>>(),
        cwd: Some(env.workspace.path().to_path_buf()),
    });
    McpClient::start("gyre", &config, Timeouts::default())
        .await
        .unwrap_or_else(|e| panic!("gyre mcp-server did not start: {e}"))
}

fn arguments(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[tokio::test]
async fn gyre_runs_a_task_and_gyre_reply_continues_the_same_session() {
    let script = Script::linear(vec![
        vec![call(
            "write",
            json!({"file_path": "out.txt", "content": "made by gyre\n"}),
        )],
        vec![Item::Text("Wrote out.txt.".into())],
        vec![Item::Text("Still here.".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let client = start(&env, &server, &["--allowed-tools", "write"]).await;

    let tools = client.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["gyre", "gyre_reply"]);
    assert_eq!(tools[0].input_schema["required"], json!(["prompt"]));
    for property in ["prompt", "cwd", "agent"] {
        assert_eq!(
            tools[0].input_schema["properties"][property]["type"], "string",
            "{property}"
        );
    }
    assert_eq!(
        tools[1].input_schema["required"],
        json!(["session_id", "prompt"])
    );

    let workspace = env.workspace.path().display().to_string();
    let result = client
        .call_tool(
            "gyre",
            arguments(json!({"prompt": "write the file", "cwd": workspace})),
        )
        .await
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    let structured = result.structured.clone().unwrap();
    let session_id = structured["session_id"].as_str().unwrap().to_string();
    assert_eq!(
        structured,
        json!({"session_id": session_id, "result": "Wrote out.txt.", "is_error": false})
    );
    assert!(
        result.text().starts_with("Wrote out.txt."),
        "{}",
        result.text()
    );
    assert!(result.text().contains(&session_id));
    assert_eq!(
        std::fs::read_to_string(env.path("out.txt")).unwrap(),
        "made by gyre\n"
    );

    let reply = client
        .call_tool(
            "gyre_reply",
            arguments(json!({"session_id": session_id, "prompt": "are you there?"})),
        )
        .await
        .unwrap();
    assert!(!reply.is_error, "{reply:?}");
    let structured = reply.structured.unwrap();
    assert_eq!(structured["session_id"], session_id.as_str());
    assert_eq!(structured["result"], "Still here.");
    // The model was sent the earlier turns of the same session.
    let last = server.requests().pop().unwrap().body.to_string();
    for earlier in ["write the file", "Wrote out.txt.", "are you there?"] {
        assert!(last.contains(earlier), "`{earlier}` in {last}");
    }
    client.close().await;
}

#[tokio::test]
async fn bad_calls_are_tool_errors_and_the_server_goes_on() {
    let server = MockServer::start(always("ok")).await.unwrap();
    let env = Env::new();
    let client = start(&env, &server, &[]).await;

    let unknown = client
        .call_tool(
            "gyre_reply",
            arguments(json!({"session_id": "no-such-session", "prompt": "hi"})),
        )
        .await
        .unwrap();
    assert!(unknown.is_error);
    assert!(
        unknown.text().contains("no-such-session"),
        "{}",
        unknown.text()
    );

    let empty = client
        .call_tool("gyre", arguments(json!({"prompt": "  "})))
        .await
        .unwrap();
    assert!(empty.is_error);
    assert!(empty.text().contains("empty"), "{}", empty.text());

    let missing = client
        .call_tool("gyre", arguments(json!({"cwd": "."})))
        .await
        .unwrap();
    assert!(missing.is_error);
    assert!(missing.text().contains("prompt"), "{}", missing.text());

    let nowhere = client
        .call_tool(
            "gyre",
            arguments(json!({"prompt": "hi", "cwd": "/no/such/dir"})),
        )
        .await
        .unwrap();
    assert!(nowhere.is_error);
    assert!(
        nowhere.text().contains("/no/such/dir"),
        "{}",
        nowhere.text()
    );

    let no_tool = client.call_tool("nope", Map::new()).await.unwrap_err();
    assert!(matches!(no_tool, McpError::Server { .. }), "{no_tool}");

    // Still serving, and a good call works.
    assert_eq!(client.list_tools().await.unwrap().len(), 2);
    let fine = client
        .call_tool("gyre", arguments(json!({"prompt": "hello"})))
        .await
        .unwrap();
    assert!(!fine.is_error, "{fine:?}");
    assert_eq!(fine.structured.unwrap()["result"], "ok");
    client.close().await;
}

#[tokio::test]
async fn a_call_that_needs_approval_is_refused_headless() {
    let script = Script::linear(vec![
        vec![call("bash", json!({"command": "touch made"}))],
        vec![Item::Text("I could not run it.".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let client = start(&env, &server, &[]).await;
    let result = client
        .call_tool("gyre", arguments(json!({"prompt": "make it"})))
        .await
        .unwrap();
    assert_eq!(result.structured.unwrap()["result"], "I could not run it.");
    assert!(
        !env.path("made").exists(),
        "the refused command did not run"
    );
    let refusal = server.requests().pop().unwrap().body.to_string();
    assert!(refusal.contains("headless"), "{refusal}");
    assert!(refusal.contains("--allowed-tools"), "{refusal}");
    client.close().await;
}

#[tokio::test]
async fn a_cancelled_call_stops_its_run() {
    let script = Script::linear(vec![
        vec![call(
            "bash",
            // Says it runs (see `Fifo`), then runs long.
            json!({"command": "echo running > started && sleep 30"}),
        )],
        vec![Item::Text("Never sent: the run was cancelled.".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let client = start(&env, &server, &["--permission-mode", "bypassPermissions"]).await;
    let mut started = Fifo::new(&env.path("started"));
    {
        let call = client.call_tool("gyre", arguments(json!({"prompt": "wait"})));
        tokio::pin!(call);
        tokio::select! {
            done = &mut call => panic!("the call ended before it was cancelled: {done:?}"),
            () = started.line() => {}
        }
        // Dropping the call makes the client send notifications/cancelled.
    }
    let cancelled_at = Instant::now();
    let store = SqliteStore::open(&env.database()).await.unwrap();
    // The run records its end in the server's store, which tells no one:
    // look until it is there (bounded).
    let interrupted = loop {
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(10),
            "the run was not stopped within 10 s"
        );
        let mut results = Vec::new();
        for meta in store.list_sessions().await.unwrap() {
            for message in store.load_messages(&meta.id).await.unwrap() {
                for part in message.parts {
                    if let Part::ToolResult(result) = part {
                        results.push(result);
                    }
                }
            }
        }
        if let Some(result) = results.pop() {
            break result;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(interrupted.name, "bash");
    assert!(interrupted.is_error, "{interrupted:?}");
    // The model was not asked again after the cancel.
    assert_eq!(server.requests().len(), 1);
    assert_eq!(client.list_tools().await.unwrap().len(), 2);
    client.close().await;
}
