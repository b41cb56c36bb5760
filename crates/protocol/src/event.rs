//! The one event stream every frontend consumes.
//!
//! Invariants (what a consumer may rely on):
//! - The first event of a run is [`Event::RunStarted`]; the last is
//!   [`Event::RunFinished`], and nothing follows it.
//! - Within a turn: deltas of a part come before the part's completion; a tool
//!   call's [`Event::ToolCallStarted`] comes before its
//!   [`Event::ToolCallReady`], which comes before its [`Event::ToolResult`].
//! - [`Event::MessageAppended`] is sent once a message is stored (the assistant
//!   message when the model's answer ends, the tool-results message when every
//!   call of the turn has its result). Messages are shared (`Arc`), never copied
//!   per event.
//! - [`Event::RunStarted`]'s `tools` are the tools offered at the start;
//!   each later change is one [`Event::ToolsChanged`] per source, sent at a
//!   turn boundary before the [`Event::TurnStarted`] of the first request
//!   that carries it. [`Event::McpServerStatus`] events may come at any
//!   point between the first and the last event (they are not tied to
//!   turns), and only from a run a person started, not from subagents.
//! - Events carry what a frontend needs to show; nothing in them is needed to
//!   continue the run (the loop's state lives in the core and the store).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{
    CompactBoundary, CompactTrigger, Message, StopReason, Todo, ToolCall, ToolResult, Usage,
};

/// Something that happened in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    RunStarted {
        session_id: String,
        model: String,
        cwd: String,
        tools: Vec<String>,
    },
    /// A model request is about to be sent (1-based within the run).
    TurnStarted {
        turn: u32,
    },
    TextDelta {
        text: String,
    },
    ReasoningDelta {
        text: String,
    },
    /// The model began a tool call; its arguments are still streaming.
    ToolCallStarted {
        call_id: String,
        name: String,
    },
    /// A tool call's arguments are complete; the call is scheduled (or refused).
    ToolCallReady {
        call: ToolCall,
    },
    /// Output so far of a long-running tool (a chunk, not the whole).
    ToolProgress {
        call_id: String,
        output: String,
    },
    ToolResult {
        /// One line for display: what ran, and how it ended.
        title: String,
        result: ToolResult,
    },
    /// A message was appended to the session (and stored).
    MessageAppended {
        message: Arc<Message>,
    },
    TurnCompleted {
        turn: u32,
        usage: Usage,
        stop_reason: StopReason,
        /// What the turn cost, when the model's prices are known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// The session's todo list changed (the whole list, in order).
    TodosUpdated {
        todos: Vec<Todo>,
    },
    /// The context's estimated size as a request is about to be sent
    /// (tokens; `usable` is the window less the reserved output and margin).
    ContextUsage {
        used_tokens: u64,
        usable_tokens: u64,
        window: u64,
    },
    /// The context passed the warning share of its usable budget (once until
    /// the next compaction).
    ContextWarning {
        used_tokens: u64,
        usable_tokens: u64,
        window: u64,
    },
    /// Outputs of old tool calls were replaced by short markers in what is
    /// sent (they stay whole in the store and on screen).
    ContextPruned {
        pruned_results: u32,
        pre_tokens: u64,
        post_tokens: u64,
    },
    /// A summarising request started; the history will be compacted.
    CompactionStarted {
        trigger: CompactTrigger,
    },
    /// The history before `message_id` (a summary, now stored) was compacted.
    CompactBoundary {
        message_id: String,
        boundary: CompactBoundary,
    },
    /// A compaction could not be done; the history is unchanged.
    CompactionFailed {
        trigger: CompactTrigger,
        message: String,
    },
    /// No checkpoint could be taken before `call_id` changed files (no git,
    /// a full disk, a broken shadow store): the call still runs, but a
    /// files-rewind to before it cannot restore what it changes.
    CheckpointFailed {
        call_id: String,
        message: String,
    },
    /// Another run (of this or another process, on `host`) is using the
    /// session; this run waits for it, then goes on with the history as that
    /// run left it.
    SessionBusy {
        pid: u32,
        host: String,
    },
    /// A failed request will be tried again after `delay_ms`.
    RetryScheduled {
        attempt: u32,
        delay_ms: u64,
        reason: String,
        /// What failed, in one sentence (it names the URL when nothing
        /// answered there).
        #[serde(default)]
        message: String,
    },
    /// The loop needs an answer before it can run a tool (interactive frontends).
    PermissionRequested {
        request_id: String,
        call: ToolCall,
        reason: String,
        /// The rule (or comma-separated rules) an "always allow" answer
        /// adds for the rest of the session, in the rule language of
        /// `--allowed-tools`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        always_rule: Option<String>,
    },
    /// An event of a subagent's run, nested under the parent's `task` call
    /// that started it (a grandchild's events are nested twice). Foreground
    /// subagents forward every event; background ones forward display-only
    /// (dropped when the consumer is behind: their transcript is stored).
    Subagent {
        /// The parent's `task` call.
        call_id: String,
        /// The subagent's session id: what `task_output` and `resume` take.
        task_id: String,
        agent: String,
        inner: Box<Event>,
    },
    /// A background subagent's end was delivered to the model (at a turn
    /// boundary, as a `<task-notification>` message).
    TaskNotification {
        task_id: String,
        agent: String,
        description: String,
        reason: FinishReason,
        /// The subagent's final text (its result).
        final_text: String,
    },
    /// Tools joined or left the tools offered to the model, at a turn
    /// boundary (never mid-turn): the next request carries them. `source`
    /// names where they come from (an MCP server's name). Tools that join
    /// are offered after the built-in ones, in the order they joined.
    ToolsChanged {
        source: String,
        /// Names as the model sees them (`mcp__SERVER__TOOL`).
        added: Vec<String>,
        removed: Vec<String>,
    },
    /// An MCP server's state changed (sent as soon as the run hears of it;
    /// a run's first ones, right after [`Event::RunStarted`], give the state
    /// of every configured server at that moment).
    McpServerStatus(McpServerStatus),
    RunFinished(RunSummary),
}

