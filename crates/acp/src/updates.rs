//! gyre's run events as ACP `session/update`s, and what a tool call looks
//! like to an editor (title, kind, locations, diffs).
//!
//! Invariants:
//! - Pure: no IO; the same events give the same updates (the live stream and
//!   the replay of a stored session share these functions).
//! - A tool call's first update is a `tool_call` (status `pending`, as soon
//!   as the model starts it); every later one is a `tool_call_update` with
//!   the same id: its title, input and locations once its arguments are
//!   complete (still `pending`: it may wait for approval), `in_progress`
//!   once it reports progress (or, from the session, once it is allowed),
//!   then `completed` or `failed` with its result.
//! - A call's progress (a command's output as it comes) is shown as its
//!   content while it runs: the last [`LIVE_OUTPUT_BYTES`] of it, replaced
//!   by the result at the end.
//! - What the editor has no use for (usage, context meters, compaction,
//!   retries, subagents' inner events, event kinds added later) gives no
//!   update.
//!
//! Trade-offs: a `write`'s diff has no old text (the file's earlier
//! content is not kept by the event stream), so an overwritten file shows
//! as new; `edit` and `multi_edit` show the replaced snippets, not whole
//! files. Text deltas are forwarded one by one, not merged.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionUpdate, ToolCall as AcpToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use gyre_protocol::{Event, Todo, TodoStatus, ToolCall, ToolResult};
use serde_json::Value;

/// Titles are one line of at most this many characters.
const TITLE_CHARS: usize = 80;

/// How much of a running call's output is shown (its tail).
const LIVE_OUTPUT_BYTES: usize = 16 * 1024;

/// Turns one session's events into updates; remembers the calls in flight
/// so that their results can be shown with their arguments (diffs).
#[derive(Debug)]
pub struct Updates {
    /// Where relative paths of tool arguments point.
    root: PathBuf,
    /// Calls whose arguments are complete and whose result has not come.
    calls: HashMap<String, ToolCall>,
    /// Calls already said to be `in_progress`.
    running: HashSet<String>,
    /// The tail of each running call's output.
    output: HashMap<String, String>,
}

impl Updates {
    pub fn new(root: PathBuf) -> Self {
        Self {
            root,
            calls: HashMap::new(),
            running: HashSet::new(),
            output: HashMap::new(),
        }
    }

    /// The updates `event` gives (often none).
    pub fn of(&mut self, event: &Event) -> Vec<SessionUpdate> {
        match event {
            Event::TextDelta { text } => vec![agent_text(text)],
            Event::ReasoningDelta { text } => vec![agent_thought(text)],
            Event::ToolCallStarted { call_id, name } => vec![SessionUpdate::ToolCall(
                AcpToolCall::new(call_id.clone(), name.clone())
                    .kind(kind_of(name))
                    .status(ToolCallStatus::Pending),
            )],
            Event::ToolCallReady { call } => vec![self.ready(call)],
            Event::ToolProgress { call_id, output } => vec![self.progress(call_id, output)],
            Event::ToolResult { result, .. } => vec![self.finished(result)],
            Event::TodosUpdated { todos } => vec![plan(todos)],
            _ => Vec::new(),
        }
    }

