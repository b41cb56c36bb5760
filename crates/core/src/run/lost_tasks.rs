//! Background subagents that an earlier process started and never told the
//! model about: the process died (a kill, a crash, a closed terminal) or the
//! run that started them ended first.
//!
//! Invariants:
//! - Found from the session's own history, at the start of a run: a `task`
//!   call with `background: true` whose result started a task, with no
//!   `<task-notification>` for that task anywhere after it, and unknown to
//!   this run's [`BackgroundTasks`].
//! - Each such task is announced once, through the same path as a task that
//!   ended in this run (the notification is recorded in the next user-side
//!   message, so a later run finds it told). Its stored state says how it
//!   ended: its run finished (told as it ended) or it never did
//!   ("interrupted", with how to continue it).
//! - Reading a task's state is best effort: a state that cannot be read
//!   counts as interrupted (the model can still ask `task_output`).

use std::collections::{HashMap, HashSet};

use gyre_protocol::{Message, Part};

use super::RunLoop;
use crate::state::QueryState;
use crate::subagent::background::TaskState;

/// The start of a background task's result text (see `task_tool`).
const STARTED: &str = "Started task ";

/// A background task the history started and never heard the end of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LostTask {
    pub id: String,
    pub agent: String,
    pub description: String,
}

/// The background tasks of `history` whose end was never told, in the order
/// they were started.
pub(crate) fn lost_tasks<M: AsRef<Message>>(history: &[M]) -> Vec<LostTask> {
    let mut background_calls: HashMap<&str, (String, String)> = HashMap::new();
    let mut started = Vec::new();
    let mut told = HashSet::new();
    for message in history {
        for part in &message.as_ref().parts {
            match part {
                Part::ToolCall(call) if call.name == "task" => {
                    let Some(args) = call.arguments_json() else {
                        continue;
                    };
                    if args.get("background").and_then(|b| b.as_bool()) != Some(true) {
                        continue;
                    }
                    let text = |key: &str, default: &str| {
                        args.get(key)
                            .and_then(|v| v.as_str())
                            .unwrap_or(default)
                            .to_string()
                    };
                    background_calls.insert(
                        call.id.as_str(),
                        (
                            text("agent", crate::agents::DEFAULT_AGENT),
                            text("description", ""),
                        ),
                    );
                }
                Part::ToolResult(result) if !result.is_error => {
                    let Some((agent, description)) = background_calls.get(result.call_id.as_str())
                    else {
                        continue;
                    };
                    let text = result.text_content();
                    let Some(id) = text
                        .strip_prefix(STARTED)
                        .and_then(|rest| rest.split_whitespace().next())
                    else {
                        continue;
                    };
                    started.push(LostTask {
                        id: id.to_string(),
                        agent: agent.clone(),
                        description: description.clone(),
                    });
                }
                Part::Text { text } => told.extend(notified_ids(text)),
                _ => {}
            }
        }
    }
    let mut seen = HashSet::new();
    started
        .into_iter()
        .filter(|task| !told.contains(task.id.as_str()) && seen.insert(task.id.clone()))
        .collect()
}

/// The task ids of the `<task-notification>`s in `text`.
fn notified_ids(text: &str) -> impl Iterator<Item = &str> {
    text.split("<task-id>")
        .skip(1)
        .filter_map(|rest| rest.split_once("</task-id>").map(|(id, _)| id))
}

impl RunLoop<'_> {
    /// Puts the background tasks an earlier process left untold among this
    /// run's ended tasks, so the next user-side message tells the model.
    pub(super) async fn find_lost_tasks(&mut self) {
        for task in lost_tasks(&self.session.history) {
            if self.tasks.get(&task.id).is_some() {
                continue;
            }
            let state = match self.agent.store.load_state(&task.id).await {
                Ok(Some(value)) => serde_json::from_value::<QueryState>(value).ok(),
                _ => None,
            };
            let ended = match state.and_then(|s| s.runs.last().cloned()) {
                Some(run) => TaskState::Finished(run.summary),
                None => TaskState::Interrupted,
            };
            self.tasks
                .ended_elsewhere(&task.id, &task.agent, &task.description, ended);
        }
    }
}

#[cfg(test)]
mod tests {
    use gyre_protocol::{Outcome, Role, ToolCall, ToolResult};
    use serde_json::json;

    use super::*;

    fn task_call(id: &str, background: bool) -> Part {
        Part::ToolCall(ToolCall::new(
            id,
            "task",
            json!({"description": "look around", "prompt": "p", "agent": "explore", "background": background})
                .to_string(),
        ))
    }

    fn started(call: &str, task: &str) -> Part {
        Part::ToolResult(ToolResult::text(
            call,
            "task",
            format!("{STARTED}{task} (explore agent) in the background. Keep working."),
            Outcome::Success,
        ))
    }

    fn message(role: Role, parts: Vec<Part>) -> std::sync::Arc<Message> {
        std::sync::Arc::new(Message::new("m", role, parts))
    }

    #[test]
    fn a_started_task_never_told_is_lost_once() {
        let history = vec![
            message(Role::User, vec![Part::text("go")]),
            message(
                Role::Assistant,
                vec![
                    task_call("c1", true),
                    task_call("c2", true),
                    task_call("c3", false),
                ],
            ),
            message(
                Role::User,
                vec![
                    started("c1", "T1"),
                    started("c2", "T2"),
                    Part::ToolResult(ToolResult::text("c3", "task", "done", Outcome::Success)),
                ],
            ),
            message(
                Role::User,
                vec![Part::text(
                    "<task-notification>\n<task-id>T2</task-id>\n<status>completed</status>\n</task-notification>",
                )],
            ),
        ];
        assert_eq!(
            lost_tasks(&history),
            vec![LostTask {
                id: "T1".into(),
                agent: "explore".into(),
                description: "look around".into(),
            }]
        );
    }

    #[test]
    fn a_refused_or_foreground_task_is_not_lost() {
        let history = vec![
            message(Role::Assistant, vec![task_call("c1", true)]),
            message(
                Role::User,
                vec![Part::ToolResult(ToolResult::text(
                    "c1",
                    "task",
                    format!("{STARTED}T1 (explore agent)"),
                    Outcome::Error,
                ))],
            ),
        ];
        assert!(lost_tasks(&history).is_empty());
    }
}
