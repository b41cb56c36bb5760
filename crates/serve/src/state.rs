//! The sessions a `gyre serve` process keeps open, and closing the idle ones.
//!
//! Invariants:
//! - At most one [`LiveSession`] per session id in this process: a stored
//!   session opened by two requests at once is loaded once (a per-id
//!   [`OnceCell`]).
//! - A live session is closed only when it is idle, nobody holds it (no
//!   request being handled, no event stream reading it) and either it has
//!   not been used for [`CLOSE_IDLE_AFTER`] or more than
//!   [`KEEP_IDLE_OPEN`] such sessions are open (the least recently used go
//!   first). "Nobody holds it" is checked under the map's lock, where every
//!   handler takes its reference, so a prompt can never reach a session
//!   being closed. Busy sessions are never closed: memory is bounded by
//!   what is running plus [`KEEP_IDLE_OPEN`] idle sessions (each keeps at
//!   most `gyre_core::live::KEPT_UPDATES` updates).
//! - A closed session stays in the store; the next request for it loads it
//!   again, with its update numbering started anew under a new
//!   [`Epoch`] (chosen each time a session is opened here), so event ids
//!   of the two openings never mix.
//! - Once shutdown has begun, nothing new is created, opened or run.
//!
//! Trade-off: the map is one `std::sync::Mutex`, held only for lookups and
//! the sweep's O(open sessions) scan, never across an await.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use gyre_core::{Abort, LiveSession, SessionStatus};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use super::error::ApiError;
use super::sse::Epoch;
use gyre_host::Host;

/// Idle, unheld sessions kept open at most (the least recently used beyond
/// this are closed).
pub const KEEP_IDLE_OPEN: usize = 128;
/// An idle, unheld session unused this long is closed.
pub const CLOSE_IDLE_AFTER: Duration = Duration::from_secs(300);
/// How often idle sessions are looked for.
pub const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// What every handler shares.
pub struct AppState {
    pub host: Host,
    open: Mutex<HashMap<String, Arc<Slot>>>,
    closing: AtomicBool,
    /// Cancelled once the runs are closed at shutdown: event streams end.
    pub streams_end: CancellationToken,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

/// A session open here, and the epoch of its update numbering.
#[derive(Clone)]
pub struct Opened {
    pub live: Arc<LiveSession>,
    pub epoch: Epoch,
}

impl Opened {
    fn new(live: Arc<LiveSession>) -> Opened {
        Opened {
            live,
            epoch: Epoch::new(),
        }
    }
}

/// One open (or opening) session.
struct Slot {
    live: OnceCell<Opened>,
    last_used: Mutex<Instant>,
}

impl Slot {
    fn new(live: Option<Opened>) -> Arc<Slot> {
        Arc::new(Slot {
            live: OnceCell::new_with(live),
            last_used: Mutex::new(Instant::now()),
        })
    }

