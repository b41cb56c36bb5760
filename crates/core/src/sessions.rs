//! Stored sessions outside a run: replaying their runs as events, and
//! rewinding their files and conversation to a message.
//!
//! Invariants:
//! - A replay calls no model and runs no tool: it re-emits, run by run, the
//!   events a frontend saw that are in the store (the run's start, every
//!   message it appended, compact boundaries, its result). Waits, deltas and
//!   progress were never stored and are not replayed. It covers the runs the
//!   state keeps ([`crate::state::MAX_KEPT_RUNS`], the latest); a run's
//!   final text, kept for the last run only, is found again in its messages.
//! - A rewind takes the session's lock (it refuses while a run holds it),
//!   restores the files before it cuts the conversation (cutting removes the
//!   checkpoints that restoring needs), and restores the files as they were
//!   before the first mutating call after the message. It refuses (changing
//!   nothing) when an answer after the message changed files with no
//!   checkpoint before it: "files unchanged" is said only when true.

use std::collections::HashSet;
use std::sync::Arc;

use gyre_protocol::{Event, Message, Part, Role};
use gyre_store::{LockAttempt, LockHolder, SessionStore, StoreError};

use crate::checkpoint::{CheckpointError, Checkpointer, Restored};
use crate::completion::ATTEMPT_COMPLETION;
use crate::id::new_id;
use crate::state::QueryState;

/// The events of every run of a stored session, in order.
pub async fn replay(store: &dyn SessionStore, session_id: &str) -> Result<Vec<Event>, StoreError> {
    let messages = store.load_messages(session_id).await?;
    let state: QueryState = store
        .load_state(session_id)
        .await?
        .and_then(|value| serde_json::from_value(value).ok())
        .unwrap_or_default();
    let position = |id: &Option<String>| {
        id.as_ref()
            .and_then(|id| messages.iter().position(|m| &m.id == id))
    };
    let mut events = Vec::new();
    let mut from = 0;
    for (index, run) in state.runs.iter().enumerate() {
        let start = position(&run.from_message).unwrap_or(from);
        let end = state.runs[index + 1..]
            .iter()
            .find_map(|next| position(&next.from_message))
            .unwrap_or(messages.len())
            .max(start);
        events.push(Event::RunStarted {
            session_id: session_id.to_string(),
            model: run.model.clone(),
            cwd: run.cwd.clone(),
            tools: run.tools.clone(),
        });
        for message in &messages[start..end] {
            let message = Arc::new(message.clone());
            let boundary = message.compact_boundary().cloned();
            events.push(Event::MessageAppended {
                message: message.clone(),
            });
            if let Some(boundary) = boundary {
                events.push(Event::CompactBoundary {
                    message_id: message.id.clone(),
                    boundary,
                });
            }
        }
        let mut summary = run.summary.clone();
        if summary.final_text.is_empty() {
            // Only the last run keeps its final text (`QueryState::record_run`).
            summary.final_text = final_text_of(&messages[start..end]);
        }
        events.push(Event::RunFinished(summary));
        from = end;
    }
    Ok(events)
}

/// A run's final text as the loop chose it: its last answer with text, or
/// the result of a successful `attempt_completion` (which ended it).
fn final_text_of(messages: &[Message]) -> String {
    let mut text = String::new();
    for message in messages.iter().filter(|m| m.origin.is_conversation()) {
        if message.role == Role::Assistant {
            let answer = message.text();
            if !answer.trim().is_empty() {
                text = answer;
            }
        }
        for result in message.tool_results() {
            if result.name == ATTEMPT_COMPLETION && !result.is_error {
                text = result.text_content();
            }
        }
    }
    text
}

/// What a rewind restores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewindScope {
    FilesAndConversation,
    FilesOnly,
    ConversationOnly,
}

/// What a rewind did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rewound {
    /// Messages removed after the one rewound to.
    pub messages_removed: u64,
    /// The files put back, when any had changed since that message.
    pub files: Option<Restored>,
}

#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error("there is no message {0} in the session")]
    UnknownMessage(String),
    #[error("a run (pid {pid} on {host}) is using the session; rewind it when that run ends")]
    Busy { pid: u32, host: String },
    /// Answers after the message changed files with no checkpoint before
    /// them: the files cannot be put back, so nothing was changed.
    #[error(
        "cannot rewind the files: {} changed files with no checkpoint before (checkpoints were off or failed); nothing was changed. Rewind the conversation only (--conversation-only) and restore those files by hand",
        describe_messages(.0)
    )]
    NoCheckpoint(Vec<String>),
}

fn describe_messages(ids: &[String]) -> String {
    match ids {
        [one] => format!("message {one}"),
        many => format!("messages {}", many.join(", ")),
    }
}

