//! Fixtures shared by the tests.

use std::path::PathBuf;

use gyre_protocol::{Message, Part, Role, ToolCall, ToolResult, ToolResultContent};
use gyre_store::{SessionMeta, SqliteStore};
use tempfile::TempDir;

/// A fresh directory and the database path inside it (in a subdirectory that
/// does not exist yet, so `open` must create it).
pub fn temp_db() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("sessions.db");
    (dir, path)
}

pub async fn open(path: &std::path::Path) -> SqliteStore {
    SqliteStore::open(path).await.unwrap()
}

pub fn meta(id: &str, updated_at_ms: i64) -> SessionMeta {
    SessionMeta {
        id: id.to_owned(),
        cwd: "/work/project".to_owned(),
        provider: "anthropic".to_owned(),
        model: "claude-test".to_owned(),
        title: format!("title of {id}"),
        created_at_ms: updated_at_ms,
        updated_at_ms,
    }
}

/// One part of every kind, with the fields most likely to be lost set.
pub fn every_part_kind() -> Vec<Part> {
    vec![
        Part::text("plain text with \"quotes\", a newline\nand unicode ✓"),
        Part::Reasoning {
            text: "thinking".into(),
            signature: Some("sig-abc".into()),
            redacted: false,
        },
        Part::Reasoning {
            text: String::new(),
            signature: None,
            redacted: true,
        },
        // Arguments are kept byte for byte, even when they are not JSON.
        Part::ToolCall(ToolCall::new(
            "call-1",
            "read",
            r#"{ "file_path" : "a.rs" }"#,
        )),
        Part::ToolCall(ToolCall::new("call-2", "bash", "{not json")),
        Part::ToolResult(ToolResult {
            call_id: "call-1".into(),
            name: "read".into(),
            content: vec![
                ToolResultContent::Text {
                    text: "fn main() {}".into(),
                },
                ToolResultContent::Image {
                    media_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into(),
                },
            ],
            is_error: false,
        }),
        Part::ToolResult(ToolResult {
            call_id: "call-2".into(),
            name: "bash".into(),
            content: vec![],
            is_error: true,
        }),
        Part::Image {
            media_type: "image/jpeg".into(),
            data: "/9j/4AAQ".into(),
        },
    ]
}

pub fn assistant(id: &str, parts: Vec<Part>) -> Message {
    Message::new(id, Role::Assistant, parts)
}
