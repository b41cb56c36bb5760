//! The loop guard in the loop: each validated call is shown to the guard
//! (`crate::guard`, which decides) before it is scheduled; this module acts
//! on the verdict.
//!
//! - A repeated call: asked about in an interactive run (a person may know
//!   it is right), refused with a note to the model in a headless one (a
//!   permission prompt tool included: it decides rules, not repeats).
//! - A cycle: the call runs, and a nudge goes with the turn's results.
//! - Past the nudge or twice the repeat threshold: the call is refused and
//!   the run stops at the turn's end (`FinishReason::LoopGuard`).

use gyre_protocol::ToolCall;
use serde_json::Value;

use super::RunLoop;
use super::decide::GuardSaid;
use crate::approval::Approvals;
use crate::guard::Verdict;
use crate::permissions::Decision;

/// What the guard makes of a call.
pub(super) enum Guarded {
    /// Run it as the permissions decide.
    Proceed,
    /// Ask a person, whatever the permissions allow.
    Ask(String),
    /// Do not run it; the model is told why.
    Refuse(String),
}

impl Guarded {
    /// The permission decision with the guard's verdict applied: a deny
    /// stays a deny.
    pub(super) fn apply(self, decision: Decision) -> Decision {
        match (self, decision) {
            (_, Decision::Deny(reason)) => Decision::Deny(reason),
            (Guarded::Ask(question), _) => Decision::Ask(question),
            (Guarded::Refuse(message), _) => Decision::Deny(message),
            (Guarded::Proceed, decision) => decision,
        }
    }
}

impl RunLoop<'_> {
    /// Shows the call to the guard; a nudge or a stop goes into `said`,
    /// the turn's outcome.
    pub(super) fn guard(
        &mut self,
        call: &ToolCall,
        arguments: &Value,
        said: &mut GuardSaid,
    ) -> Guarded {
        let config = &self.agent.config;
        let verdict =
            self.session
                .state
                .loop_guard
                .observe(&config.loop_guard, &call.name, arguments);
        let name = &call.name;
        match verdict {
            Verdict::Fine => Guarded::Proceed,
            Verdict::Repeat { count } => match config.approvals {
                Approvals::Interactive => Guarded::Ask(format!(
                    "`{name}` was called with the same input {count} times in a row"
                )),
                // A permission prompt answers permission asks only: a
                // repeat is the model's problem, not a rule's.
                Approvals::Headless | Approvals::Prompt(_) => Guarded::Refuse(format!(
                    "refused by the loop guard: this is call {count} in a row of `{name}` with the \
                     same input, and it would give the same result; change the approach (other \
                     arguments, another tool) or answer with what you have"
                )),
            },
            Verdict::Cycle { .. } => {
                self.session.state.loop_guard.nudged();
                said.nudge = true;
                Guarded::Proceed
            }
            Verdict::RepeatStop { count } => {
                let why =
                    format!("the model called `{name}` with the same input {count} times in a row");
                let refusal = format!("refused by the loop guard: {why}; the run stops");
                said.stop = Some(why);
                Guarded::Refuse(refusal)
            }
            Verdict::CycleStop { len } => {
                let why = format!(
                    "the model kept repeating a sequence of {len} tool calls after it was told to stop"
                );
                let refusal = format!("refused by the loop guard: {why}; the run stops");
                said.stop = Some(why);
                Guarded::Refuse(refusal)
            }
        }
    }
}
