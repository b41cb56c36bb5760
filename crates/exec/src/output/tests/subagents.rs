//! Subagents' events as lines of the top-level session: the innermost
//! `task` call names them, and a child's own `init`, `result` and system
//! lines are replaced by `task_*` lines.

use super::super::*;
use super::{appended, nested, summary};
use gyre_protocol::{FinishReason, Outcome, ToolCall, ToolResult};

#[test]
fn a_subagents_messages_name_the_task_call() {
    let mut out = StreamJson::new("top".into(), false);
    let assistant = Message::new("m1", Role::Assistant, vec![Part::text("Found it.")]);
    let line = out
        .line(&nested("call-1", "child", "explore", appended(assistant)))
        .unwrap();
    assert_eq!(
        line,
        json!({"type": "assistant", "session_id": "top", "parent_tool_use_id": "call-1",
            "message": {"id": "m1", "type": "message", "role": "assistant", "model": "",
                "content": [{"type": "text", "text": "Found it."}],
                "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 0, "output_tokens": 0,
                    "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}})
    );
    let results = Message::new(
        "m2",
        Role::User,
        vec![Part::ToolResult(ToolResult::text(
            "c9",
            "ls",
            "a.txt",
            Outcome::Success,
        ))],
    );
    let line = out
        .line(&nested("call-1", "child", "explore", appended(results)))
        .unwrap();
    assert_eq!(line["type"], "user");
    assert_eq!(line["parent_tool_use_id"], "call-1");
    assert_eq!(line["session_id"], "top");
    assert_eq!(line["message"]["content"][0]["tool_use_id"], "c9");
    // The child's prompt is not echoed, as the parent's is not.
    let prompt = Message::user_text("m0", "look around");
    assert!(
        out.line(&nested("call-1", "child", "explore", appended(prompt)))
            .is_none()
    );
}

#[test]
fn a_subagents_start_and_end_become_task_lines() {
    let mut out = StreamJson::new("top".into(), false);
    let started = Event::RunStarted {
        session_id: "child".into(),
        model: "m".into(),
        cwd: "/w".into(),
        tools: vec!["read".into()],
    };
    assert_eq!(
        out.line(&nested("call-1", "child", "explore", started))
            .unwrap(),
        json!({"type": "system", "subtype": "task_started", "session_id": "top",
            "task_id": "child", "agent": "explore", "parent_tool_use_id": "call-1",
            "description": "", "tool_use_id": "call-1", "task_type": "local_agent"})
    );
    let finished = Event::RunFinished(summary(FinishReason::Completed, "two files"));
    assert_eq!(
        out.line(&nested("call-1", "child", "explore", finished))
            .unwrap(),
        json!({"type": "system", "subtype": "task_finished", "session_id": "top",
            "task_id": "child", "agent": "explore", "parent_tool_use_id": "call-1",
            "status": "success", "num_turns": 2, "result": "two files"})
    );
    let mut limited = summary(FinishReason::MaxTurns, "");
    limited.error = Some(gyre_protocol::RunError {
        kind: gyre_protocol::RunErrorKind::Limit,
        message: "turn limit".into(),
    });
    let line = out
        .line(&nested(
            "call-1",
            "child",
            "explore",
            Event::RunFinished(limited),
        ))
        .unwrap();
    assert_eq!(line["status"], "error_max_turns");
    assert_eq!(line["error"], "turn limit");
}

#[test]
fn a_subagents_other_system_lines_are_not_printed() {
    let mut out = StreamJson::new("top".into(), true);
    let retry = Event::RetryScheduled {
        attempt: 1,
        delay_ms: 10,
        reason: "rate_limit".into(),
        message: String::new(),
    };
    // The same event prints at the top level: only nesting hides it.
    assert!(out.line(&retry).is_some());
    assert!(out.line(&nested("c", "t", "build", retry)).is_none());
    let notification = Event::TaskNotification {
        task_id: "grandchild".into(),
        agent: "explore".into(),
        description: "d".into(),
        reason: FinishReason::Completed,
        final_text: "x".into(),
    };
    assert!(out.line(&nested("c", "t", "build", notification)).is_none());
}

#[test]
fn doubly_nested_events_name_the_innermost_call() {
    let mut out = StreamJson::new("top".into(), false);
    let twice = |inner: Event| {
        nested(
            "call-outer",
            "child",
            "build",
            nested("call-inner", "grandchild", "explore", inner),
        )
    };
    let assistant = Message::new("m1", Role::Assistant, vec![Part::text("deep")]);
    let line = out.line(&twice(appended(assistant))).unwrap();
    assert_eq!(line["type"], "assistant");
    assert_eq!(line["parent_tool_use_id"], "call-inner");
    assert_eq!(line["session_id"], "top");
    let finished = Event::RunFinished(summary(FinishReason::Completed, "deep"));
    let line = out.line(&twice(finished)).unwrap();
    assert_eq!(
        (
            &line["subtype"],
            &line["task_id"],
            &line["agent"],
            &line["parent_tool_use_id"]
        ),
        (
            &json!("task_finished"),
            &json!("grandchild"),
            &json!("explore"),
            &json!("call-inner")
        )
    );
}

#[test]
fn a_subagents_deltas_only_when_asked() {
    let delta = || {
        nested(
            "call-1",
            "child",
            "explore",
            Event::TextDelta { text: "x".into() },
        )
    };
    assert!(
        StreamJson::new("top".into(), false)
            .line(&delta())
            .is_none()
    );
    let line = StreamJson::new("top".into(), true).line(&delta()).unwrap();
    assert_eq!(
        line,
        json!({"type": "stream_event", "session_id": "top", "parent_tool_use_id": "call-1",
            "event": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}})
    );
}

#[test]
fn mcp_servers_and_late_tools_are_system_lines() {
    use gyre_protocol::{McpServerState, McpServerStatus};
    let mut out = StreamJson::new("s".into(), false);
    let status = McpServerStatus {
        server: "docs".into(),
        status: McpServerState::Failed,
        message: "why".into(),
    };
    assert_eq!(
        out.line(&Event::McpServerStatus(status)).unwrap(),
        json!({"type": "system", "subtype": "mcp_server_status", "session_id": "s",
            "server": "docs", "status": "failed", "message": "why"})
    );
    let (source, added, removed) = ("docs".into(), vec!["mcp__docs__a".into()], vec![]);
    assert_eq!(
        out.line(&Event::ToolsChanged {
            source,
            added,
            removed
        })
        .unwrap(),
        json!({"type": "system", "subtype": "tools_changed", "session_id": "s",
            "source": "docs", "added": ["mcp__docs__a"], "removed": []})
    );
}

#[test]
fn task_notifications_say_how_the_task_ended() {
    let mut out = StreamJson::new("top".into(), false);
    let line = out
        .line(&Event::TaskNotification {
            task_id: "child".into(),
            agent: "explore".into(),
            description: "look around".into(),
            reason: FinishReason::Failed,
            final_text: "partial".into(),
        })
        .unwrap();
    assert_eq!(
        line,
        json!({"type": "system", "subtype": "task_notification", "session_id": "top",
            "task_id": "child", "agent": "explore", "description": "look around",
            "status": "error_during_execution", "result": "partial",
            "summary": "look around", "output_file": ""})
    );
}

#[test]
fn a_task_started_line_carries_the_calls_description() {
    let mut out = StreamJson::new("top".into(), false);
    let task = ToolCall::new(
        "call-1",
        "task",
        r#"{"description":"Find the tests","prompt":"look"}"#,
    );
    let answer = Message::new("m1", Role::Assistant, vec![Part::ToolCall(task)]);
    out.lines(&appended(answer));
    let started = Event::RunStarted {
        session_id: "child".into(),
        model: "m".into(),
        cwd: "/w".into(),
        tools: vec![],
    };
    let lines = out.lines(&nested("call-1", "child", "explore", started));
    let line = lines.last().unwrap();
    assert_eq!(line["subtype"], "task_started");
    assert_eq!(line["description"], "Find the tests");
}
