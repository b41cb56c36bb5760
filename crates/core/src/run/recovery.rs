//! Answers cut off by the output limit, or by a window with no room left:
//! compact first when the window was full, then ask the model to go on
//! where it stopped (seed 003's `max_output_recovery_count` bounds how often
//! in a row; the turn step ends the run past it).

use gyre_protocol::{CompactTrigger, Part, StopReason, Usage};
use gyre_store::StoreError;

use super::{End, MessageInProgress, Next, RunLoop};
use crate::context::{CompactError, Compaction};
use crate::prompt::{MAX_TOKENS_NOTICE, WRAP_UP_NOTICE};
use crate::state::Transition;

impl RunLoop<'_> {
    /// An answer cut off by the output limit (or by a full window) is
    /// continued: after a compaction when the context left it no room, then
    /// with a notice asking the model to go on where it stopped.
    pub(super) async fn continue_cut_answer(
        &mut self,
        turn: u32,
        stop: Option<StopReason>,
        usage: &Usage,
    ) -> Result<Next, StoreError> {
        let max_output = u64::from(self.agent.config.max_output_tokens);
        let window_full = stop == Some(StopReason::ContextOverflow)
            || self
                .budget()
                .is_some_and(|b| usage.prompt_tokens() + max_output > b.window);
        if window_full {
            let compaction = self.agent.config.context.compaction;
            let detail = "the answer was cut off with no room left in the window";
            if compaction == Compaction::Off {
                return Ok(Next::End(End::overflow(detail, compaction, None)));
            }
            match self.compact(CompactTrigger::Overflow, None).await? {
                Ok(()) => {}
                Err(CompactError::Cancelled) => return Ok(Next::End(End::cancelled())),
                Err(error) => {
                    return Ok(Next::End(End::overflow(detail, compaction, Some(&error))));
                }
            }
        }
        let mut note = MessageInProgress::notice();
        self.record(&mut note, Part::text(MAX_TOKENS_NOTICE))
            .await?;
        if self.is_last_allowed_turn(turn + 1) {
            self.record(&mut note, Part::text(WRAP_UP_NOTICE)).await?;
        }
        self.push_message(note).await;
        self.session.state.transition = Transition::ToolRound;
        Ok(Next::Continue)
    }
}
