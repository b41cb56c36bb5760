//! Tool results, from the scheduler to the history: redacted, announced,
//! stored in call order.
//!
//! Invariants:
//! - Every result passes the agent's [`crate::Redactor`] before it is
//!   announced or stored, so no stored or sent tool output holds a secret
//!   the redactor knows (the scheduler already redacted the output before
//!   cutting it to the budget; this pass also covers gyre's own error
//!   results and the display title).
//! - Results are stored one by one as they come, in call order: a crash
//!   while collecting keeps every finished result, and the calls left
//!   without one are found again when the session resumes.

use gyre_protocol::{Event, Part, Role};
use gyre_store::StoreError;

use super::{MessageInProgress, RunLoop};
use crate::completion::ATTEMPT_COMPLETION;
use crate::scheduler::Scheduler;

impl RunLoop<'_> {
    /// Records every result in call order into a new results message (not
    /// in the history yet: the turn's decision adds its notices first, see
    /// [`RunLoop::finish_results`]); with the result of a successful
    /// `attempt_completion` among them.
    pub(super) async fn collect_results(
        &mut self,
        scheduler: &mut Scheduler,
    ) -> Result<(MessageInProgress, Option<String>), StoreError> {
        let mut results = MessageInProgress::new(Role::User);
        let completion = self.collect_into(scheduler, &mut results).await?;
        Ok((results, completion))
    }

    /// Records the notices after the results, then the background tasks'
    /// ends, and adds the message to the history.
    pub(super) async fn finish_results(
        &mut self,
        mut results: MessageInProgress,
        notices: &[&'static str],
    ) -> Result<(), StoreError> {
        for notice in notices {
            self.record(&mut results, Part::text(*notice)).await?;
        }
        self.deliver_notifications(&mut results).await?;
        self.push_message(results).await;
        Ok(())
    }

    /// Records every result of `scheduler` in call order into `target`;
    /// returns the result of the last successful `attempt_completion`.
    pub(super) async fn collect_into(
        &mut self,
        scheduler: &mut Scheduler,
        target: &mut MessageInProgress,
    ) -> Result<Option<String>, StoreError> {
        let mut completion = None;
        let redactor = self.agent.config.redactor.clone();
        while let Some(finished) = scheduler.next_in_order().await {
            let mut result = finished.result.clone();
            redactor.redact_result(&mut result);
            let title = redactor.redact(&finished.title).into_owned();
            result.title = title.clone();
            self.events
                .emit(Event::ToolResult {
                    title,
                    result: result.clone(),
                })
                .await;
            if result.name == ATTEMPT_COMPLETION && !result.is_error {
                completion = Some(result.text_content());
            }
            self.record(target, Part::ToolResult(result)).await?;
            // A changed todo list is announced after the result that changed
            // it (tools may have run during the stream: the revision seen is
            // kept from one collection to the next, not taken here).
            let todos = &self.session.tools.todos;
            if todos.revision() != self.todo_revision {
                self.todo_revision = todos.revision();
                let todos = todos.snapshot();
                // Kept in the state, saved at the turn boundary.
                self.session.state.todos = todos.clone();
                self.events.emit(Event::TodosUpdated { todos }).await;
            }
        }
        Ok(completion)
    }
}
