//! Answers cut off by the output limit, or by a window with no room left:
//! compact first when the window was full, then ask the model to go on
//! where it stopped (seed 003's `max_output_recovery_count` bounds how often
//! in a row; `run::decide` ends the run past it, and when the window is full
//! with compaction off).

use gyre_protocol::{CompactTrigger, Part, StopReason, Usage};
use gyre_store::StoreError;

use super::{End, MessageInProgress, RunLoop};
use crate::context::CompactError;
use crate::prompt::MAX_TOKENS_NOTICE;

impl RunLoop<'_> {
    /// Whether an answer that ended with `stop` and used `usage` left no
    /// room in the window for an answer.
    pub(super) fn window_full(&self, stop: Option<StopReason>, usage: &Usage) -> bool {
        let max_output = u64::from(self.agent.config.max_output_tokens);
        stop == Some(StopReason::ContextOverflow)
            || self
                .budget()
                .is_some_and(|b| usage.prompt_tokens() + max_output > b.window)
    }

    /// An answer cut off by the output limit (or by a full window) is
    /// continued: after a compaction when `compact` (the context left it no
    /// room), then with a notice asking the model to go on where it
    /// stopped. `Some` when the run ends instead.
    pub(super) async fn continue_cut_answer(
        &mut self,
        compact: bool,
        wrap_up_next: bool,
    ) -> Result<Option<End>, StoreError> {
        if compact {
            let compaction = self.agent.config.context.compaction;
            let detail = "the answer was cut off with no room left in the window";
            match self.compact(CompactTrigger::Overflow, None).await? {
                Ok(()) => {}
                Err(CompactError::Cancelled) => return Ok(Some(End::cancelled())),
                Err(error) => {
                    return Ok(Some(End::overflow(detail, compaction, Some(&error))));
                }
            }
        }
        let mut note = MessageInProgress::notice();
        self.record(&mut note, Part::text(MAX_TOKENS_NOTICE))
            .await?;
        self.push_notice(note, wrap_up_next).await?;
        Ok(None)
    }
}
