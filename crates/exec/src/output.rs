//! Headless output: `stream-json` lines, the `json` result object, `text`.
//!
//! Shapes follow Claude Code's headless stream format (CONTRACT.md), field
//! for field where the Agent SDKs' message parsers read them, so tools
//! that read Claude Code read gyre: every line has a `uuid`; `assistant`
//! lines carry `message.id`, `model`, `usage` and `stop_reason`; `user`,
//! `assistant` and `stream_event` lines carry `parent_tool_use_id`. The
//! first line is always `system/init` and the last the `result` object.
//!
//! An event maps to zero or more lines: an assistant message is held until
//! its turn's `TurnCompleted` (which brings its usage and stop reason) or
//! the next event, whichever comes first, and under
//! `--include-partial-messages` one delta may close one content block and
//! open another (`partial`). Apart from fresh `uuid`s the lines are a pure
//! function of the event stream (no IO), so a live run and a replay print
//! the same lines.
//!
//! Subagents' events ([`Event::Subagent`], nested once per level) become
//! lines of the top-level session: `session_id` is always the top-level
//! run's, and `parent_tool_use_id` names the innermost `task` call, so a
//! reader can tell whose line it is. A child's own `init`, `result` and
//! other `system` lines are not printed (they would look like the run's);
//! its start and end become `system/task_started` (with the `task` call's
//! `description`) and `system/task_finished` instead.
//!
//! MCP servers' states and tools that join or leave during the run are
//! `system/mcp_server_status` and `system/tools_changed` lines.

mod partial;
mod result;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;

use gyre_llm::catalog::Pricing;
use gyre_protocol::{Event, Message, Part, Role, StopReason, ToolResultContent, Usage};
use serde_json::{Value, json};

use partial::Answer;
pub use result::{result_object, with_cache_savings, with_cost_note};
use result::{subtype, usage_object};

/// The Claude Code version whose headless protocol gyre's stream-json
/// matches (what the Agent SDKs read from `system/init` to decide whether
/// the CLI is recent enough); gyre's own version is `gyre_version`.
pub const CLAUDE_CODE_VERSION: &str = "2.1.332";

/// What `system/init` says beyond the run's own event: known to the
/// frontend (from the settings), not to the loop.
#[derive(Debug, Clone, Default)]
pub struct InitInfo {
    /// `default`, `acceptEdits`, `plan`, `bypassPermissions`.
    pub permission_mode: String,
    /// The agents `task` can start.
    pub agents: Vec<String>,
    /// Each configured MCP server and its state at the start, in Claude
    /// Code's words (`pending`, `connected`, `failed`, `disabled`).
    pub mcp_servers: Vec<(String, String)>,
    /// Where the API key came from (`ANTHROPIC_API_KEY`, `none`, …).
    pub api_key_source: String,
    /// What the run said on stderr about its flags and rules (accepted but
    /// not honoured, rules naming no tool): `gyre_warnings`, when any.
    pub warnings: Vec<String>,
    /// The custom commands of the workspace and the user (`/name`), which
    /// `gyre run "/name args"` expands: `slash_commands`.
    pub slash_commands: Vec<String>,
    /// Whether the session model's prices are known (`None`: not said);
    /// when they are not, the result says so in `cost_note`.
    pub prices_known: Option<bool>,
}

/// Maps run events to stream-json lines.
#[derive(Debug)]
pub struct StreamJson {
    session_id: String,
    include_partial_messages: bool,
    init: Option<InitInfo>,
    model: String,
    /// The assistant message waiting for its turn's usage, and whose it
    /// is (`None`: the top-level run's; else the innermost `task` call).
    pending: Option<(Option<String>, Arc<Message>)>,
    /// Streamed answers in progress, by the same key (at most one per
    /// running subagent).
    answers: HashMap<Option<String>, Answer>,
    /// `task` calls' descriptions, by call id, until their subagent starts.
    task_descriptions: HashMap<String, String>,
    /// The model's prices, when known: the result says what the cache saved.
    pricing: Option<Pricing>,
}

impl StreamJson {
    pub fn new(session_id: String, include_partial_messages: bool) -> Self {
        Self {
            session_id,
            include_partial_messages,
            init: None,
            model: String::new(),
            pending: None,
            answers: HashMap::new(),
            task_descriptions: HashMap::new(),
            pricing: None,
        }
    }

    /// The same, pricing the result's cache savings at `pricing`.
    pub fn with_pricing(mut self, pricing: Option<Pricing>) -> Self {
        self.pricing = pricing;
        self
    }

