//! `LateTools`: tools joining and leaving a session, in join order, with a
//! generation, cheap snapshots and per-source changes.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use gyre_protocol::{McpServerState, McpServerStatus, ToolSpec};
use gyre_tools::{
    LateChange, LateTools, Registry, Tool, ToolContext, ToolError, ToolKind, ToolOutput,
};
use serde_json::{Value, json};

struct Named(ToolSpec);

fn tool(name: &str, description: &str) -> Arc<dyn Tool> {
    Arc::new(Named(ToolSpec {
        name: name.into(),
        description: description.into(),
        input_schema: json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
    }))
}

impl Tool for Named {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn kind(&self, _: &Value) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn run<'a>(
        &'a self,
        _: Value,
        _: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        async move { Ok(ToolOutput::text("t", "ran")) }.boxed()
    }
}

#[test]
fn sources_keep_their_place_and_changes_count_once() {
    let late = LateTools::new();
    assert_eq!(late.generation(), 0);
    let empty = late.snapshot();
    assert!(empty.is_empty());
    assert!(late.add("a", vec![tool("mcp__a__x", "x"), tool("mcp__a__y", "y")]));
    assert!(late.add("b", vec![tool("mcp__b__z", "z")]));
    assert_eq!(late.generation(), 2);
    // The same tools again: no change.
    assert!(!late.add("a", vec![tool("mcp__a__x", "x"), tool("mcp__a__y", "y")]));
    assert_eq!(late.generation(), 2);
    let before = late.snapshot();
    // A source that adds again keeps its place; a changed spec is a change.
    assert!(late.add("a", vec![tool("mcp__a__x", "x2"), tool("mcp__a__w", "w")]));
    let after = late.snapshot();
    assert_eq!(after.names(), ["mcp__a__x", "mcp__a__w", "mcp__b__z"]);
    assert_eq!(before.names(), ["mcp__a__x", "mcp__a__y", "mcp__b__z"]);
    assert_eq!(
        after.changes_since(&before, |_| true),
        [LateChange {
            source: "a".into(),
            added: vec!["mcp__a__w".into(), "mcp__a__x".into()],
            removed: vec!["mcp__a__y".into(), "mcp__a__x".into()],
        }]
    );
    // Filtered: only what an agent offers counts.
    assert!(
        after
            .changes_since(&before, |t| t.spec().name.starts_with("mcp__b"))
            .is_empty()
    );
    assert_eq!(late.remove("b"), ["mcp__b__z"]);
    assert!(late.remove("b").is_empty());
    assert_eq!(
        late.snapshot().changes_since(&after, |_| true),
        [LateChange {
            source: "b".into(),
            added: vec![],
            removed: vec!["mcp__b__z".into()],
        }]
    );
    assert_eq!(late.snapshot().changes_since(&empty, |_| true).len(), 1);
}

#[test]
fn taken_names_are_left_out_and_built_in_tools_win() {
    let late = LateTools::new();
    late.add(
        "a",
        vec![
            tool("read", "shadow"),
            tool("mcp__a__x", "x"),
            tool("mcp__a__x", "twice"),
        ],
    );
    late.add("b", vec![tool("mcp__a__x", "clash")]);
    let snapshot = late.snapshot();
    assert_eq!(snapshot.names(), ["read", "mcp__a__x"]);
    let registry = Registry::builtin().with_late(&snapshot, |_| true);
    let names = registry.names();
    assert_eq!(names.iter().filter(|n| *n == "read").count(), 1);
    assert_eq!(names.last().map(String::as_str), Some("mcp__a__x"));
    assert_ne!(registry.get("read").unwrap().spec().description, "shadow");
    // Validated against the late tool's schema.
    let err = registry
        .validate("mcp__a__x", &json!({"n": "ten"}))
        .unwrap_err();
    assert!(err.to_string().contains("`n`"), "{err}");
    let kept = Registry::new().with_late(&snapshot, |t| t.spec().name != "read");
    assert_eq!(kept.names(), ["mcp__a__x"]);
}

#[test]
fn statuses_keep_the_latest_and_reach_watchers() {
    let late = LateTools::new();
    let status = |server: &str, state| McpServerStatus {
        server: server.into(),
        status: state,
        message: String::new(),
    };
    late.report(status("a", McpServerState::Starting));
    let (now, mut rx) = late.watch();
    assert_eq!(now, [status("a", McpServerState::Starting)]);
    late.report(status("b", McpServerState::Starting));
    late.report(status("a", McpServerState::Ready));
    assert_eq!(
        late.statuses(),
        [
            status("a", McpServerState::Ready),
            status("b", McpServerState::Starting)
        ]
    );
    assert_eq!(rx.try_recv().unwrap().server, "b");
    assert_eq!(rx.try_recv().unwrap().status, McpServerState::Ready);
    assert!(rx.try_recv().is_err());
}
