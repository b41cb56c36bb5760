//! A session's servers: background starts that fail, and a server that
//! crashes mid-session and is started again on the next call.

use std::time::Duration;

use gyre_mcp::{ServerConfig, ServerEntry, StdioServer, Timeouts, start_in_background};
use gyre_protocol::{McpServerState, McpServerStatus, Outcome, ToolResultContent};
use gyre_tools::{ImageSupport, LateTools, ToolError};
use serde_json::json;
use tokio::sync::broadcast;

use crate::common::{context, entry, fixture, tool, wait_for};

fn python(script: &str, args: &[&str]) -> ServerConfig {
    let mut all = vec![fixture(script)];
    all.extend(args.iter().map(|a| a.to_string()));
    ServerConfig::Stdio(StdioServer {
        command: "python3".into(),
        args: all,
        ..StdioServer::default()
    })
}

/// Every report received so far (without waiting).
fn drain(rx: &mut broadcast::Receiver<McpServerStatus>) -> Vec<(McpServerState, String)> {
    let mut out = Vec::new();
    while let Ok(status) = rx.try_recv() {
        out.push((status.status, status.message));
    }
    out
}

fn text(content: &[ToolResultContent]) -> &str {
    match content {
        [ToolResultContent::Text { text }] => text,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn servers_that_never_start_are_reported_and_offer_nothing() {
    let late = LateTools::new();
    let (_, mut reports) = late.watch();
    let missing = ServerConfig::Stdio(StdioServer {
        command: "/nonexistent/gyre-mcp-server".into(),
        ..StdioServer::default()
    });
    let quick = Timeouts {
        start: Duration::from_millis(400),
        ..Timeouts::default()
    };
    let started = std::time::Instant::now();
    start_in_background(
        vec![
            entry("missing", missing, Timeouts::default()),
            entry("hang", python("permission_server.py", &["--silent"]), quick),
            entry(
                "exits",
                python("permission_server.py", &["--exit"]),
                Timeouts::default(),
            ),
            ServerEntry {
                name: "broken".into(),
                config: Err("MCP server `broken` in .mcp.json needs the environment variable X, which is not set".into()),
                timeouts: Timeouts::default(),
                source: ".mcp.json".into(),
                enabled: true,
            },
            ServerEntry {
                enabled: false,
                ..entry("off", python("crash_server.py", &[]), Timeouts::default())
            },
        ],
        &late,
    );
    // Starting is in the background: far under the 30 s start timeout.
    assert!(started.elapsed() < Duration::from_secs(5), "it waited");

    let missing = wait_for(&late, "missing", McpServerState::Failed).await;
    assert!(
        missing.message.starts_with(
            "MCP server `missing` could not be started (`/nonexistent/gyre-mcp-server`): "
        ),
        "{missing:?}"
    );
    let hang = wait_for(&late, "hang", McpServerState::Failed).await;
    assert_eq!(
        hang.message,
        "MCP server `hang` did not answer the initialize handshake within 0.4 s"
    );
    let exits = wait_for(&late, "exits", McpServerState::Failed).await;
    assert!(
        exits.message.contains("told to exit at start"),
        "the stderr tail: {exits:?}"
    );
    let broken = wait_for(&late, "broken", McpServerState::Failed).await;
    assert!(broken.message.contains("needs the environment variable X"));
    // A disabled server is not started, nor reported.
    assert!(late.statuses().iter().all(|s| s.server != "off"));
    assert!(late.snapshot().is_empty());
    assert_eq!(late.generation(), 0);
    let all = drain(&mut reports);
    assert!(all.iter().any(|(s, _)| *s == McpServerState::Starting));
}

#[tokio::test]
async fn a_server_that_crashes_is_reported_and_started_again_on_the_next_call() {
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("starts");
    let starts_arg = starts.display().to_string();
    let late = LateTools::new();
    start_in_background(
        vec![entry(
            "crashy",
            python("crash_server.py", &["--starts", &starts_arg]),
            Timeouts::default(),
        )],
        &late,
    );
    wait_for(&late, "crashy", McpServerState::Ready).await;
    let (_, mut reports) = late.watch();
    let ctx = context(dir.path(), ImageSupport::Accepted);
    let tick = tool(&late, "mcp__crashy__tick");
    assert_eq!(
        tick.spec().description,
        "Counts its calls.\nSecond line of the description."
    );

    let first = tick.run(json!({}), &ctx).await.unwrap();
    assert!(
        text(&first.content).starts_with("tick 1 from "),
        "{first:?}"
    );

    // The second call kills the server: the call fails, saying so.
    let err = tick.run(json!({}), &ctx).await.unwrap_err();
    assert!(matches!(err, ToolError::Failed(_)), "{err:?}");
    let message = err.to_string();
    assert!(
        message.starts_with("MCP server `crashy` exited or closed its connection"),
        "{message}"
    );
    assert!(
        message.contains("crash_server: exiting on call 2"),
        "{message}"
    );
    assert!(
        message.ends_with(
            "whether the call took effect is unknown. gyre starts the server again on the next call of one of its tools"
        ),
        "{message}"
    );
    let reported = drain(&mut reports);
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert_eq!(reported[0].0, McpServerState::Crashed);
    assert!(
        reported[0]
            .1
            .ends_with("it is started again on the next call of one of its tools"),
        "{reported:?}"
    );

    // The next call starts it again, and answers.
    let third = tick.run(json!({}), &ctx).await.unwrap();
    assert_eq!(third.outcome, Outcome::Success);
    assert!(
        text(&third.content).starts_with("tick 1 from "),
        "{third:?}"
    );
    let states: Vec<McpServerState> = drain(&mut reports).into_iter().map(|(s, _)| s).collect();
    assert_eq!(states, [McpServerState::Starting, McpServerState::Ready]);
    let lines = std::fs::read_to_string(&starts).unwrap();
    assert_eq!(lines.lines().count(), 2, "{lines}");
    // The same tools: nothing changed for the model.
    assert_eq!(late.generation(), 1);
}

#[tokio::test]
async fn a_server_that_cannot_start_again_makes_each_call_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    // Starts once; then the marker file's directory is gone, and the
    // fixture fails to start again (it cannot write its marker).
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let starts = sub.join("starts").display().to_string();
    let late = LateTools::new();
    start_in_background(
        vec![entry(
            "fragile",
            python("crash_server.py", &["--starts", &starts]),
            Timeouts::default(),
        )],
        &late,
    );
    wait_for(&late, "fragile", McpServerState::Ready).await;
    let ctx = context(dir.path(), ImageSupport::Accepted);
    let tick = tool(&late, "mcp__fragile__tick");
    tick.run(json!({}), &ctx).await.unwrap();
    tick.run(json!({}), &ctx).await.unwrap_err();
    std::fs::remove_dir_all(&sub).unwrap();
    let err = tick.run(json!({}), &ctx).await.unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with(
            "MCP server `fragile` is not running and could not be started again: MCP server `fragile` exited or closed its connection"
        ),
        "{message}"
    );
    assert_eq!(late.statuses()[0].status, McpServerState::Failed);
}
