//! Single flight: one running loop per session, across processes and hosts
//! (seed 001), through the store's lock.
//!
//! Invariants:
//! - A run holds its session's lock from before it changes anything until
//!   after its final state is saved; the lock is renewed well within its
//!   lease, so a live holder is never taken over.
//! - A run that had to wait reloads the session first: it goes on with the
//!   history the other run left, not the one it was started with. So does a
//!   run whose copy of the session is older than the store's (a session kept
//!   open by a long-lived frontend while another process or host ran it):
//!   the stored state differs from the copy's. The copy's "always" answers
//!   and tool state survive the reload.
//! - A holder that died (its process gone from this host, or silent for a
//!   lease) is taken over at once by the store; nothing here waits for it.

use std::time::Duration;

use gyre_protocol::Event;
use gyre_store::{LockAttempt, LockHolder, StoreError};
use tokio::task::JoinHandle;

use super::RunLoop;
use crate::id::new_id;
use crate::session::Session;

/// How long a holder that stopped renewing keeps the lock.
pub(crate) const LEASE: Duration = Duration::from_secs(5);
/// How often the holder renews: a third of the lease.
const RENEW_EVERY: Duration = Duration::from_millis(1_600);
/// How often a waiting run asks again.
const POLL_EVERY: Duration = Duration::from_millis(200);

/// The lock a run holds, and the task that keeps it.
#[derive(Debug)]
pub(super) struct Flight {
    pub holder: LockHolder,
    renewal: JoinHandle<()>,
}

impl Flight {
    /// Stops renewing; the caller then releases the lock.
    pub fn land(self) -> LockHolder {
        self.renewal.abort();
        self.holder
    }
}

/// This machine's name, the same for every gyre on it.
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_string())
}

impl RunLoop<'_> {
    /// Takes the session's lock, waiting while another run holds it.
    /// `None` when the run was cancelled while waiting.
    pub(super) async fn take_flight(&mut self) -> Result<Option<Flight>, StoreError> {
        let holder = LockHolder {
            token: new_id(),
            pid: std::process::id(),
            host: host_name(),
        };
        let store = self.agent.store.clone();
        let mut waited = false;
        loop {
            match store.try_lock(self.session.id(), &holder, LEASE).await? {
                LockAttempt::Acquired => break,
                LockAttempt::Busy { holder: other, .. } => {
                    if !waited {
                        waited = true;
                        tracing::info!(pid = other.pid, host = %other.host, "the session is busy; waiting");
                        self.events
                            .emit(Event::SessionBusy {
                                pid: other.pid,
                                host: other.host,
                            })
                            .await;
                    }
                    tokio::select! {
                        biased;
                        _ = self.cancel.cancelled() => return Ok(None),
                        _ = tokio::time::sleep(POLL_EVERY) => {}
                    }
                }
            }
        }
        if waited || self.moved_on(store.as_ref()).await? {
            // Another run appended to the session: go on from there.
            let tools = self.session.tools.clone();
            let always = self.session.always.clone();
            *self.session = Session::load(store.as_ref(), self.session.id()).await?;
            self.session.tools = tools;
            self.session.always = always;
        }
        let session_id = self.session.id().to_string();
        let renewed = holder.clone();
        let renewal = tokio::spawn(async move {
            loop {
                tokio::time::sleep(RENEW_EVERY).await;
                match store.renew_lock(&session_id, &renewed).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(session = %session_id, "the session's lock was lost");
                        return;
                    }
                    Err(error) => tracing::warn!("could not renew the session's lock: {error}"),
                }
            }
        });
        Ok(Some(Flight { holder, renewal }))
    }

    /// Whether another run saved the session since this copy was loaded or
    /// last ran (each run saves its state last, so an untouched session's
    /// stored state is this copy's).
    async fn moved_on(&self, store: &dyn gyre_store::SessionStore) -> Result<bool, StoreError> {
        let Some(stored) = store.load_state(self.session.id()).await? else {
            return Ok(false);
        };
        // A state that does not serialise cannot be compared: reload.
        Ok(serde_json::to_value(&self.session.state).map_or(true, |mine| mine != stored))
    }
}
