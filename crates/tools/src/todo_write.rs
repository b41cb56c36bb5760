//! `todo_write`: replace the session's todo list.
//!
//! The list lives in [`crate::TodoList`]; after a successful call the loop
//! reads it back (`ctx.session.todos.snapshot()`) and emits the
//! `TodosUpdated` event. The call changes only session state, so it is
//! read-only as far as scheduling goes.
//!
//! Invariants: a list is taken whole or not at all (an empty item or a list
//! over [`MAX_ITEMS`] is refused before anything changes); items are bounded
//! in length.

use futures::future::BoxFuture;
use gyre_protocol::{Todo, TodoStatus};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::{ToolContext, ToolError, ToolKind, ToolOutput, TypedTool};

const NAME: &str = "todo_write";
const MAX_ITEMS: usize = 100;
const MAX_CONTENT_CHARS: usize = 500;

const DESCRIPTION: &str = "Replace the session's todo list with `todos` (the whole list, \
every call). Use it for work of three or more steps: write the plan, mark one item \
`in_progress` when you start it and `completed` as soon as it is done, `cancelled` when it no \
longer applies. Keep items short and concrete. The user sees the list.";

#[derive(Deserialize, JsonSchema)]
pub struct TodoWriteArgs {
    /// The complete new list, in order.
    todos: Vec<TodoItem>,
}

#[derive(Deserialize, JsonSchema)]
struct TodoItem {
    /// What to do, in a few words.
    content: String,
    /// pending, in_progress, completed or cancelled.
    status: Status,
}

#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum Status {
    Pending,
    InProgress,
    Completed,
    Cancelled,
}

impl From<Status> for TodoStatus {
    fn from(status: Status) -> Self {
        match status {
            Status::Pending => TodoStatus::Pending,
            Status::InProgress => TodoStatus::InProgress,
            Status::Completed => TodoStatus::Completed,
            Status::Cancelled => TodoStatus::Cancelled,
        }
    }
}

/// The `todo_write` tool.
#[derive(Debug, Default)]
pub struct TodoWriteTool;

impl TypedTool for TodoWriteTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = TodoWriteArgs;

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::ReadOnly
    }

    fn call<'a>(
        &'a self,
        args: TodoWriteArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let todos = validate(args)?;
            let out = ToolOutput::text(title_of(&todos), render(&todos));
            ctx.session.todos.replace(todos);
            Ok(out)
        })
    }
}

/// The list a `todo_write` call with `arguments` (its JSON) set, when they
/// are valid: how a stored conversation's todos are found again (after a
/// rewind cut the calls that came later).
pub fn todos_of_call(arguments: &str) -> Option<Vec<Todo>> {
    let args: TodoWriteArgs = serde_json::from_str(arguments).ok()?;
    validate(args).ok()
}

fn validate(args: TodoWriteArgs) -> Result<Vec<Todo>, ToolError> {
    if args.todos.len() > MAX_ITEMS {
        return Err(ToolError::invalid(
            NAME,
            format!(
                "{} items is too many (at most {MAX_ITEMS}); merge small steps",
                args.todos.len()
            ),
        ));
    }
    args.todos
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let content = item.content.trim();
            if content.is_empty() {
                return Err(ToolError::invalid(
                    NAME,
                    format!("item {} has empty content; say what to do", i + 1),
                ));
            }
            if content.chars().count() > MAX_CONTENT_CHARS {
                return Err(ToolError::invalid(
                    NAME,
                    format!(
                        "item {} is longer than {MAX_CONTENT_CHARS} characters; keep items short",
                        i + 1
                    ),
                ));
            }
            Ok(Todo {
                content: content.to_owned(),
                status: item.status.into(),
            })
        })
        .collect()
}

fn title_of(todos: &[Todo]) -> String {
    let done = todos
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .count();
    format!("todo_write: {done}/{} completed", todos.len())
}

/// One line per item, with a box saying its status.
fn render(todos: &[Todo]) -> String {
    if todos.is_empty() {
        return "The todo list is now empty.".to_owned();
    }
    let mut out = format!("The todo list now has {} items:\n", todos.len());
    for todo in todos {
        let mark = match todo.status {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[>]",
            TodoStatus::Completed => "[x]",
            TodoStatus::Cancelled => "[-]",
        };
        out.push_str(&format!("{mark} {}\n", todo.content));
    }
    out
}
