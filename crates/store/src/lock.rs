//! The single-flight lock of a session, as the trait speaks of it: who holds
//! it and what an attempt to take it found. The rules are the trait's
//! ([`crate::SessionStore::try_lock`]); a backend applies them (gyre-store-sql's
//! `lock` module, where they are code).
//!
//! Invariants every backend keeps:
//! - At most one holder per session at any time; a stale lock is taken over
//!   atomically (of several contenders exactly one wins).
//! - A holder is identified by its token alone; pid and host only serve to
//!   tell that it is gone. The same token acquires again (re-entrant) and
//!   renews.
//! - A lock is stale when it was not renewed within the contender's lease,
//!   or when it is held on the contender's own host by a process that no
//!   longer exists. A stale lock is taken over at once.
//! - Every acquisition (new or takeover, not re-entry) gets a generation
//!   strictly greater than every earlier one of the session, also across
//!   releases: the fencing token ([`crate::Fence`]).
//!
//! Trade-offs: the pid check works on Linux (`/proc/<pid>`); elsewhere only
//! the lease frees a dead holder's lock. A pid reused by an unrelated process
//! looks alive, and `/proc` mounted with `hidepid` hides other users'
//! processes (they look gone): both fall back on, or defeat, the pid check,
//! never the lease. `host` must name the machine the process runs on, the
//! same string for every gyre on it.

/// Who holds (or wants) a session's lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHolder {
    /// Unique per holder (a random id): only this token renews or releases.
    pub token: String,
    /// The holder's process id on `host`.
    pub pid: u32,
    /// The machine the holder runs on (its host name).
    pub host: String,
}

/// The outcome of [`crate::SessionStore::try_lock`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockAttempt {
    /// The caller holds the lock now (newly, again, or taken over).
    Acquired {
        /// The lease's fencing token: strictly greater than that of every
        /// earlier acquisition of this session's lock (re-entry by the same
        /// token keeps it). Writes carrying it ([`crate::Fence`]) are refused
        /// once a later acquisition happened.
        generation: i64,
    },
    /// Someone else holds it and is alive as far as can be told.
    Busy {
        holder: LockHolder,
        /// How long ago the holder last renewed it, on the lock's clock.
        renewed_ms_ago: i64,
    },
}