    /// The same, with what a live run's `system/init` says beyond its event
    /// (a replay does not know it and leaves it out).
    pub fn with_init(mut self, init: InitInfo) -> Self {
        self.init = Some(init);
        self
    }

    /// The lines for `event`, in order, each with a fresh `uuid`.
    pub fn lines(&mut self, event: &Event) -> Vec<Value> {
        let (parent, inner) = unnest(event);
        let key = parent.map(|(call_id, _, _)| call_id.to_string());
        let mut out = Vec::new();
        if let Event::ToolCallReady { call } = inner {
            self.remember_task(call);
        }
        let completed = match inner {
            Event::TurnCompleted {
                usage, stop_reason, ..
            } => Some((usage, *stop_reason)),
            _ => None,
        };
        if let Some((usage, stop)) = completed
            && let Some(answer) = self.answers.remove(&key)
        {
            out.extend(
                answer
                    .finish(stop_value(stop), usage.output_tokens)
                    .into_iter()
                    .map(|e| self.stream_event(e, key.as_deref())),
            );
        }
        if let Some((owner, message)) = self.pending.take() {
            let usage = completed.filter(|_| owner == key);
            let mut line = message_line(&message, &self.session_id, &self.model, usage);
            if let (Some(line), Some(obj)) = (line.as_mut(), line_obj_parent(owner.as_deref())) {
                set(line, "parent_tool_use_id", obj);
            }
            out.extend(line);
        }
        match parent {
            None => out.extend(self.top_level(inner)),
            Some(nest) => out.extend(self.subagent_line(nest, inner)),
        }
        for line in &mut out {
            set(line, "uuid", json!(uuid::Uuid::now_v7().to_string()));
        }
        out
    }

    /// The lines still held (an assistant message waiting for its
    /// usage): for a stream that ends without a `RunFinished`.
    pub fn flush(&mut self) -> Vec<Value> {
        let Some((owner, message)) = self.pending.take() else {
            return Vec::new();
        };
        let mut line = message_line(&message, &self.session_id, &self.model, None);
        if let (Some(line), Some(parent)) = (line.as_mut(), line_obj_parent(owner.as_deref())) {
            set(line, "parent_tool_use_id", parent);
        }
        line.into_iter()
            .map(|mut l| {
                set(&mut l, "uuid", json!(uuid::Uuid::now_v7().to_string()));
                l
            })
            .collect()
    }

    /// The last line of `event` (held ones flushed), without its `uuid`
    /// (tests).
    #[cfg(test)]
    fn line(&mut self, event: &Event) -> Option<Value> {
        let mut lines = self.lines(event);
        lines.extend(self.flush());
        let mut line = lines.pop()?;
        assert!(line["uuid"].is_string(), "{line}");
        line.as_object_mut()?.remove("uuid");
        Some(line)
    }

    fn top_level(&mut self, event: &Event) -> Vec<Value> {
        let sid = self.session_id.clone();
        let line = match event {
            Event::RunStarted {
                session_id,
                model,
                cwd,
                tools,
            } => {
                self.model = model.clone();
                self.init_line(session_id, model, cwd, tools)
            }
            Event::MessageAppended { message } => return self.appended(message, None),
            Event::RetryScheduled {
                attempt,
                delay_ms,
                reason,
                message,
            } => json!({
                "type": "system", "subtype": "retry", "session_id": sid,
                "attempt": attempt, "delay_ms": delay_ms, "reason": reason, "message": message,
            }),
            Event::CompactBoundary { boundary, .. } => json!({
                "type": "system", "subtype": "compact_boundary", "session_id": sid,
                "compact_metadata": {
                    "trigger": boundary.trigger.as_str(),
                    "pre_tokens": boundary.pre_tokens,
                    "post_tokens": boundary.post_tokens,
                },
            }),
            Event::CompactionFailed { trigger, message } => json!({
                "type": "system", "subtype": "compaction_failed", "session_id": sid,
                "trigger": trigger.as_str(), "message": message,
            }),
            Event::ContextWarning {
                used_tokens,
                usable_tokens,
                window,
            } => json!({
                "type": "system", "subtype": "context_warning", "session_id": sid,
                "used_tokens": used_tokens, "usable_tokens": usable_tokens, "context_window": window,
            }),
            Event::ContextPruned {
                pruned_results,
                pre_tokens,
                post_tokens,
            } => json!({
                "type": "system", "subtype": "context_pruned", "session_id": sid,
                "pruned_results": pruned_results, "pre_tokens": pre_tokens, "post_tokens": post_tokens,
            }),
            Event::CheckpointFailed { call_id, message } => json!({
                "type": "system", "subtype": "checkpoint_failed", "session_id": sid,
                "tool_use_id": call_id, "message": message,
            }),
            Event::SessionBusy { pid, host } => json!({
                "type": "system", "subtype": "session_busy", "session_id": sid,
                "pid": pid, "host": host,
            }),
            Event::RunFinished(summary) => {
                let mut out = self.abandon_answer(None);
                let mut result = result_object(summary, &sid, &self.model);
                if let Some(known) = self.init.as_ref().and_then(|i| i.prices_known) {
                    with_cost_note(&mut result, &self.model, known);
                }
                with_cache_savings(&mut result, &summary.usage, self.pricing.as_ref());
                out.push(result);
                return out;
            }
            Event::TaskNotification {
                task_id,
                agent,
                description,
                reason,
                final_text,
            } => json!({
                "type": "system", "subtype": "task_notification", "session_id": sid,
                "task_id": task_id, "agent": agent, "description": description,
                "status": subtype(*reason), "result": final_text,
                // What the Agent SDKs read: Claude Code's names.
                "summary": description, "output_file": "",
            }),
            Event::ToolsChanged {
                source,
                added,
                removed,
            } => json!({
                "type": "system", "subtype": "tools_changed", "session_id": sid,
                "source": source, "added": added, "removed": removed,
            }),
            Event::McpServerStatus(status) => json!({
                "type": "system", "subtype": "mcp_server_status", "session_id": sid,
                "server": status.server, "status": status.status.as_str(), "message": status.message,
            }),
            _ => return self.partial(event, None),
        };
        vec![line]
    }

