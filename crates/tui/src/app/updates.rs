//! The live session's updates: run events into the transcript, permission
//! requests into the dialog queue, status changes into the queued list.
//!
//! Invariants:
//! - Each event is applied once, in the stream's order; an update costs
//!   the transcript's work for it plus a few field writes (the queue is
//!   re-read only when a run starts or ends, or the status changes).
//! - Permission requests are shown one at a time, oldest first; a run's
//!   end drops those left (nothing waits for them any more).

use tokio::time::Instant;

use gyre_core::Update;
use gyre_core::live::{Lagged, Numbered};
use gyre_protocol::Event;

use super::{App, Backend, RunKind};
use crate::transcript::NoticeKind;
use crate::view::PermissionDialog;

impl<B: Backend> App<B> {
    /// One update of the live session's stream (or the news that some were
    /// missed).
    pub fn handle_update(&mut self, update: Result<Numbered, Lagged>) {
        self.dirty = true;
        let numbered = match update {
            Ok(numbered) => numbered,
            Err(lagged) => {
                return self.notice(
                    NoticeKind::Warning,
                    format!(
                        "The screen fell behind and missed some output ({lagged}); the session \
                         has all of it (/resume shows it again)."
                    ),
                );
            }
        };
        match numbered.update.as_ref() {
            Update::Status(_) => self.refresh_queue(),
            Update::Event { run, event } => self.apply_event(*run, event),
        }
    }

    fn apply_event(&mut self, run: u64, event: &Event) {
        let now = Instant::now();
        // The run's own requests and its subagents' (their runs wait on the
        // same answers).
        if let Some(dialog) = PermissionDialog::from_event(event) {
            if self.permissions.is_empty() {
                self.permission_since = now;
            }
            self.permissions.push_back(dialog);
        }
        // A request whose call got a result anyway (cancelled, or a
        // sibling's failure aborted it) no longer waits for an answer.
        if let Some(call_id) = result_call_id(event) {
            self.permissions.retain(|dialog| dialog.call.id != call_id);
        }
        match event {
            Event::RunStarted { .. } => {
                if let Some(RunKind::Prompt(text)) = self.runs.remove(&run) {
                    self.transcript.push_user(&text);
                }
                self.refresh_queue();
            }
            Event::RunFinished(_) => {
                self.permissions.clear();
                self.runs.remove(&run);
            }
            _ => {}
        }
        self.transcript.apply(event, now);
        if matches!(event, Event::RunFinished(_)) {
            self.refresh_queue();
        }
    }
}

/// The call a `ToolResult` (maybe a subagent's) answers.
fn result_call_id(event: &Event) -> Option<&str> {
    match event {
        Event::Subagent { inner, .. } => result_call_id(inner),
        Event::ToolResult { result, .. } => Some(&result.call_id),
        _ => None,
    }
}