/// Whether `message` has a call that may change files (the calls a
/// checkpoint is taken before).
fn may_change_files(message: &Message) -> bool {
    message.tool_calls().any(|call| match call.name.as_str() {
        "write" | "edit" | "multi_edit" => true,
        "bash" => {
            let command = call.arguments_json().and_then(|args| {
                args.get("command")
                    .and_then(|c| c.as_str())
                    .map(str::to_owned)
            });
            !command.is_some_and(|c| gyre_tools::is_read_only_command(&c))
        }
        _ => false,
    })
}

/// Rewinds the session to how it was when `to` was its last message: the
/// files (from the checkpoint before the first change after it) and/or the
/// conversation (the messages after it go).
pub async fn rewind(
    store: &dyn SessionStore,
    checkpointer: &Checkpointer,
    session_id: &str,
    to: &str,
    scope: RewindScope,
) -> Result<Rewound, RewindError> {
    let holder = LockHolder {
        token: new_id(),
        pid: std::process::id(),
        host: crate::run::host_name(),
    };
    match store
        .try_lock(session_id, &holder, crate::run::LEASE)
        .await?
    {
        LockAttempt::Acquired { .. } => {}
        LockAttempt::Busy { holder, .. } => {
            return Err(RewindError::Busy {
                pid: holder.pid,
                host: holder.host,
            });
        }
    }
    let rewound = rewind_locked(store, checkpointer, session_id, to, scope).await;
    let _ = store.unlock(session_id, &holder).await;
    rewound
}

async fn rewind_locked(
    store: &dyn SessionStore,
    checkpointer: &Checkpointer,
    session_id: &str,
    to: &str,
    scope: RewindScope,
) -> Result<Rewound, RewindError> {
    let messages = store.load_messages(session_id).await?;
    let at = messages
        .iter()
        .position(|m| m.id == to)
        .ok_or_else(|| RewindError::UnknownMessage(to.to_string()))?;
    let mut rewound = Rewound::default();
    if scope != RewindScope::ConversationOnly {
        let later: HashSet<&str> = messages[at + 1..].iter().map(|m| m.id.as_str()).collect();
        let checkpoints = store.checkpoints(session_id).await?;
        let first_change = checkpoints
            .iter()
            .find(|c| later.contains(c.message_id.as_str()))
            .cloned();
        // Every answer that changed files before the first checkpoint must
        // have one itself, or the files cannot be put back as they were.
        let checkpointed: HashSet<&str> =
            checkpoints.iter().map(|c| c.message_id.as_str()).collect();
        let uncovered: Vec<String> = messages[at + 1..]
            .iter()
            .take_while(|m| first_change.as_ref().is_none_or(|c| c.message_id != m.id))
            .filter(|m| m.role == Role::Assistant && may_change_files(m))
            .filter(|m| !checkpointed.contains(m.id.as_str()))
            .map(|m| m.id.clone())
            .collect();
        if !uncovered.is_empty() {
            return Err(RewindError::NoCheckpoint(uncovered));
        }
        if let Some(checkpoint) = first_change {
            rewound.files = Some(checkpointer.restore(&checkpoint.snapshot).await?);
        }
    }
    if scope != RewindScope::FilesOnly {
        rewound.messages_removed = store.truncate_after(session_id, to).await?;
        restate_todos(store, session_id, &messages[..=at]).await?;
    }
    Ok(rewound)
}

/// Sets the stored loop state's todo list to the one the kept messages
/// left, so that the model, the terminal UI and a later resume see the list
/// as it was at that point, not as the cut calls left it.
async fn restate_todos(
    store: &dyn SessionStore,
    session_id: &str,
    kept: &[Message],
) -> Result<(), StoreError> {
    let Some(value) = store.load_state(session_id).await? else {
        return Ok(());
    };
    // A state another version wrote is left as it is.
    let Ok(mut state) = serde_json::from_value::<QueryState>(value) else {
        return Ok(());
    };
    let todos = todos_in(kept);
    if state.todos == todos {
        return Ok(());
    }
    state.todos = todos;
    match serde_json::to_value(&state) {
        Ok(value) => store.save_state(session_id, &value).await,
        Err(_) => Ok(()),
    }
}

/// The todo list `messages` leave: the last `todo_write` call's that did
/// not fail (empty when there is none).
pub fn todos_in(messages: &[Message]) -> Vec<gyre_protocol::Todo> {
    let parts = || messages.iter().flat_map(|m| m.parts.iter());
    let failed: HashSet<&str> = parts()
        .filter_map(|part| match part {
            Part::ToolResult(result) if result.is_error => Some(result.call_id.as_str()),
            _ => None,
        })
        .collect();
    messages
        .iter()
        .rev()
        .flat_map(|m| m.parts.iter().rev())
        .find_map(|part| match part {
            Part::ToolCall(call)
                if call.name == <gyre_tools::TodoWriteTool as gyre_tools::TypedTool>::NAME
                    && !failed.contains(call.id.as_str()) =>
            {
                gyre_tools::todos_of_call(&call.arguments)
            }
            _ => None,
        })
        .unwrap_or_default()
}
