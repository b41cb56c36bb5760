//! What happens when the model answers with text only, and how background
//! subagents' ends reach it.
//!
//! - Task notifications (seed 003): a background subagent's end is told to
//!   the model at the next turn boundary, as a `<task-notification>` part
//!   of the next user-side message (the tool results, a new prompt, or a
//!   notice of its own). Each end is told once.
//! - Woken when idle: a text-only answer while background subagents still
//!   run does not end the run; the loop waits (cancellable) for the next
//!   one to end, tells the model, and goes on.
//! - Completion mode (seed 000): a text-only answer gets a hidden
//!   `<system-reminder>` to finish with `attempt_completion` (or, while the
//!   todo list has open items, to carry on with them), at most
//!   [`MAX_REMINDERS`] times in a row, [`MAX_REMINDERS_WITH_OPEN_TODOS`]
//!   while todos are open; a tool call resets the count. Past the bound the
//!   run ends as it would without completion mode. Whether to remind,
//!   wait or end is `run::decide`'s; this module carries it out.

use gyre_protocol::{Event, FinishReason, Part};
use gyre_store::StoreError;

use super::end::End;
use super::{MessageInProgress, RunLoop};
use crate::subagent::background::{TaskInfo, TaskState, status_word};

impl RunLoop<'_> {
    /// Records a notification for each background task that ended since
    /// the last delivery into `message`, and tells the frontends.
    pub(super) async fn deliver_notifications(
        &mut self,
        message: &mut MessageInProgress,
    ) -> Result<(), StoreError> {
        for info in self.tasks.take_finished() {
            self.record(message, Part::text(notification_text(&info)))
                .await?;
            let (reason, final_text) = match info.state {
                TaskState::Finished(summary) => (summary.reason, summary.final_text),
                TaskState::Interrupted => (FinishReason::Failed, interrupted_text(&info.id)),
                TaskState::Running => continue,
            };
            self.events
                .emit(Event::TaskNotification {
                    task_id: info.id,
                    agent: info.agent,
                    description: info.description,
                    reason,
                    final_text,
                })
                .await;
        }
        Ok(())
    }

    /// After a text-only answer with background tasks running (or ended
    /// and not yet told): waits for one, tells the model, and goes on.
    /// `Some` when the run ends instead (cancelled while waiting).
    pub(super) async fn await_background(
        &mut self,
        wrap_up_next: bool,
    ) -> Result<Option<End>, StoreError> {
        let tasks = self.tasks.clone();
        let ended = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Ok(Some(End::cancelled())),
            ended = tasks.wait_for_one() => ended,
        };
        if !ended {
            // Nothing was pending after all (the decision saw some): the
            // answer stands as the run's end.
            return Ok(Some(End::completed()));
        }
        let mut note = MessageInProgress::notice();
        self.deliver_notifications(&mut note).await?;
        self.push_notice(note, wrap_up_next).await?;
        Ok(None)
    }

    /// Whether the todo list has open items (completion mode reminds of
    /// them).
    pub(super) fn todos_open(&self) -> bool {
        self.session
            .tools
            .todos
            .snapshot()
            .iter()
            .any(|t| t.status.is_open())
    }
}

/// What the model is told of a task whose process died under it.
pub(crate) fn interrupted_text(id: &str) -> String {
    format!(
        "The process running this task ended before the task finished (gyre was stopped or \
         crashed); it did not complete. Its transcript is kept: call `task` with resume \
         \"{id}\" (and a prompt saying to carry on) to continue it, or `task_output` to read \
         what it did."
    )
}

/// The message part that tells the model a background task ended.
pub(crate) fn notification_text(info: &TaskInfo) -> String {
    let (status, result) = match &info.state {
        TaskState::Finished(summary) => {
            let mut result = summary.final_text.trim().to_string();
            if let Some(error) = &summary.error {
                result = format!("{}\n{result}", error.message).trim().to_string();
            }
            (status_word(summary.reason), result)
        }
        TaskState::Running => ("running", String::new()),
        TaskState::Interrupted => ("interrupted", interrupted_text(&info.id)),
    };
    format!(
        "<task-notification>\n<task-id>{}</task-id>\n<agent>{}</agent>\n<description>{}</description>\n\
         <status>{status}</status>\n<result>\n{result}\n</result>\n</task-notification>",
        info.id, info.agent, info.description
    )
}
