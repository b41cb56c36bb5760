//! Resuming a session whose last answer has tool calls without results (a
//! crash or a kill in the middle of a turn).
//!
//! Invariants:
//! - A mutating pending call is never run again: it gets the error result
//!   [`INTERRUPTED`] (it may or may not have changed the workspace before
//!   the process died; the model is told to look). A command the last run
//!   recorded and left running is stopped first, and the result says
//!   whether it was found still running (`run::commands`).
//! - A read-only pending call runs again through the scheduler, exactly like
//!   a call from the model (validation, permission, concurrency, redaction).
//!   A call to an unknown tool, or with arguments that do not parse, gets
//!   the same error result it would have got the first time.
//! - The results are stored (appended to the message that already holds
//!   the answer's other results, or as a new message) before the new prompt
//!   is recorded, and the frontends get a `ToolResult` event for each.
//! - Only the last answer is looked at: calls further back without results
//!   are the validator's (`crate::history`), which answers them with errors.

use std::collections::HashSet;
use std::sync::Arc;

use gyre_protocol::{Role, ToolCall};
use gyre_store::StoreError;
use gyre_tools::ToolKind;

use super::answer::ToolUse;
use super::commands::LeftCommand;
use super::decide::GuardSaid;
use super::{MessageInProgress, RunLoop};

/// The result of a mutating call interrupted by a crash.
pub(crate) const INTERRUPTED: &str = "interrupted before it finished; check the workspace";

const CHECK: &str = "check the workspace";

impl RunLoop<'_> {
    /// Answers the last answer's pending calls, if any.
    pub(super) async fn resume_pending(&mut self) -> Result<(), StoreError> {
        // Whatever the last run left running goes first, so that no result
        // is settled while its command may still act.
        let left = self.stop_left_commands().await?;
        let history = &self.session.history;
        let Some(at) = history.iter().rposition(|m| m.role == Role::Assistant) else {
            return Ok(());
        };
        // The answer's results are in the message right after it.
        let results_at = at + 1;
        let answered: HashSet<&str> = history
            .get(results_at)
            .into_iter()
            .flat_map(|m| m.tool_results())
            .map(|r| r.call_id.as_str())
            .collect();
        let mut seen = HashSet::new();
        let pending: Vec<ToolCall> = history[at]
            .tool_calls()
            .filter(|c| !answered.contains(c.id.as_str()) && seen.insert(c.id.as_str()))
            .cloned()
            .collect();
        if pending.is_empty() {
            return Ok(());
        }
        tracing::info!(
            session_id = self.session.id(),
            pending = pending.len(),
            "resuming: answering the calls the last run left without results"
        );
        let mut target = match history.get(results_at) {
            Some(message) => MessageInProgress::stored(message.as_ref().clone()),
            None => MessageInProgress::new(Role::User),
        };
        let mut scheduler = self.scheduler();
        for call in pending {
            if self.kind_of(&call) == Some(ToolKind::Mutating) {
                let message = match left.get(&call.id) {
                    None => INTERRUPTED.to_string(),
                    Some(LeftCommand::Stopped) => format!(
                        "interrupted before it finished; its command was still running and was stopped now; {CHECK}"
                    ),
                    Some(LeftCommand::Gone) => format!(
                        "interrupted before it finished; its command was no longer running; {CHECK}"
                    ),
                };
                scheduler.refuse(call, message);
            } else {
                // Only read-only calls run again: nothing to checkpoint.
                // What the guard says of a call the last run made is not
                // this run's turn outcome.
                let mut guard = GuardSaid::default();
                self.schedule(&mut scheduler, call, ToolUse::Offered, None, &mut guard);
            }
        }
        // An `attempt_completion` answered now belonged to the last run: it
        // does not end this one.
        self.collect_into(&mut scheduler, &mut target).await?;
        if results_at < self.session.history.len() {
            self.session.history[results_at] = Arc::new(target.message);
        } else {
            self.push_message(target).await;
        }
        // A message was replaced: check the whole history again.
        self.session.validated.reset();
        self.session.baseline = None;
        Ok(())
    }

    /// The kind of a call to a known tool with object arguments.
    fn kind_of(&self, call: &ToolCall) -> Option<ToolKind> {
        let tool = self.tools.registry.get(&call.name)?;
        let arguments = call.arguments_json().filter(|a| a.is_object())?;
        Some(tool.kind(&arguments))
    }
}
