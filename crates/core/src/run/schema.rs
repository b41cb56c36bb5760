//! `--json-schema` in the loop: the check of an answer that would end the
//! run, the notice that asks again with its violations (through `tell`,
//! the hidden notice every re-ask uses), and the end of a run whose answer
//! passed (its final text is then the value's compact
//! JSON). What to do is `decide`'s choice ([`super::decide::Step::FixOutput`]
//! or the run's end); this module only carries it out.

use gyre_protocol::{FinishReason, Part, StopReason};
use gyre_store::StoreError;
use serde_json::Value;

use super::end::End;
use super::{MessageInProgress, RunLoop};
use crate::structured;

/// An answer's check: `None` when there is no schema or the answer does
/// not end the run; else its value or its violations.
pub(super) type Checked = Option<Result<Value, String>>;

impl RunLoop<'_> {
    /// Checks `answer` when it would end the run (text only, a clean end)
    /// and a schema is set; the violations again, apart, when it failed.
    pub(super) fn check_schema(
        &self,
        tools_ran: bool,
        failed: bool,
        stop: Option<StopReason>,
        answer: &str,
    ) -> (Checked, Option<String>) {
        let ends_turn = !tools_ran && !failed && stop == Some(StopReason::EndTurn);
        let checked = match &self.agent.config.output_schema {
            Some(schema) if ends_turn => Some(schema.check(answer)),
            _ => None,
        };
        let errors = checked.as_ref().and_then(|c| c.as_ref().err().cloned());
        (checked, errors)
    }

    /// Asks again, telling the model what was wrong.
    pub(super) async fn fix_output(
        &mut self,
        errors: Option<String>,
        wrap_up_next: bool,
    ) -> Result<Option<End>, StoreError> {
        let text = structured::fix_notice(errors.as_deref().unwrap_or_default());
        self.tell(text, wrap_up_next).await
    }

    /// A hidden notice to the model, after which the loop goes on (an
    /// unusable answer asked again, a reminder, violations of the schema).
    pub(super) async fn tell(
        &mut self,
        text: String,
        wrap_up_next: bool,
    ) -> Result<Option<End>, StoreError> {
        let mut note = MessageInProgress::notice();
        self.record(&mut note, Part::text(text)).await?;
        self.push_notice(note, wrap_up_next).await?;
        Ok(None)
    }
}

/// A completed run whose last answer passed the schema ends with the
/// value's compact JSON as its final text; any other end is as decided.
pub(super) fn structured_end(end: End, checked: Checked) -> End {
    match checked {
        Some(Ok(value)) if end.reason == FinishReason::Completed && end.final_text.is_none() => {
            End::completed_with(value.to_string())
        }
        _ => end,
    }
}
