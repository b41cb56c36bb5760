//! Headless output: `stream-json` lines, the `json` result object, `text`.
//!
//! Shapes follow Claude Code's headless stream format (CONTRACT.md), so tools
//! that read it can read gyre. Each event maps to at most one line; the first
//! line is always `system/init` and the last the `result` object.
//!
//! Subagents' events ([`Event::Subagent`], nested once per level) become
//! lines of the top-level session: `session_id` is always the top-level
//! run's, and `parent_tool_use_id` names the innermost `task` call, so a
//! reader can tell whose line it is. A child's own `init`, `result` and
//! other `system` lines are not printed (they would look like the run's);
//! its start and end become `system/task_started` and
//! `system/task_finished` instead.
//!
//! MCP servers' states and tools that join or leave during the run are
//! `system/mcp_server_status` and `system/tools_changed` lines.

use gyre_protocol::{
    Event, FinishReason, Message, Part, Role, RunSummary, ToolResultContent, Usage,
};
use serde_json::{Value, json};

/// Maps run events to stream-json lines.
#[derive(Debug)]
pub struct StreamJson {
    session_id: String,
    include_partial_messages: bool,
}

impl StreamJson {
    pub fn new(session_id: String, include_partial_messages: bool) -> Self {
        Self {
            session_id,
            include_partial_messages,
        }
    }

    /// The line for `event`, if it has one.
    pub fn line(&self, event: &Event) -> Option<Value> {
        let sid = &self.session_id;
        match event {
            Event::RunStarted {
                session_id,
                model,
                cwd,
                tools,
            } => Some(json!({
                "type": "system", "subtype": "init", "session_id": session_id,
                "model": model, "cwd": cwd, "tools": tools,
            })),
            Event::MessageAppended { message } => message_line(message, sid),
            Event::RetryScheduled {
                attempt,
                delay_ms,
                reason,
                message,
            } => Some(json!({
                "type": "system", "subtype": "retry", "session_id": sid,
                "attempt": attempt, "delay_ms": delay_ms, "reason": reason, "message": message,
            })),
            Event::CompactBoundary { boundary, .. } => Some(json!({
                "type": "system", "subtype": "compact_boundary", "session_id": sid,
                "compact_metadata": {
                    "trigger": boundary.trigger.as_str(),
                    "pre_tokens": boundary.pre_tokens,
                    "post_tokens": boundary.post_tokens,
                },
            })),
            Event::CompactionFailed { trigger, message } => Some(json!({
                "type": "system", "subtype": "compaction_failed", "session_id": sid,
                "trigger": trigger.as_str(), "message": message,
            })),
            Event::ContextWarning {
                used_tokens,
                usable_tokens,
                window,
            } => Some(json!({
                "type": "system", "subtype": "context_warning", "session_id": sid,
                "used_tokens": used_tokens, "usable_tokens": usable_tokens, "context_window": window,
            })),
            Event::ContextPruned {
                pruned_results,
                pre_tokens,
                post_tokens,
            } => Some(json!({
                "type": "system", "subtype": "context_pruned", "session_id": sid,
                "pruned_results": pruned_results, "pre_tokens": pre_tokens, "post_tokens": post_tokens,
            })),
            Event::SessionBusy { pid, host } => Some(json!({
                "type": "system", "subtype": "session_busy", "session_id": sid,
                "pid": pid, "host": host,
            })),
            Event::RunFinished(summary) => Some(result_object(summary, sid)),
            Event::TaskNotification {
                task_id,
                agent,
                description,
                reason,
                final_text,
            } => Some(json!({
                "type": "system", "subtype": "task_notification", "session_id": sid,
                "task_id": task_id, "agent": agent, "description": description,
                "status": subtype(*reason), "result": final_text,
            })),
            Event::ToolsChanged {
                source,
                added,
                removed,
            } => Some(json!({
                "type": "system", "subtype": "tools_changed", "session_id": sid,
                "source": source, "added": added, "removed": removed,
            })),
            Event::McpServerStatus(status) => Some(json!({
                "type": "system", "subtype": "mcp_server_status", "session_id": sid,
                "server": status.server, "status": status.status.as_str(), "message": status.message,
            })),
            Event::Subagent { .. } => self.subagent_line(event),
            _ => self.partial(event),
        }
    }

