//! Headless output: `stream-json` lines, the `json` result object, `text`.
//!
//! Shapes follow Claude Code's headless stream format (CONTRACT.md), so tools
//! that read it can read gyre. Each event maps to at most one line; the first
//! line is always `system/init` and the last the `result` object.

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
            } => Some(json!({
                "type": "system", "subtype": "retry", "session_id": sid,
                "attempt": attempt, "delay_ms": delay_ms, "reason": reason,
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
            Event::TextDelta { text } if self.include_partial_messages => Some(stream_event(
                sid,
                json!({"type": "content_block_delta", "delta": {"type": "text_delta", "text": text}}),
            )),
            Event::ReasoningDelta { text } if self.include_partial_messages => Some(stream_event(
                sid,
                json!({"type": "content_block_delta", "delta": {"type": "thinking_delta", "thinking": text}}),
            )),
            Event::ToolCallStarted { call_id, name } if self.include_partial_messages => {
                Some(stream_event(
                    sid,
                    json!({"type": "content_block_start", "content_block": {"type": "tool_use", "id": call_id, "name": name}}),
                ))
            }
            Event::ToolProgress { call_id, output } if self.include_partial_messages => {
                Some(stream_event(
                    sid,
                    json!({"type": "tool_progress", "tool_use_id": call_id, "output": output}),
                ))
            }
            _ => None,
        }
    }
}

fn stream_event(session_id: &str, event: Value) -> Value {
    json!({"type": "stream_event", "session_id": session_id, "event": event})
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
    let subtype = match summary.reason {
        FinishReason::Completed => "success",
        FinishReason::MaxTurns => "error_max_turns",
        FinishReason::Budget => "error_max_budget_usd",
        FinishReason::LoopGuard | FinishReason::Failed | FinishReason::Cancelled => {
            "error_during_execution"
        }
    };
    let mut result = json!({
        "type": "result",
        "subtype": subtype,
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
}
