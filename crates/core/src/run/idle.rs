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
//!   run ends as it would without completion mode.

use gyre_protocol::{Event, Part};
use gyre_store::StoreError;

use super::end::End;
use super::{MessageInProgress, Next, RunLoop};
use crate::agents::Completion;
use crate::completion::{MAX_REMINDERS, MAX_REMINDERS_WITH_OPEN_TODOS};
use crate::prompt::{COMPLETION_REMINDER, TODOS_OPEN_REMINDER, WRAP_UP_NOTICE};
use crate::state::Transition;
use crate::subagent::background::{TaskInfo, TaskState, status_word};

impl RunLoop<'_> {
    /// Records a notification for each background task that ended since
    /// the last delivery into `message`, and tells the frontends.
    pub(super) async fn deliver_notifications(
        &mut self,
        message: &mut MessageInProgress,
    ) -> Result<(), StoreError> {
        for info in self.session.tasks.take_finished() {
            self.record(message, Part::text(notification_text(&info)))
                .await?;
            if let TaskState::Finished(summary) = info.state {
                self.events
                    .emit(Event::TaskNotification {
                        task_id: info.id,
                        agent: info.agent,
                        description: info.description,
                        reason: summary.reason,
                        final_text: summary.final_text,
                    })
                    .await;
            }
        }
        Ok(())
    }

    /// After a text-only answer with background tasks running (or ended
    /// and not yet told): waits for one, tells the model, and goes on.
    pub(super) async fn await_background(&mut self, turn: u32) -> Result<Option<Next>, StoreError> {
        let tasks = self.session.tasks.clone();
        let ended = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Ok(Some(Next::End(End::cancelled()))),
            ended = tasks.wait_for_one() => ended,
        };
        if !ended {
            return Ok(None);
        }
        let mut note = MessageInProgress::notice();
        self.deliver_notifications(&mut note).await?;
        self.push_notice(note, turn).await?;
        self.session.state.transition = Transition::TaskNotification;
        Ok(Some(Next::Continue))
    }

    /// In completion mode, after a text-only answer: a hidden reminder,
    /// while the bound allows.
    pub(super) async fn remind_to_complete(
        &mut self,
        turn: u32,
    ) -> Result<Option<Next>, StoreError> {
        if self.agent.config.completion != Completion::Required {
            return Ok(None);
        }
        let todos_open = self
            .session
            .tools
            .todos
            .snapshot()
            .iter()
            .any(|t| t.status.is_open());
        let (limit, reminder) = if todos_open {
            (MAX_REMINDERS_WITH_OPEN_TODOS, TODOS_OPEN_REMINDER)
        } else {
            (MAX_REMINDERS, COMPLETION_REMINDER)
        };
        let state = &mut self.session.state;
        if state.reminder_count >= limit {
            return Ok(None);
        }
        state.reminder_count += 1;
        let mut note = MessageInProgress::notice();
        self.record(&mut note, Part::text(reminder)).await?;
        self.push_notice(note, turn).await?;
        self.session.state.transition = Transition::Reminder;
        Ok(Some(Next::Continue))
    }

    /// Adds the wrap-up notice when the next turn is the last, then the
    /// message to the history.
    async fn push_notice(
        &mut self,
        mut note: MessageInProgress,
        turn: u32,
    ) -> Result<(), StoreError> {
        if self.is_last_allowed_turn(turn + 1) {
            self.record(&mut note, Part::text(WRAP_UP_NOTICE)).await?;
        }
        self.push_message(note).await;
        Ok(())
    }
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
    };
    format!(
        "<task-notification>\n<task-id>{}</task-id>\n<agent>{}</agent>\n<description>{}</description>\n\
         <status>{status}</status>\n<result>\n{result}\n</result>\n</task-notification>",
        info.id, info.agent, info.description
    )
}
