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
//! - Fencing: the lock's generation fences every write of the run (the run
//!   writes through a [`Fenced`] store), so a run that was paused past its
//!   lease and taken over writes nothing more, whatever it believes.
//! - The renewal fails closed (see [`super::lease`]); a run whose lease was
//!   lost ends with [`TAKEN_OVER`] and writes nothing more.

use std::sync::Arc;
use std::time::Duration;

use gyre_protocol::Event;
use gyre_store::{Fence, Fenced, LockAttempt, LockHolder, SessionStore, StoreError};
use tokio::task::JoinHandle;

use super::RunLoop;
use super::lease::Lease;
use crate::id::new_id;
use crate::session::Session;

/// How long a holder that stopped renewing keeps the lock.
pub(crate) const LEASE: Duration = Duration::from_secs(5);
/// How often a waiting run asks again.
const POLL_EVERY: Duration = Duration::from_millis(200);

/// How a run that lost its session to another run ends.
pub(crate) const TAKEN_OVER: &str = "session taken over by another run";

/// The lock a run holds, and the task that keeps it.
#[derive(Debug)]
pub(super) struct Flight {
    pub holder: LockHolder,
    /// The lock's generation: the fence of every write the run makes.
    pub generation: i64,
    /// What the run knows of its hold on the lock.
    pub lease: Arc<Lease>,
    renewal: JoinHandle<()>,
}

impl Flight {
    /// Stops renewing; the caller then releases the lock.
    pub fn land(self) -> LockHolder {
        self.renewal.abort();
        self.holder
    }

    /// Whether the renewal found the lock lost (taken over, or not renewed
    /// for a whole lease).
    pub fn is_lost(&self) -> bool {
        self.lease.is_lost()
    }

    /// The store the run writes through: its session's writes fenced.
    pub fn fenced(&self, store: Arc<dyn SessionStore>, session_id: &str) -> Arc<dyn SessionStore> {
        Arc::new(Fenced::new(
            store,
            Fence {
                session_id: session_id.to_string(),
                generation: self.generation,
            },
        ))
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
    /// Takes the session's lock, waiting while another run holds it, and
    /// fences the run's writes with it. `None` when the run was cancelled
    /// while waiting.
    pub(super) async fn take_flight(&mut self) -> Result<Option<Flight>, StoreError> {
        let holder = LockHolder {
            token: new_id(),
            pid: std::process::id(),
            host: host_name(),
        };
        let store = self.agent.store.clone();
        let mut waited = false;
        let generation = loop {
            match store.try_lock(self.session.id(), &holder, LEASE).await? {
                LockAttempt::Acquired { generation } => break generation,
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
        };
        if waited || self.moved_on(store.as_ref()).await? {
            // Another run appended to the session: go on from there.
            let tools = self.session.tools.clone();
            let always = self.session.always.clone();
            *self.session = Session::load(store.as_ref(), self.session.id()).await?;
            self.session.tools = tools;
            self.session.always = always;
        }
        let lease = Lease::new(
            store,
            self.session.id().to_string(),
            holder.clone(),
            self.cancel.clone(),
        );
        let renewal = tokio::spawn(lease.clone().keep_renewed());
        Ok(Some(Flight {
            holder,
            generation,
            lease,
            renewal,
        }))
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
