//! The commands a run starts, recorded in the store while they run, and
//! those a previous run left running, stopped before its calls are settled.
//!
//! Invariants:
//! - `bash` reports each foreground command's process group and its
//!   leader's start time before it waits for it, and its end after; the run
//!   records and forgets them through its fenced store (a run taken over
//!   records nothing).
//! - A run that starts on a session first stops every recorded group of
//!   this host still alive: the leader alive with the recorded start time
//!   (a reused pid never matches), or the leader gone while members of the
//!   group live on (no new group can take that id while they do). Then it
//!   forgets the records, and tells the settled calls whether their command
//!   was found still running.
//!
//! Trade-off: a command recorded on another host cannot be reached; it
//! dies with its own gyre (see `gyre_tools`' lifeline), or runs on.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use gyre_store::{RunningCommand, SessionStore, StoreError};
use gyre_tools::{ProcessEvent, ProcessSink};

use super::RunLoop;
use super::flight::host_name;

/// How long the stopped groups get to be gone.
const DEATH_WAIT: Duration = Duration::from_secs(2);

/// What became of a command a previous run left recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LeftCommand {
    /// It was still running, and was stopped now.
    Stopped,
    /// It was no longer running.
    Gone,
}

/// Records the process groups of call `call_id` in `store`.
pub(super) fn process_sink(
    store: Arc<dyn SessionStore>,
    session_id: String,
    call_id: String,
    host: String,
) -> ProcessSink {
    Arc::new(move |event| {
        let (store, session_id, call_id, host) = (
            store.clone(),
            session_id.clone(),
            call_id.clone(),
            host.clone(),
        );
        async move {
            let recorded = match event {
                ProcessEvent::Started { pgid, started } => {
                    let command = RunningCommand {
                        call_id,
                        host,
                        pgid: i64::from(pgid),
                        started,
                    };
                    store.record_command(&session_id, &command).await
                }
                ProcessEvent::Ended { .. } => {
                    store.forget_commands(&session_id, Some(&call_id)).await
                }
            };
            if let Err(error) = recorded {
                tracing::warn!("could not record a running command: {error}");
            }
        }
        .boxed()
    })
}

/// Stops `command` if it still runs here; what was found.
fn stop(command: &RunningCommand, host: &str) -> Option<LeftCommand> {
    if command.host != host {
        return None;
    }
    let pgid = i32::try_from(command.pgid).ok().filter(|&p| p > 1)?;
    let alive = match gyre_tools::process_start_ticks(pgid) {
        Some(started) => started == command.started,
        None => gyre_tools::process_group_alive(pgid),
    };
    if !alive {
        return Some(LeftCommand::Gone);
    }
    tracing::info!(pgid, call = %command.call_id, "stopping a command the last run left running");
    gyre_tools::kill_process_group(pgid);
    Some(LeftCommand::Stopped)
}

impl RunLoop<'_> {
    /// The sink for a call's process groups (none before the run holds the
    /// session's lock).
    pub(super) fn processes_of(&self, call_id: &str) -> Option<ProcessSink> {
        let flight = self.flight.as_ref()?;
        Some(process_sink(
            self.store.clone(),
            self.session.id().to_string(),
            call_id.to_string(),
            flight.holder.host.clone(),
        ))
    }

    /// Stops what the last run left running; by call, what was found.
    pub(super) async fn stop_left_commands(
        &mut self,
    ) -> Result<HashMap<String, LeftCommand>, StoreError> {
        let session_id = self.session.id().to_string();
        let recorded = self.store.running_commands(&session_id).await?;
        if recorded.is_empty() {
            return Ok(HashMap::new());
        }
        let host = host_name();
        let mut found = HashMap::new();
        let mut stopped = Vec::new();
        for command in &recorded {
            let Some(what) = stop(command, &host) else {
                continue;
            };
            if what == LeftCommand::Stopped {
                stopped.push(command.pgid);
            }
            // One call's groups: stopped if any was.
            let entry = found.entry(command.call_id.clone()).or_insert(what);
            if what == LeftCommand::Stopped {
                *entry = what;
            }
        }
        let deadline = tokio::time::Instant::now() + DEATH_WAIT;
        while stopped
            .iter()
            .any(|&pgid| i32::try_from(pgid).is_ok_and(gyre_tools::process_group_alive))
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.store.forget_commands(&session_id, None).await?;
        Ok(found)
    }
}