    /// A call whose arguments are complete: it runs or waits for approval
    /// (`pending` until one of those is known).
    pub fn ready(&mut self, call: &ToolCall) -> SessionUpdate {
        let fields = self.details(call).kind(kind_of(&call.name));
        self.calls.insert(call.id.clone(), call.clone());
        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call.id.clone(), fields))
    }

    /// A running call's output so far (its tail), `in_progress`.
    fn progress(&mut self, call_id: &str, chunk: &str) -> SessionUpdate {
        let shown = self.output.entry(call_id.to_string()).or_default();
        shown.push_str(chunk);
        if shown.len() > LIVE_OUTPUT_BYTES {
            let mut cut = shown.len() - LIVE_OUTPUT_BYTES;
            while !shown.is_char_boundary(cut) {
                cut += 1;
            }
            shown.drain(..cut);
        }
        let mut fields = ToolCallUpdateFields::new()
            .content(vec![ToolCallContent::from(format!("```\n{shown}\n```"))]);
        if self.running.insert(call_id.to_string()) {
            fields = fields.status(ToolCallStatus::InProgress);
        }
        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id.to_string(), fields))
    }

    /// The same call as a whole `tool_call` (a replayed one), in progress.
    pub fn whole(&mut self, call: &ToolCall) -> SessionUpdate {
        let mut shown = AcpToolCall::new(call.id.clone(), title_of(call))
            .kind(kind_of(&call.name))
            .status(ToolCallStatus::InProgress)
            .locations(self.locations(call));
        if let Some(args) = call.arguments_json() {
            shown = shown.raw_input(args);
        }
        self.calls.insert(call.id.clone(), call.clone());
        SessionUpdate::ToolCall(shown)
    }

    /// Title, input and locations of `call` (for updates and permission
    /// requests).
    pub fn details(&self, call: &ToolCall) -> ToolCallUpdateFields {
        let mut fields = ToolCallUpdateFields::new()
            .title(title_of(call))
            .locations(self.locations(call));
        if let Some(args) = call.arguments_json() {
            fields = fields.raw_input(args);
        }
        fields
    }

    /// A call's result: its final status and what to show of it.
    pub fn finished(&mut self, result: &ToolResult) -> SessionUpdate {
        self.running.remove(&result.call_id);
        self.output.remove(&result.call_id);
        let call = self.calls.remove(&result.call_id);
        let diffs = match (&call, result.is_error) {
            (Some(call), false) => self.diffs(call),
            _ => Vec::new(),
        };
        let content = if diffs.is_empty() {
            let text = result.text_content();
            if text.is_empty() {
                Vec::new()
            } else {
                vec![ToolCallContent::from(text)]
            }
        } else {
            diffs
        };
        let status = if result.is_error {
            ToolCallStatus::Failed
        } else {
            ToolCallStatus::Completed
        };
        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            result.call_id.clone(),
            ToolCallUpdateFields::new().status(status).content(content),
        ))
    }

    /// The calls still without a result, forgotten (a replay's end).
    pub fn unanswered(&mut self) -> Vec<String> {
        let mut ids: Vec<String> = self.calls.drain().map(|(id, _)| id).collect();
        ids.sort();
        ids
    }

    /// The file a file tool's call works on, absolute.
    pub fn file_of(&self, call: &ToolCall) -> Option<PathBuf> {
        let args = call.arguments_json()?;
        file_path(&call.name, &args).map(|file| self.path(file))
    }

    fn path(&self, file_path: &str) -> PathBuf {
        let path = Path::new(file_path);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        }
    }

    fn locations(&self, call: &ToolCall) -> Vec<ToolCallLocation> {
        let Some(args) = call.arguments_json() else {
            return Vec::new();
        };
        let Some(file) = file_path(&call.name, &args) else {
            return Vec::new();
        };
        let line = args
            .get("offset")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok());
        vec![ToolCallLocation::new(self.path(file)).line(line)]
    }

    /// The diffs of a successful edit (none for other tools).
    fn diffs(&self, call: &ToolCall) -> Vec<ToolCallContent> {
        let Some(args) = call.arguments_json() else {
            return Vec::new();
        };
        let Some(file) = file_path(&call.name, &args) else {
            return Vec::new();
        };
        let path = self.path(file);
        let text =
            |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
        match call.name.as_str() {
            "write" => text(&args, "content")
                .map(|content| vec![Diff::new(path, content).into()])
                .unwrap_or_default(),
            "edit" => match (text(&args, "old_string"), text(&args, "new_string")) {
                (Some(old), Some(new)) => vec![Diff::new(path, new).old_text(old).into()],
                _ => Vec::new(),
            },
            "multi_edit" => args
                .get("edits")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|edit| {
                    let (old, new) = (text(edit, "old_string")?, text(edit, "new_string")?);
                    Some(Diff::new(path.clone(), new).old_text(old).into())
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

pub fn agent_text(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text)))
}

pub fn agent_thought(text: &str) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::from(text)))
}

pub fn user_text(text: &str) -> SessionUpdate {
    SessionUpdate::UserMessageChunk(ContentChunk::new(ContentBlock::from(text)))
}

/// The final status of a call that never got a result.
pub fn interrupted(call_id: &str) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        call_id.to_string(),
        ToolCallUpdateFields::new().status(ToolCallStatus::Failed),
    ))
}