    fn init_line(&self, session_id: &str, model: &str, cwd: &str, tools: &[String]) -> Value {
        let mut line = json!({
            "type": "system", "subtype": "init", "session_id": session_id,
            "model": model, "cwd": cwd, "tools": tools,
            "claude_code_version": CLAUDE_CODE_VERSION,
            "gyre_version": env!("CARGO_PKG_VERSION"),
            "slash_commands": [], "output_style": "default",
        });
        if let Some(init) = &self.init {
            let servers: Vec<Value> = init
                .mcp_servers
                .iter()
                .map(|(name, status)| json!({"name": name, "status": status}))
                .collect();
            set(&mut line, "mcp_servers", json!(servers));
            set(&mut line, "permissionMode", json!(init.permission_mode));
            set(&mut line, "agents", json!(init.agents));
            set(&mut line, "apiKeySource", json!(init.api_key_source));
            set(&mut line, "slash_commands", json!(init.slash_commands));
            if !init.warnings.is_empty() {
                set(&mut line, "gyre_warnings", json!(init.warnings));
            }
        }
        line
    }

    /// A stored message: an assistant one waits for its usage; a user one
    /// with tool results is printed now.
    fn appended(&mut self, message: &Arc<Message>, key: Option<&str>) -> Vec<Value> {
        if message.role == Role::Assistant {
            for part in &message.parts {
                if let Part::ToolCall(call) = part {
                    self.remember_task(call);
                }
            }
            self.pending = Some((key.map(String::from), message.clone()));
            return Vec::new();
        }
        let mut line = message_line(message, &self.session_id, &self.model, None);
        if let (Some(line), Some(parent)) = (line.as_mut(), line_obj_parent(key)) {
            set(line, "parent_tool_use_id", parent);
        }
        line.into_iter().collect()
    }

    /// A `task` call's description, for its subagent's `task_started`
    /// line (the call may start before its message is complete).
    fn remember_task(&mut self, call: &gyre_protocol::ToolCall) {
        if call.name == "task"
            && !self.task_descriptions.contains_key(&call.id)
            && let Some(description) = call.arguments_json().and_then(|a| {
                a.get("description")
                    .and_then(Value::as_str)
                    .map(String::from)
            })
        {
            self.task_descriptions.insert(call.id.clone(), description);
        }
    }

    /// The lines of a subagent's event, however deeply nested.
    fn subagent_line(&mut self, (call_id, task_id, agent): Nest<'_>, event: &Event) -> Vec<Value> {
        let sid = self.session_id.clone();
        let mut lines = match event {
            Event::RunStarted { .. } => {
                let description = self.task_descriptions.remove(call_id).unwrap_or_default();
                vec![json!({
                    "type": "system", "subtype": "task_started", "session_id": sid,
                    "task_id": task_id, "agent": agent, "description": description,
                    "tool_use_id": call_id, "task_type": "local_agent",
                })]
            }
            Event::RunFinished(summary) => {
                let mut out = self.abandon_answer(Some(call_id));
                let mut line = json!({
                    "type": "system", "subtype": "task_finished", "session_id": sid,
                    "task_id": task_id, "agent": agent, "status": subtype(summary.reason),
                    "num_turns": summary.num_turns, "result": summary.final_text,
                });
                if let Some(error) = &summary.error {
                    set(&mut line, "error", json!(error.message));
                }
                out.push(line);
                out
            }
            Event::MessageAppended { message } => self.appended(message, Some(call_id)),
            // The child's other system lines (retries, compaction, its own
            // notifications) describe its run, not the top-level one.
            _ => self.partial(event, Some(call_id)),
        };
        for line in &mut lines {
            set(line, "parent_tool_use_id", json!(call_id));
        }
        lines
    }

