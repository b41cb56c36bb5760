//! Before every request: the history is checked (from where it was last
//! checked) and repaired, so that what is sent is always valid (the rules
//! and repairs are `crate::history`'s; requests borrow its repaired form).
//!
//! Invariants:
//! - Append before act: a result gyre makes up is stored before the
//!   repaired history is sent, and added to the session's history as the
//!   store has it; if storing fails, nothing is committed and the run ends
//!   with the store's error.
//! - Quiet: one `warn` line per repair in the log, nothing to the frontends
//!   (a pure reordering is logged at `debug`: a session repaired once is put
//!   back in order on every load).

use gyre_store::StoreError;

use super::RunLoop;
use crate::history::{self, Repair, Write};

impl RunLoop<'_> {
    /// Makes the repaired history current, storing what is made up first.
    pub(super) async fn validate_history(&mut self) -> Result<(), StoreError> {
        let checked = history::check(&self.session.history, &self.session.validated);
        let store = &self.store;
        let session_id = self.session.id();
        for write in &checked.writes {
            match write {
                Write::Part {
                    message_id, part, ..
                } => store.append_part(session_id, message_id, part).await?,
                Write::Message(message) => store.append_message(session_id, message).await?,
            }
        }
        for repair in &checked.repairs {
            match repair {
                Repair::Reordered { .. } => tracing::debug!(session_id, "history: {repair}"),
                _ => tracing::warn!(session_id, "history repaired: {repair}"),
            }
        }
        for write in &checked.writes {
            write.apply(&mut self.session.history);
        }
        self.session
            .validated
            .commit(checked, &self.session.history);
        Ok(())
    }
}