/// The todo list as a plan: every open or done item, in the model's order
/// (cancelled items are no longer part of the plan).
pub fn plan(todos: &[Todo]) -> SessionUpdate {
    let entries = todos
        .iter()
        .filter_map(|todo| {
            let status = match todo.status {
                TodoStatus::Pending => PlanEntryStatus::Pending,
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Completed => PlanEntryStatus::Completed,
                TodoStatus::Cancelled => return None,
            };
            Some(PlanEntry::new(
                todo.content.as_str(),
                PlanEntryPriority::Medium,
                status,
            ))
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}

/// What kind of work a gyre tool does, for the editor's icon.
pub fn kind_of(tool: &str) -> ToolKind {
    match tool {
        "read" => ToolKind::Read,
        "write" | "edit" | "multi_edit" => ToolKind::Edit,
        "bash" | "bash_output" | "kill_shell" => ToolKind::Execute,
        "grep" | "glob" | "ls" => ToolKind::Search,
        "web_fetch" => ToolKind::Fetch,
        "todo_write" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// The file a file tool works on.
fn file_path<'a>(tool: &str, args: &'a Value) -> Option<&'a str> {
    match tool {
        "read" | "write" | "edit" | "multi_edit" => args.get("file_path")?.as_str(),
        _ => None,
    }
}

/// One line saying what a call does, e.g. ``Run `cargo test` ``.
pub fn title_of(call: &ToolCall) -> String {
    let args = call.arguments_json().unwrap_or(Value::Null);
    let arg = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    };
    let title = match call.name.as_str() {
        "read" => arg("file_path").map(|p| format!("Read {p}")),
        "write" => arg("file_path").map(|p| format!("Write {p}")),
        "edit" | "multi_edit" => arg("file_path").map(|p| format!("Edit {p}")),
        "bash" => arg("description")
            .or(arg("command"))
            .map(|c| format!("Run `{}`", first_line(c))),
        "bash_output" => arg("shell_id").map(|id| format!("Output of shell {id}")),
        "kill_shell" => arg("shell_id").map(|id| format!("Stop shell {id}")),
        "grep" => arg("pattern").map(|p| match arg("path") {
            Some(path) => format!("Search `{p}` in {path}"),
            None => format!("Search `{p}`"),
        }),
        "glob" => arg("pattern").map(|p| format!("Find `{p}`")),
        "ls" => Some(format!("List {}", arg("path").unwrap_or("."))),
        "web_fetch" => arg("url").map(|u| format!("Fetch {u}")),
        "todo_write" => Some("Update the plan".to_string()),
        "task" => arg("description").map(|d| format!("Task: {d}")),
        "task_output" => arg("task_id").map(|id| format!("Output of task {id}")),
        "attempt_completion" => Some("Complete the task".to_string()),
        _ => None,
    };
    let title = title.unwrap_or_else(|| call.name.clone());
    shorten(&title)
}

fn first_line(text: &str) -> &str {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

fn shorten(text: &str) -> String {
    let line = first_line(text);
    match line.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use gyre_protocol::Outcome;
    use serde_json::json;

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall::new("c1", name, args.to_string())
    }

    fn wire(update: &SessionUpdate) -> Value {
        serde_json::to_value(update).unwrap()
    }

    #[test]
    fn a_call_goes_pending_then_in_progress_then_completed_with_its_diff() {
        let mut updates = Updates::new(PathBuf::from("/w"));
        let started = updates.of(&Event::ToolCallStarted {
            call_id: "c1".into(),
            name: "edit".into(),
        });
        // `pending` is the default status: the wire leaves it out.
        assert_eq!(
            wire(&started[0]),
            json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "edit", "kind": "edit"})
        );
        let edit = call(
            "edit",
            json!({"file_path": "src/a.rs", "old_string": "old", "new_string": "new"}),
        );
        let ready = wire(&updates.of(&Event::ToolCallReady { call: edit })[0]);
        assert_eq!(ready["sessionUpdate"], "tool_call_update");
        // Still pending: it may wait for approval.
        assert!(ready.get("status").is_none(), "{ready}");
        let progress = updates.of(&Event::ToolProgress {
            call_id: "c1".into(),
            output: "x".into(),
        });
        assert_eq!(wire(&progress[0])["status"], "in_progress");
        let again = wire(
            &updates.of(&Event::ToolProgress {
                call_id: "c1".into(),
                output: "y".repeat(LIVE_OUTPUT_BYTES),
            })[0],
        );
        // The output so far, its tail only; in progress already.
        assert!(again.get("status").is_none(), "{again}");
        let text = again["content"][0]["content"]["text"].as_str().unwrap();
        assert!(
            text.starts_with("```\nyyy") && !text.contains('x'),
            "{text}"
        );
        assert_eq!(ready["title"], "Edit src/a.rs");
        assert_eq!(ready["locations"], json!([{"path": "/w/src/a.rs"}]));
        assert_eq!(ready["rawInput"]["old_string"], "old");
        let done = updates.of(&Event::ToolResult {
            title: "edit".into(),
            result: ToolResult::text("c1", "edit", "edited", Outcome::Success),
        });
        assert_eq!(
            wire(&done[0]),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
                   "content": [{"type": "diff", "path": "/w/src/a.rs", "oldText": "old", "newText": "new"}]})
        );
        assert!(updates.unanswered().is_empty());
    }

    #[test]
    fn a_failed_call_shows_its_error_text_not_a_diff() {
        let mut updates = Updates::new(PathBuf::from("/w"));
        updates.ready(&call(
            "write",
            json!({"file_path": "/abs/x", "content": "hi"}),
        ));
        let done =
            wire(&updates.finished(&ToolResult::text("c1", "write", "denied", Outcome::Error)));
        assert_eq!(done["status"], "failed");
        assert_eq!(
            done["content"],
            json!([{"type": "content", "content": {"type": "text", "text": "denied"}}])
        );
    }

    #[test]
    fn multi_edit_shows_one_diff_per_edit_and_write_has_no_old_text() {
        let mut updates = Updates::new(PathBuf::from("/w"));
        updates.ready(&call(
            "multi_edit",
            json!({"file_path": "a", "edits": [
                {"old_string": "1", "new_string": "one"},
                {"old_string": "2", "new_string": "two"}]}),
        ));
        let done = wire(&updates.finished(&ToolResult::text(
            "c1",
            "multi_edit",
            "ok",
            Outcome::Success,
        )));
        assert_eq!(done["content"].as_array().unwrap().len(), 2);
        assert_eq!(done["content"][1]["newText"], "two");
        updates.ready(&call(
            "write",
            json!({"file_path": "b", "content": "new file"}),
        ));
        let done =
            wire(&updates.finished(&ToolResult::text("c1", "write", "ok", Outcome::Success)));
        assert_eq!(
            done["content"],
            json!([{"type": "diff", "path": "/w/b", "newText": "new file"}])
        );
    }

    #[test]
    fn kinds_and_titles_follow_the_tool() {
        let cases = [
            (
                "read",
                json!({"file_path": "a.txt", "offset": 3}),
                "read",
                "Read a.txt",
            ),
            (
                "bash",
                json!({"command": "cargo test\nmore"}),
                "execute",
                "Run `cargo test`",
            ),
            (
                "grep",
                json!({"pattern": "fn", "path": "src"}),
                "search",
                "Search `fn` in src",
            ),
            (
                "glob",
                json!({"pattern": "**/*.rs"}),
                "search",
                "Find `**/*.rs`",
            ),
            ("ls", json!({}), "search", "List ."),
            (
                "web_fetch",
                json!({"url": "https://x"}),
                "fetch",
                "Fetch https://x",
            ),
            (
                "todo_write",
                json!({"todos": []}),
                "think",
                "Update the plan",
            ),
            (
                "task",
                json!({"description": "look", "prompt": "p"}),
                "other",
                "Task: look",
            ),
            ("mcp__fs__read", json!({}), "other", "mcp__fs__read"),
        ];
        for (name, args, kind, title) in cases {
            let c = call(name, args);
            assert_eq!(wire_kind(kind_of(name)), kind, "{name}");
            assert_eq!(title_of(&c), title, "{name}");
        }
        let long = call("bash", json!({"command": "x".repeat(200)}));
        assert!(title_of(&long).chars().count() <= TITLE_CHARS + 1);
        let read = Updates::new(PathBuf::from("/w"))
            .details(&call("read", json!({"file_path": "a", "offset": 7})));
        assert_eq!(
            serde_json::to_value(&read).unwrap()["locations"],
            json!([{"path": "/w/a", "line": 7}])
        );
    }

    fn wire_kind(kind: ToolKind) -> String {
        serde_json::to_value(kind)
            .unwrap()
            .as_str()
            .unwrap()
            .to_string()
    }

    #[test]
    fn todos_become_a_plan_without_the_cancelled_items() {
        let todos = [
            Todo {
                content: "a".into(),
                status: TodoStatus::Completed,
            },
            Todo {
                content: "b".into(),
                status: TodoStatus::InProgress,
            },
            Todo {
                content: "c".into(),
                status: TodoStatus::Cancelled,
            },
            Todo {
                content: "d".into(),
                status: TodoStatus::Pending,
            },
        ];
        assert_eq!(
            wire(&plan(&todos)),
            json!({"sessionUpdate": "plan", "entries": [
                {"content": "a", "priority": "medium", "status": "completed"},
                {"content": "b", "priority": "medium", "status": "in_progress"},
                {"content": "d", "priority": "medium", "status": "pending"}]})
        );
    }

    #[test]
    fn events_an_editor_has_no_use_for_give_no_update() {
        let mut updates = Updates::new(PathBuf::from("/w"));
        assert!(updates.of(&Event::TurnStarted { turn: 1 }).is_empty());
        assert!(
            updates
                .of(&Event::RetryScheduled {
                    attempt: 1,
                    delay_ms: 5,
                    reason: "x".into(),
                    message: String::new(),
                })
                .is_empty()
        );
    }
}