    /// The line of a subagent's event, however deeply nested.
    fn subagent_line(&self, mut event: &Event) -> Option<Value> {
        let sid = &self.session_id;
        let mut nest = None;
        while let Event::Subagent {
            call_id,
            task_id,
            agent,
            inner,
        } = event
        {
            nest = Some((call_id, task_id, agent));
            event = inner;
        }
        let (call_id, task_id, agent) = nest?;
        let mut line = match event {
            Event::RunStarted { .. } => json!({
                "type": "system", "subtype": "task_started", "session_id": sid,
                "task_id": task_id, "agent": agent,
            }),
            Event::RunFinished(summary) => {
                let mut line = json!({
                    "type": "system", "subtype": "task_finished", "session_id": sid,
                    "task_id": task_id, "agent": agent, "status": subtype(summary.reason),
                    "num_turns": summary.num_turns, "result": summary.final_text,
                });
                if let (Some(error), Some(obj)) = (&summary.error, line.as_object_mut()) {
                    obj.insert("error".into(), json!(error.message));
                }
                line
            }
            Event::MessageAppended { message } => message_line(message, sid)?,
            // The child's other system lines (retries, compaction, its own
            // notifications) describe its run, not the top-level one.
            _ => self.partial(event)?,
        };
        if let Some(obj) = line.as_object_mut() {
            obj.insert("parent_tool_use_id".into(), json!(call_id));
        }
        Some(line)
    }

    /// The `stream_event` line of a delta, with `--include-partial-messages`.
    fn partial(&self, event: &Event) -> Option<Value> {
        if !self.include_partial_messages {
            return None;
        }
        let inner = match event {
            Event::TextDelta { text } => {
                json!({"type": "content_block_delta", "delta": {"type": "text_delta", "text": text}})
            }
            Event::ReasoningDelta { text } => {
                json!({"type": "content_block_delta", "delta": {"type": "thinking_delta", "thinking": text}})
            }
            Event::ToolCallStarted { call_id, name } => {
                json!({"type": "content_block_start", "content_block": {"type": "tool_use", "id": call_id, "name": name}})
            }
            Event::ToolProgress { call_id, output } => {
                json!({"type": "tool_progress", "tool_use_id": call_id, "output": output})
            }
            _ => return None,
        };
        Some(json!({"type": "stream_event", "session_id": self.session_id, "event": inner}))
    }
}

/// `assistant` lines for the model's messages, `user` lines for tool results.
/// The user's own prompt is not echoed.
fn message_line(message: &Message, session_id: &str) -> Option<Value> {
    match message.role {
        Role::Assistant => {
            let content: Vec<Value> = message.parts.iter().filter_map(assistant_block).collect();
            Some(json!({
                "type": "assistant", "session_id": session_id,
                "message": {"id": message.id, "role": "assistant", "content": content},
            }))
        }
        Role::User => {
            let content: Vec<Value> = message
                .tool_results()
                .map(|r| {
                    json!({
                        "type": "tool_result", "tool_use_id": r.call_id,
                        "content": tool_result_text(&r.content), "is_error": r.is_error,
                    })
                })
                .collect();
            (!content.is_empty()).then(|| {
                json!({
                    "type": "user", "session_id": session_id,
                    "message": {"role": "user", "content": content},
                })
            })
        }
    }
}

fn assistant_block(part: &Part) -> Option<Value> {
    match part {
        Part::Text { text } => Some(json!({"type": "text", "text": text})),
        Part::Reasoning {
            text, signature, ..
        } => Some(json!({"type": "thinking", "thinking": text, "signature": signature})),
        Part::ToolCall(call) => {
            // Arguments that are not valid JSON are shown as the raw string.
            let input = call
                .arguments_json()
                .unwrap_or_else(|| Value::String(call.arguments.clone()));
            Some(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}))
        }
        Part::ToolResult(_) | Part::Image { .. } => None,
    }
}

fn tool_result_text(content: &[ToolResultContent]) -> String {
    let mut out = String::new();
    for item in content {
        match item {
            ToolResultContent::Text { text } => out.push_str(text),
            ToolResultContent::Image { media_type, .. } => {
                out.push_str(&format!("[image {media_type}]"))
            }
        }
    }
    out
}

/// The `result` object (stream-json's last line, and the whole `json` output).
pub fn result_object(summary: &RunSummary, session_id: &str) -> Value {
    let mut result = json!({
        "type": "result",
        "subtype": subtype(summary.reason),
        "is_error": summary.reason != FinishReason::Completed,
        "result": summary.final_text,
        "num_turns": summary.num_turns,
        "session_id": session_id,
        "duration_ms": summary.duration_ms,
        "usage": usage_object(&summary.usage),
        // 0 when the model's prices are unknown (a local model, say).
        "total_cost_usd": summary.cost_usd,
    });
    if let (Some(error), Some(obj)) = (&summary.error, result.as_object_mut()) {
        obj.insert("error".into(), json!(error.message));
    }
    result
}

