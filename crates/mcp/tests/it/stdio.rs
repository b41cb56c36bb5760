//! The client against a real MCP server over stdio: the Python fixture
//! `tests/fixtures/permission_server.py`, started as a child process.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::fixture as fixture_path;
use gyre_mcp::{CallResult, Content, McpClient, McpError, ServerConfig, StdioServer, Timeouts};
use serde_json::{Map, Value, json};

fn fixture() -> PathBuf {
    PathBuf::from(fixture_path("permission_server.py"))
}

fn server(options: &[&str]) -> ServerConfig {
    let mut args = vec![fixture().display().to_string()];
    args.extend(options.iter().map(|o| o.to_string()));
    ServerConfig::Stdio(StdioServer {
        command: "python3".into(),
        args,
        ..StdioServer::default()
    })
}

async fn start(options: &[&str]) -> McpClient {
    McpClient::start("perm", &server(options), Timeouts::default())
        .await
        .unwrap()
}

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// Whether process `pid` still exists (a reaped process is gone from /proc).
fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn lists_the_servers_tools_with_their_schemas() {
    let client = start(&[]).await;
    let tools = client.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["approve", "echo", "fail", "garbage", "stall", "crash"]
    );
    assert_eq!(
        tools[0].description.as_deref(),
        Some("Decides whether gyre may run a tool call.")
    );
    assert_eq!(
        tools[0].input_schema["required"],
        json!(["tool_name", "input"])
    );
}

#[tokio::test]
async fn calls_a_tool_and_gets_its_text() {
    let client = start(&[]).await;
    let result = client
        .call_tool("echo", args(json!({"text": "hi there"})))
        .await
        .unwrap();
    assert_eq!(
        result,
        CallResult {
            content: vec![Content::Text("hi there".into())],
            is_error: false,
            structured: None,
        }
    );
    let answer = client
        .call_tool(
            "approve",
            args(json!({"tool_name": "bash", "input": {"command": "echo a"}, "tool_use_id": "t1"})),
        )
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(&answer.text()).unwrap();
    assert_eq!(
        answer,
        json!({"behavior": "allow", "updatedInput": {"command": "echo a world"}})
    );
}

#[tokio::test]
async fn a_tool_error_is_a_result_and_an_unknown_tool_an_error() {
    let client = start(&[]).await;
    let failed = client.call_tool("fail", Map::new()).await.unwrap();
    assert!(failed.is_error);
    assert_eq!(failed.text(), "the fail tool failed");
    let err = client.call_tool("nope", Map::new()).await.unwrap_err();
    assert!(matches!(err, McpError::Server { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "MCP server `perm` answered the call of its tool `nope` with an error: no tool nope"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_at_the_handshake() {
    let timeouts = Timeouts {
        start: Duration::from_millis(300),
        ..Timeouts::default()
    };
    let err = McpClient::start("perm", &server(&["--silent"]), timeouts)
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Timeout { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "MCP server `perm` did not answer the initialize handshake within 0.3 s"
    );
}

#[tokio::test]
async fn read_only_hints_come_with_the_tools() {
    let crash = ServerConfig::Stdio(StdioServer {
        command: "python3".into(),
        args: vec![fixture_path("crash_server.py")],
        ..StdioServer::default()
    });
    let client = McpClient::start("c", &crash, Timeouts::default())
        .await
        .unwrap();
    let tools = client.list_tools().await.unwrap();
    assert!(tools[0].read_only, "{tools:?}");
    let perm = start(&[]).await.list_tools().await.unwrap();
    assert!(perm.iter().all(|t| !t.read_only), "{perm:?}");
}

#[tokio::test]
async fn a_call_that_never_ends_times_out_and_the_session_goes_on() {
    let timeouts = Timeouts {
        call: Duration::from_millis(300),
        ..Timeouts::default()
    };
    let client = McpClient::start("perm", &server(&[]), timeouts)
        .await
        .unwrap();
    let err = client.call_tool("stall", Map::new()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "MCP server `perm` did not answer the call of its tool `stall` within 0.3 s"
    );
    let result = client
        .call_tool("echo", args(json!({"text": "still here"})))
        .await
        .unwrap();
    assert_eq!(result.text(), "still here");
}

#[tokio::test]
async fn a_server_that_exits_at_start_is_reported_with_its_stderr() {
    let err = McpClient::start("perm", &server(&["--exit"]), Timeouts::default())
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Closed { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.starts_with("MCP server `perm` exited or closed its connection"),
        "{message}"
    );
    assert!(message.contains("told to exit at start"), "{message}");
}

#[tokio::test]
async fn a_server_that_crashes_during_a_call_is_reported() {
    let client = start(&[]).await;
    let err = client.call_tool("crash", Map::new()).await.unwrap_err();
    assert!(matches!(err, McpError::Closed { .. }), "{err:?}");
    assert!(
        err.to_string().contains("crash: exiting on purpose"),
        "{err}"
    );
    let again = client.call_tool("echo", Map::new()).await.unwrap_err();
    assert!(matches!(again, McpError::Closed { .. }), "{again:?}");
}

#[tokio::test]
async fn a_missing_command_and_an_sse_server_are_clear_errors() {
    let missing = ServerConfig::Stdio(StdioServer {
        command: "/nonexistent/gyre-mcp-server".into(),
        args: vec!["--flag".into()],
        ..StdioServer::default()
    });
    let err = McpClient::start("gone", &missing, Timeouts::default())
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with(
            "MCP server `gone` could not be started (`/nonexistent/gyre-mcp-server --flag`): "
        ),
        "{err}"
    );
    let sse = ServerConfig::Sse {
        url: "https://example.com/sse".into(),
    };
    let err = McpClient::start("web", &sse, Timeouts::default())
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Unsupported { .. }), "{err:?}");
    assert!(err.to_string().contains("uses the SSE transport"), "{err}");
}

#[tokio::test]
async fn the_server_runs_in_its_directory_with_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    let config = ServerConfig::Stdio(StdioServer {
        command: "python3".into(),
        args: vec![
            fixture().display().to_string(),
            "--marker".into(),
            "started".into(),
        ],
        env: [("GYRE_MCP_TEST".to_string(), "1".to_string())].into(),
        cwd: Some(dir.path().to_path_buf()),
    });
    let client = McpClient::start("perm", &config, Timeouts::default())
        .await
        .unwrap();
    let marker = std::fs::read_to_string(dir.path().join("started")).unwrap();
    assert_eq!(Some(marker.parse::<u32>().unwrap()), client.pid());
    let environ = std::fs::read(format!("/proc/{marker}/environ")).unwrap();
    assert!(
        environ
            .split(|b| *b == 0)
            .any(|var| var == b"GYRE_MCP_TEST=1")
    );
}

#[tokio::test]
async fn closing_the_client_ends_the_server() {
    let client = start(&[]).await;
    let pid = client.pid().unwrap();
    assert!(alive(pid));
    client.close().await;
    assert!(!alive(pid), "server {pid} still runs after close");
}

#[tokio::test]
async fn dropping_the_client_ends_the_server() {
    let client = start(&[]).await;
    let pid = client.pid().unwrap();
    drop(client);
    // The server is stopped by a task rmcp spawns on drop: wait for the
    // process to go, bounded.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "server {pid} still runs 10 s after the client was dropped"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