    /// `stream_event` lines, with `--include-partial-messages`.
    fn partial(&mut self, event: &Event, key: Option<&str>) -> Vec<Value> {
        if !self.include_partial_messages {
            return Vec::new();
        }
        let owner = key.map(String::from);
        let mut events = Vec::new();
        let answer = match event {
            Event::TurnStarted { .. }
            | Event::TextDelta { .. }
            | Event::ReasoningDelta { .. }
            | Event::ToolCallStarted { .. }
            | Event::ToolCallReady { .. } => match self.answers.remove(&owner) {
                Some(answer) => Some(answer),
                None => {
                    let (answer, start) = Answer::start(&self.model);
                    events.push(start);
                    Some(answer)
                }
            },
            _ => None,
        };
        if let Some(mut answer) = answer {
            match event {
                Event::TextDelta { text } => events.extend(answer.text(text)),
                Event::ReasoningDelta { text } => events.extend(answer.thinking(text)),
                Event::ToolCallStarted { call_id, name } => {
                    events.extend(answer.tool_started(call_id, name))
                }
                Event::ToolCallReady { call } => {
                    events.extend(answer.tool_ready(&call.id, &call.name, &call.arguments))
                }
                _ => {}
            }
            self.answers.insert(owner, answer);
        }
        if let Event::ToolProgress { call_id, output } = event {
            // gyre's own: a running tool's output.
            events.push(json!({"type": "tool_progress", "tool_use_id": call_id, "output": output}));
        }
        events
            .into_iter()
            .map(|e| self.stream_event(e, key))
            .collect()
    }

    /// Closes an answer its run left unfinished (a failure or a cancel).
    fn abandon_answer(&mut self, key: Option<&str>) -> Vec<Value> {
        match self.answers.remove(&key.map(String::from)) {
            Some(answer) => answer
                .finish(None, 0)
                .into_iter()
                .map(|e| self.stream_event(e, key))
                .collect(),
            None => Vec::new(),
        }
    }

    fn stream_event(&self, event: Value, parent: Option<&str>) -> Value {
        json!({"type": "stream_event", "session_id": self.session_id,
            "parent_tool_use_id": parent, "event": event})
    }
}

/// The innermost `task` call, subagent id and agent of a nested event.
type Nest<'a> = (&'a str, &'a str, &'a str);

fn unnest(mut event: &Event) -> (Option<Nest<'_>>, &Event) {
    let mut nest = None;
    while let Event::Subagent {
        call_id,
        task_id,
        agent,
        inner,
    } = event
    {
        nest = Some((call_id.as_str(), task_id.as_str(), agent.as_str()));
        event = inner;
    }
    (nest, event)
}

fn line_obj_parent(key: Option<&str>) -> Option<Value> {
    key.map(|k| json!(k))
}

fn set(line: &mut Value, key: &str, value: Value) {
    if let Some(obj) = line.as_object_mut() {
        obj.insert(key.into(), value);
    }
}

fn stop_value(stop: StopReason) -> Option<Value> {
    serde_json::to_value(stop).ok()
}

/// `assistant` lines for the model's messages, `user` lines for tool results.
/// The user's own prompt is not echoed.
fn message_line(
    message: &Message,
    session_id: &str,
    model: &str,
    completed: Option<(&Usage, StopReason)>,
) -> Option<Value> {
    match message.role {
        Role::Assistant => {
            let content: Vec<Value> = message.parts.iter().filter_map(assistant_block).collect();
            let usage = completed.map(|(u, _)| *u).unwrap_or_default();
            let stop = completed.and_then(|(_, s)| stop_value(s));
            Some(json!({
                "type": "assistant", "session_id": session_id, "parent_tool_use_id": null,
                "message": {"id": message.id, "type": "message", "role": "assistant",
                    "model": model, "content": content, "stop_reason": stop,
                    "stop_sequence": null, "usage": usage_object(&usage)},
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
                    "type": "user", "session_id": session_id, "parent_tool_use_id": null,
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