/// The word for how a run ended: the `result` object's `subtype`, and the
/// `status` of a subagent's end.
fn subtype(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Completed => "success",
        FinishReason::MaxTurns => "error_max_turns",
        FinishReason::Budget => "error_max_budget_usd",
        FinishReason::LoopGuard | FinishReason::Failed | FinishReason::Cancelled => {
            "error_during_execution"
        }
    }
}

fn usage_object(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gyre_protocol::{Outcome, ToolCall, ToolResult};
    use std::sync::Arc;

    #[test]
    fn tool_messages_map_to_claude_code_shapes() {
        let out = StreamJson::new("s1".into(), false);
        let assistant = Message::new(
            "m1",
            Role::Assistant,
            vec![
                Part::text("Reading."),
                Part::ToolCall(ToolCall::new("c1", "read", r#"{"file_path":"a"}"#)),
            ],
        );
        let line = out
            .line(&Event::MessageAppended {
                message: Arc::new(assistant),
            })
            .unwrap();
        assert_eq!(line["type"], "assistant");
        assert_eq!(line["message"]["content"][1]["input"]["file_path"], "a");
        let results = Message::new(
            "m2",
            Role::User,
            vec![Part::ToolResult(ToolResult::text(
                "c1",
                "read",
                "boom",
                Outcome::Error,
            ))],
        );
        let line = out
            .line(&Event::MessageAppended {
                message: Arc::new(results),
            })
            .unwrap();
        assert_eq!(
            line["message"]["content"][0],
            json!({"type": "tool_result", "tool_use_id": "c1", "content": "boom", "is_error": true})
        );
        let prompt = Message::user_text("m0", "hi");
        assert!(
            out.line(&Event::MessageAppended {
                message: Arc::new(prompt)
            })
            .is_none()
        );
    }

    #[test]
    fn compact_boundaries_follow_the_contract() {
        use gyre_protocol::{CompactBoundary, CompactTrigger};
        let out = StreamJson::new("s".into(), false);
        let line = out
            .line(&Event::CompactBoundary {
                message_id: "m".into(),
                boundary: CompactBoundary {
                    trigger: CompactTrigger::Auto,
                    pre_tokens: 123_456,
                    post_tokens: 9_876,
                    kept_from: None,
                },
            })
            .unwrap();
        assert_eq!(
            line,
            json!({"type": "system", "subtype": "compact_boundary", "session_id": "s",
                "compact_metadata": {"trigger": "auto", "pre_tokens": 123_456, "post_tokens": 9_876}})
        );
    }

    #[test]
    fn partial_messages_only_when_asked() {
        let delta = Event::TextDelta { text: "x".into() };
        assert!(StreamJson::new("s".into(), false).line(&delta).is_none());
        let line = StreamJson::new("s".into(), true).line(&delta).unwrap();
        assert_eq!(line["type"], "stream_event");
        assert_eq!(line["event"]["delta"]["text"], "x");
    }

    fn summary(reason: FinishReason, text: &str) -> RunSummary {
        RunSummary {
            reason,
            final_text: text.into(),
            num_turns: 2,
            usage: Usage::default(),
            cost_usd: 0.0,
            duration_ms: 5,
            error: None,
        }
    }

    /// `inner` as an event of the subagent `task_id`, started by `call_id`.
    fn nested(call_id: &str, task_id: &str, agent: &str, inner: Event) -> Event {
        Event::Subagent {
            call_id: call_id.into(),
            task_id: task_id.into(),
            agent: agent.into(),
            inner: Box::new(inner),
        }
    }

    fn appended(message: Message) -> Event {
        Event::MessageAppended {
            message: Arc::new(message),
        }
    }

    #[test]
    fn a_subagents_messages_name_the_task_call() {
        let out = StreamJson::new("top".into(), false);
        let assistant = Message::new("m1", Role::Assistant, vec![Part::text("Found it.")]);
        let line = out
            .line(&nested("call-1", "child", "explore", appended(assistant)))
            .unwrap();
        assert_eq!(
            line,
            json!({"type": "assistant", "session_id": "top", "parent_tool_use_id": "call-1",
                "message": {"id": "m1", "role": "assistant",
                    "content": [{"type": "text", "text": "Found it."}]}})
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
        let out = StreamJson::new("top".into(), false);
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
                "task_id": "child", "agent": "explore", "parent_tool_use_id": "call-1"})
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
        let out = StreamJson::new("top".into(), true);
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
        let out = StreamJson::new("top".into(), false);
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
                "event": {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "x"}}})
        );
    }

    #[test]
    fn mcp_servers_and_late_tools_are_system_lines() {
        use gyre_protocol::{McpServerState, McpServerStatus};
        let out = StreamJson::new("s".into(), false);
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
        let out = StreamJson::new("top".into(), false);
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
                "status": "error_during_execution", "result": "partial"})
        );
    }
}
