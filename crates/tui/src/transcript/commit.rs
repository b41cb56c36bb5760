//! Which cells are finished for good, for the inline screen: those go to
//! the terminal's scrollback once, in order, and are not drawn again.
//!
//! Invariants:
//! - Cells are committed as a prefix, in order: a cell waits for every
//!   cell above it, so the scrollback keeps the transcript's order.
//! - A cell is committed only when nothing can change it any more: it is
//!   not live (streaming, running), not the last cell (a notice may still
//!   be updated in place, a text may still follow it), and not the notice
//!   a retry or a compaction updates.
//! - [`Transcript::clear`] starts over at the first cell (a new screen of
//!   cells); a new transcript (`/resume`) starts at its first too, so an
//!   opened session's history is printed once.

use std::ops::Range;

use super::Transcript;

impl Transcript {
    /// The cells before this one are in the scrollback.
    pub fn committed(&self) -> usize {
        self.committed.min(self.cells.len())
    }

    /// Marks the cells that became final since the last call as committed
    /// and returns their range (empty when none did).
    pub fn commit_finished(&mut self) -> Range<usize> {
        let start = self.committed();
        let mut end = start;
        while end + 1 < self.cells.len()
            && !self.cells[end].is_live()
            && self.retry_notice != Some(end)
            && self.compaction_notice != Some(end)
        {
            end += 1;
        }
        self.committed = end;
        start..end
    }

    /// Marks every cell committed (the app ends: all of it goes to the
    /// scrollback, live cells as they are now).
    pub fn commit_all(&mut self) -> Range<usize> {
        let start = self.committed();
        self.committed = self.cells.len();
        start..self.cells.len()
    }
}
