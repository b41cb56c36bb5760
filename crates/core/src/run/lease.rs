//! What a run knows of its hold on the session's lock: when the store last
//! confirmed it, and whether it was lost. The renewal task keeps it; a
//! tool's start asks it ([`Lease::confirm`]).
//!
//! Invariants:
//! - Fails closed: a renewal the store refuses (the token no longer holds
//!   the lock), or renewals failing for a whole lease (the store cut off:
//!   another run may have taken over meanwhile), mark the lease lost and
//!   cancel the run at once (its tools, and so their process groups).
//! - Times are the monotonic clock, which runs on while the process is
//!   stopped: a run continued after a pause longer than the lease finds its
//!   last confirmation too old at once, and asks the store before it starts
//!   a tool.
//! - Lost is final.
//!
//! Trade-off: a tool started right after a confirmation may still run
//! while the process is paused and taken over (no lease can prevent that;
//! see the README's "Sessions"). What it did is never stored by this run:
//! the store's fence refuses the run's writes ([`gyre_store::Fenced`]), and
//! the run that took over kills the command's process group when it is
//! recorded and still alive.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use gyre_store::{LockHolder, SessionStore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::flight::LEASE;

/// How often the holder renews: a third of the lease.
pub(super) const RENEW_EVERY: Duration = Duration::from_millis(1_600);

/// A confirmation younger than this lets a tool start without asking the
/// store again (a renewal is due before it could expire).
const TRUSTED_FOR: Duration = Duration::from_millis(3_200);

/// A run's hold on its session's lock.
pub(crate) struct Lease {
    store: Arc<dyn SessionStore>,
    session_id: String,
    holder: LockHolder,
    confirmed_at: Mutex<Instant>,
    lost: AtomicBool,
    /// The run's token: cancelled when the lease is lost.
    cancel: CancellationToken,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("session_id", &self.session_id)
            .field("lost", &self.is_lost())
            .finish_non_exhaustive()
    }
}

impl Lease {
    pub(super) fn new(
        store: Arc<dyn SessionStore>,
        session_id: String,
        holder: LockHolder,
        cancel: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Lease {
            store,
            session_id,
            holder,
            confirmed_at: Mutex::new(Instant::now()),
            lost: AtomicBool::new(false),
            cancel,
        })
    }

    pub(crate) fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    fn since_confirmed(&self) -> Duration {
        self.confirmed_at
            .lock()
            .map(|at| at.elapsed())
            .unwrap_or(Duration::MAX)
    }

    fn confirmed(&self) {
        if let Ok(mut at) = self.confirmed_at.lock() {
            *at = Instant::now();
        }
    }

    fn lose(&self, why: &str) {
        if !self.lost.swap(true, Ordering::SeqCst) {
            tracing::warn!(session = %self.session_id, "{why}; stopping the run");
        }
        self.cancel.cancel();
    }

    /// One renewal: whether the lock is still this run's. A refusal loses
    /// the lease; an error loses it once no renewal succeeded for a lease.
    async fn renew(&self) -> bool {
        if self.is_lost() {
            return false;
        }
        match self.store.renew_lock(&self.session_id, &self.holder).await {
            // Also after a pause longer than the lease: nobody took it over
            // meanwhile, so it is still this run's.
            Ok(true) => {
                self.confirmed();
                true
            }
            Ok(false) => {
                self.lose("the session's lock was taken over by another run");
                false
            }
            Err(error) if self.since_confirmed() < LEASE => {
                tracing::warn!("could not renew the session's lock: {error}");
                false
            }
            Err(error) => {
                self.lose(&format!(
                    "could not renew the session's lock for a whole lease ({error})"
                ));
                false
            }
        }
    }

    /// Whether a tool may start now: the lease was confirmed recently, or
    /// the store confirms it now. False (fail closed) when it is lost or
    /// cannot be confirmed.
    pub(crate) async fn confirm(&self) -> bool {
        if self.is_lost() {
            return false;
        }
        if self.since_confirmed() < TRUSTED_FOR {
            return true;
        }
        self.renew().await
    }

    /// The renewal task's body: renews every [`RENEW_EVERY`] until the lease
    /// is lost (the task is aborted when the run lands).
    pub(super) async fn keep_renewed(self: Arc<Self>) {
        loop {
            tokio::time::sleep(RENEW_EVERY).await;
            self.renew().await;
            if self.is_lost() {
                return;
            }
        }
    }
}
