//! Streamable HTTP: server-everything serving `/mcp` on a local port.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::time::Duration;

use gyre_mcp::{HttpServer, McpClient, McpError, ServerConfig, Timeouts, start_in_background};
use gyre_protocol::{McpServerState, ToolResultContent};
use gyre_tools::{ImageSupport, LateTools};
use serde_json::{Map, json};

use crate::common::{HttpEverything, context, entry, tool, wait_for};

fn http(url: &str) -> ServerConfig {
    ServerConfig::Http(HttpServer {
        url: url.into(),
        headers: BTreeMap::from([("X-Gyre-Test".into(), "1".into())]),
        ..HttpServer::default()
    })
}

#[tokio::test]
async fn the_client_lists_and_calls_over_streamable_http() {
    let server = HttpEverything::start().await;
    let client = McpClient::start("web", &http(&server.url), Timeouts::default())
        .await
        .unwrap();
    assert_eq!(client.pid(), None);
    assert!(client.is_alive());
    let tools = client.list_tools().await.unwrap();
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert!(echo.read_only);
    let mut args = Map::new();
    args.insert("message".into(), json!("over http"));
    let result = client.call_tool("echo", args).await.unwrap();
    assert_eq!(result.text(), "Echo: over http");
    client.close().await;
}

#[tokio::test]
async fn http_tools_join_and_run_as_gyre_tools() {
    let server = HttpEverything::start().await;
    let late = LateTools::new();
    start_in_background(
        vec![entry("web", http(&server.url), Timeouts::default())],
        &late,
    );
    let starting = &late.statuses()[0];
    assert_eq!(
        starting.message,
        format!("starting MCP server `web` (http {})", server.url)
    );
    wait_for(&late, "web", McpServerState::Ready).await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path(), ImageSupport::Accepted);
    let sum = tool(&late, "mcp__web__get-sum");
    let out = sum.run(json!({"a": 40, "b": 2}), &ctx).await.unwrap();
    assert_eq!(
        out.content,
        [ToolResultContent::Text {
            text: "The sum of 40 and 2 is 42.".into()
        }]
    );
}

#[tokio::test]
async fn an_http_server_that_is_not_there_fails_clearly() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let timeouts = Timeouts {
        start: Duration::from_secs(10),
        ..Timeouts::default()
    };
    let started = std::time::Instant::now();
    let err = McpClient::start("gone", &http(&url), timeouts)
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, McpError::Handshake { .. }), "{err:?}");
    assert!(
        message.starts_with(&format!(
            "MCP server `gone` failed the handshake: {url} did not answer as an MCP server (Connection refused"
        )),
        "{message}"
    );
    assert!(started.elapsed() < Duration::from_secs(11));
}

#[tokio::test]
async fn missing_header_variables_and_bad_headers_are_named() {
    let var = "GYRE_TEST_SURELY_UNSET_VARIABLE";
    let config = ServerConfig::Http(HttpServer {
        url: "http://127.0.0.1:1/mcp".into(),
        bearer_token_env_var: Some(var.into()),
        ..HttpServer::default()
    });
    let err = McpClient::start("web", &config, Timeouts::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "MCP server `web` cannot be used: its bearer token variable {var} is not set; set it or remove bearer_token_env_var"
        )
    );
    let config = ServerConfig::Http(HttpServer {
        url: "http://127.0.0.1:1/mcp".into(),
        headers: BTreeMap::from([("bad header".into(), "x".into())]),
        ..HttpServer::default()
    });
    let err = McpClient::start("web", &config, Timeouts::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MCP server `web` cannot be used: `bad header` is not a valid HTTP header name"
    );
}