/// The state of one MCP server, with one sentence saying why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerStatus {
    /// Its name in the configuration.
    pub server: String,
    pub status: McpServerState,
    /// One sentence: what is happening, or what went wrong and what to do
    /// (a server that fails to start: its error and the tail of its stderr).
    pub message: String,
}

/// Where an MCP server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpServerState {
    /// Being started (at the session's start, or again after a crash).
    Starting,
    /// Running; its tools are offered.
    Ready,
    /// Could not be started (bad command, start timeout, failed
    /// handshake); its tools are not offered.
    Failed,
    /// Exited or lost its connection while in use; started again on the
    /// next call of one of its tools.
    Crashed,
}

impl McpServerState {
    /// The word in serde forms and stream-json.
    pub fn as_str(self) -> &'static str {
        match self {
            McpServerState::Starting => "starting",
            McpServerState::Ready => "ready",
            McpServerState::Failed => "failed",
            McpServerState::Crashed => "crashed",
        }
    }
}

/// How a run ended, with its totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub reason: FinishReason,
    /// The final assistant text (empty when the run did not reach one).
    pub final_text: String,
    /// Model requests made by the run's main loop.
    pub num_turns: u32,
    pub usage: Usage,
    /// What the run cost, summed over its turns (0 when prices are unknown).
    #[serde(default)]
    pub cost_usd: f64,
    pub duration_ms: u64,
    /// What went wrong, when the run did not succeed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
}

/// Why a run did not succeed: a class for exit codes, and one sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunError {
    pub kind: RunErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunErrorKind {
    /// The provider rejected the key (a configuration problem).
    Auth,
    /// The conversation does not fit the model's context window.
    ContextOverflow,
    /// The provider failed, or could not be reached.
    Provider,
    /// The provider's URL is wrong: nothing answered there on the run's
    /// first request, or what answered is not the API (a configuration
    /// problem, like a rejected key).
    Endpoint,
    /// The session store failed.
    Store,
    /// A limit ended the run (turns, budget, loop guard).
    Limit,
    /// The user cancelled.
    Cancelled,
    /// A hook of the user's blocked the run (its prompt, say).
    Hook,
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model finished.
    Completed,
    /// The turn limit was reached.
    MaxTurns,
    /// A budget (tokens, cost) was reached.
    Budget,
    /// The loop guard stopped a repeating run.
    LoopGuard,
    /// A provider, tool or store error ended the run.
    Failed,
    /// The user cancelled.
    Cancelled,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serde forms other frontends (HTTP, ACP) rely on.
    #[test]
    fn mcp_events_have_flat_serde_forms() {
        let status = Event::McpServerStatus(McpServerStatus {
            server: "docs".into(),
            status: McpServerState::Crashed,
            message: "gone".into(),
        });
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"event": "mcp_server_status", "server": "docs", "status": "crashed", "message": "gone"})
        );
        assert_eq!(serde_json::from_value::<Event>(json).unwrap(), status);
        let changed = Event::ToolsChanged {
            source: "docs".into(),
            added: vec!["mcp__docs__a".into()],
            removed: vec![],
        };
        let json = serde_json::to_value(&changed).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"event": "tools_changed", "source": "docs", "added": ["mcp__docs__a"], "removed": []})
        );
        assert_eq!(serde_json::from_value::<Event>(json).unwrap(), changed);
        assert_eq!(McpServerState::Starting.as_str(), "starting");
    }
}
