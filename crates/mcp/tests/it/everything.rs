//! server-everything (from npm) over stdio: its tools join a `LateTools`
//! as gyre tools, with their schemas, kinds and results.

use std::time::Duration;

use gyre_mcp::{Timeouts, start_in_background};
use gyre_protocol::{McpServerState, Outcome, ToolResultContent};
use gyre_tools::{ImageSupport, LateTools, ToolError, ToolKind};
use serde_json::json;

use crate::common::{context, entry, everything, tool, wait_for};

#[tokio::test]
async fn everything_tools_join_as_gyre_tools_and_run() {
    let late = LateTools::new();
    start_in_background(
        vec![entry("everything", everything(), Timeouts::default())],
        &late,
    );
    // Returns at once: the server is starting, no tool has joined yet.
    assert_eq!(late.statuses()[0].status, McpServerState::Starting);
    assert!(
        late.statuses()[0]
            .message
            .starts_with("starting MCP server `everything` (stdio "),
        "{:?}",
        late.statuses()
    );
    assert_eq!(late.generation(), 0);

    let ready = wait_for(&late, "everything", McpServerState::Ready).await;
    assert!(
        ready
            .message
            .starts_with("MCP server `everything` is ready with "),
        "{ready:?}"
    );
    assert_eq!(late.generation(), 1);
    let names = late.snapshot().names();
    for name in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__everything__get-tiny-image",
    ] {
        assert!(names.contains(&name.to_string()), "{names:?}");
    }

    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path(), ImageSupport::Accepted);
    let echo = tool(&late, "mcp__everything__echo");
    assert_eq!(echo.spec().description, "Echoes back the input string");
    assert_eq!(echo.spec().input_schema["type"], "object");
    assert!(echo.spec().input_schema["properties"]["message"].is_object());
    assert_eq!(echo.kind(&json!({})), ToolKind::ReadOnly);
    let out = echo.run(json!({"message": "hi"}), &ctx).await.unwrap();
    assert_eq!(out.outcome, Outcome::Success);
    assert_eq!(
        out.content,
        [ToolResultContent::Text {
            text: "Echo: hi".into()
        }]
    );
    assert_eq!(out.title, "everything echo");

    let sum = tool(&late, "mcp__everything__get-sum");
    let out = sum.run(json!({"a": 2, "b": 3}), &ctx).await.unwrap();
    assert_eq!(
        out.content,
        [ToolResultContent::Text {
            text: "The sum of 2 and 3 is 5.".into()
        }]
    );

    // An image, as the tools' image output (or a note for a model that
    // takes none).
    let image = tool(&late, "mcp__everything__get-tiny-image");
    let out = image.run(json!({}), &ctx).await.unwrap();
    assert!(
        matches!(&out.content[..], [ToolResultContent::Text { .. }, ToolResultContent::Image { media_type, data }]
            if media_type == "image/png" && data.starts_with("iVBOR")),
        "{:?}",
        out.content
            .iter()
            .map(|c| format!("{c:?}").chars().take(80).collect::<String>())
            .collect::<Vec<_>>()
    );
    let blind = context(dir.path(), ImageSupport::NotAccepted);
    let out = image.run(json!({}), &blind).await.unwrap();
    let [ToolResultContent::Text { text }] = &out.content[..] else {
        panic!("{:?}", out.content)
    };
    assert!(
        text.contains("[an image (image/png) the current model cannot take was left out]"),
        "{text}"
    );

    // The server's own error (bad arguments) is an error result.
    let out = sum.run(json!({"a": "x"}), &ctx).await;
    match out {
        Ok(out) => assert_eq!(out.outcome, Outcome::Error, "{out:?}"),
        Err(error) => assert!(!error.to_string().is_empty()),
    }
}

#[tokio::test]
async fn a_call_past_its_timeout_is_an_error_and_the_server_stays() {
    let late = LateTools::new();
    let timeouts = Timeouts {
        call: Duration::from_millis(500),
        ..Timeouts::default()
    };
    start_in_background(vec![entry("everything", everything(), timeouts)], &late);
    wait_for(&late, "everything", McpServerState::Ready).await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path(), ImageSupport::Accepted);
    let slow = tool(&late, "mcp__everything__trigger-long-running-operation");
    assert_eq!(slow.kind(&json!({})), ToolKind::ReadOnly);
    // `readOnlyHint: false`: mutating.
    let toggle = tool(&late, "mcp__everything__toggle-simulated-logging");
    assert_eq!(toggle.kind(&json!({})), ToolKind::Mutating);
    let err = slow
        .run(json!({"duration": 5, "steps": 5}), &ctx)
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, ToolError::Failed(_)), "{err:?}");
    assert!(
        message.starts_with(
            "MCP server `everything` did not answer the call of its tool `trigger-long-running-operation` within 0.5 s; the call was abandoned"
        ),
        "{message}"
    );
    let echo = tool(&late, "mcp__everything__echo");
    let out = echo.run(json!({"message": "still"}), &ctx).await.unwrap();
    assert_eq!(out.outcome, Outcome::Success);
    assert_eq!(late.statuses()[0].status, McpServerState::Ready);
}

#[tokio::test]
async fn a_cancelled_call_stops_at_once() {
    let late = LateTools::new();
    start_in_background(
        vec![entry("everything", everything(), Timeouts::default())],
        &late,
    );
    wait_for(&late, "everything", McpServerState::Ready).await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path(), ImageSupport::Accepted);
    let slow = tool(&late, "mcp__everything__trigger-long-running-operation");
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let err = slow
        .run(json!({"duration": 10, "steps": 2}), &ctx)
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Cancelled { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}