    fn touch(&self) {
        *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    fn last_used(&self) -> Instant {
        *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl AppState {
    pub fn new(host: Host) -> AppState {
        AppState {
            host,
            open: Mutex::new(HashMap::new()),
            closing: AtomicBool::new(false),
            streams_end: CancellationToken::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Slot>>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn refuse_if_closing(&self) -> Result<(), ApiError> {
        if self.closing.load(Ordering::Acquire) {
            return Err(ApiError::shutting_down());
        }
        Ok(())
    }

    /// A new stored session, open here.
    pub async fn create(
        &self,
        cwd: Option<&Path>,
        title: &str,
        agent: Option<&str>,
    ) -> Result<Arc<LiveSession>, ApiError> {
        self.refuse_if_closing()?;
        let live = self.host.create(cwd, title, agent).await?;
        let excess = {
            let mut open = self.lock();
            let opened = Opened::new(live.clone());
            open.insert(live.id().to_string(), Slot::new(Some(opened)));
            open.len() > KEEP_IDLE_OPEN
        };
        if excess {
            self.close_idle(Instant::now());
        }
        Ok(live)
    }

    /// The session `id`, open here: loaded from the store if it is not.
    pub async fn open(&self, id: &str) -> Result<Opened, ApiError> {
        self.refuse_if_closing()?;
        let (slot, excess) = {
            let mut open = self.lock();
            // A session closed under us (a failed run) is opened anew.
            if open
                .get(id)
                .and_then(|slot| slot.live.get())
                .is_some_and(|opened| opened.live.is_closed())
            {
                open.remove(id);
            }
            let slot = open
                .entry(id.to_string())
                .or_insert_with(|| Slot::new(None))
                .clone();
            (slot, open.len() > KEEP_IDLE_OPEN)
        };
        slot.touch();
        let loaded = slot.live.get_or_try_init(|| self.load(id)).await.cloned();
        if loaded.is_err() {
            // Nothing was opened: forget the empty slot (unless another
            // request has replaced it meanwhile).
            let mut open = self.lock();
            if open
                .get(id)
                .is_some_and(|s| Arc::ptr_eq(s, &slot) && s.live.get().is_none())
            {
                open.remove(id);
            }
        }
        if excess {
            self.close_idle(Instant::now());
        }
        loaded
    }

    async fn load(&self, id: &str) -> Result<Opened, ApiError> {
        let stored = self
            .host
            .store
            .get_session(id)
            .await
            .map_err(|e| ApiError::internal(format!("cannot read session {id}: {e}")))?;
        if stored.is_none() {
            return Err(ApiError::no_session(id));
        }
        Ok(Opened::new(self.host.open_session(id, None).await?))
    }

    /// The session `id` if it is open here (nothing is loaded).
    pub fn live(&self, id: &str) -> Option<Arc<LiveSession>> {
        let slot = self.lock().get(id).cloned()?;
        slot.touch();
        slot.live.get().map(|opened| opened.live.clone())
    }

    /// The status of every session open here.
    pub fn statuses(&self) -> HashMap<String, SessionStatus> {
        // Collected first so that the map's lock is released before each
        // session's own status lock is taken.
        #[expect(clippy::needless_collect, reason = "releases the map's lock first")]
        let open: Vec<(String, Arc<LiveSession>)> = self
            .lock()
            .iter()
            .filter_map(|(id, slot)| Some((id.clone(), slot.live.get()?.live.clone())))
            .collect();
        open.into_iter()
            .map(|(id, live)| (id, live.status()))
            .collect()
    }

    /// Closes the idle, unheld sessions that are too old or too many
    /// (see the module docs); returns how many.
    pub fn close_idle(&self, now: Instant) -> usize {
        let closed: Vec<Arc<LiveSession>> = {
            let mut open = self.lock();
            let mut idle: Vec<(Instant, String)> = open
                .iter()
                .filter_map(|(id, slot)| {
                    let live = &slot.live.get()?.live;
                    let unheld = Arc::strong_count(slot) == 1 && Arc::strong_count(live) == 1;
                    (unheld && live.status() == SessionStatus::Idle)
                        .then(|| (slot.last_used(), id.clone()))
                })
                .collect();
            to_close(&mut idle, now)
                .into_iter()
                .filter_map(|id| Some(open.remove(&id)?.live.get()?.live.clone()))
                .collect()
        };
        let count = closed.len();
        if count > 0 {
            tracing::debug!(count, "closing idle sessions");
            // Idle and unheld: closing only marks them closed.
            tokio::spawn(async move {
                for live in closed {
                    live.close().await;
                }
            });
        }
        count
    }

    /// Refuses new work, cancels every run (they record how they ended) and
    /// waits for them, at most `limit`; returns how many sessions were busy.
    pub async fn close_all(&self, limit: Duration) -> usize {
        self.closing.store(true, Ordering::Release);
        let open: Vec<Arc<LiveSession>> = self
            .lock()
            .values()
            .filter_map(|slot| Some(slot.live.get()?.live.clone()))
            .collect();
        let busy = open.iter().filter(|live| live.is_busy()).count();
        for live in &open {
            live.abort(Abort::Everything);
        }
        let closing = futures::future::join_all(open.iter().map(|live| live.close()));
        if tokio::time::timeout(limit, closing).await.is_err() {
            tracing::warn!("some runs did not end within {limit:?} of the shutdown");
        }
        busy
    }
}

/// Of the idle, unheld sessions (last use, id), those to close: the least
/// recently used beyond [`KEEP_IDLE_OPEN`], and any unused for
/// [`CLOSE_IDLE_AFTER`].
fn to_close(idle: &mut [(Instant, String)], now: Instant) -> Vec<String> {
    idle.sort();
    let excess = idle.len().saturating_sub(KEEP_IDLE_OPEN);
    idle.iter()
        .enumerate()
        .filter(|(i, (used, _))| {
            *i < excess || now.saturating_duration_since(*used) >= CLOSE_IDLE_AFTER
        })
        .map(|(_, (_, id))| id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_beyond_the_limit_and_the_long_unused_are_closed() {
        let now = Instant::now() + CLOSE_IDLE_AFTER * 2;
        let recent = |i: u64| now - Duration::from_millis(1000 - i);
        let mut idle: Vec<(Instant, String)> = (0..KEEP_IDLE_OPEN as u64 + 3)
            .rev()
            .map(|i| (recent(i), format!("s{i}")))
            .collect();
        assert_eq!(
            to_close(&mut idle, now),
            ["s0", "s1", "s2"],
            "least recently used"
        );

        let mut idle = vec![
            (now - CLOSE_IDLE_AFTER, "old".to_string()),
            (now - Duration::from_secs(1), "fresh".to_string()),
        ];
        assert_eq!(to_close(&mut idle, now), ["old"]);
        assert!(to_close(&mut [], now).is_empty());
    }
}
