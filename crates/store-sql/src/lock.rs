//! When a session's lock holder is gone, so that its lock may be taken over:
//! the rules [`gyre_store::SessionStore::try_lock`] promises, as one pure
//! function the engine applies to the row it read.
//!
//! Invariants:
//! - At most one holder per session at any time: the lock is a row keyed by
//!   the session, taken by an insert that does nothing when the row exists,
//!   and taken over only by a compare-and-swap on the exact stale row that
//!   was read (see [`crate::sql::TAKE_OVER_LOCK`]).
//! - A holder is identified by its token alone; pid and host only serve to
//!   tell that it is gone. The same token acquires again (re-entrant) and
//!   renews.
//! - A lock is stale when it was not renewed within the contender's lease,
//!   or when it is held on the contender's own host by a process that no
//!   longer exists. A stale lock is taken over at once.
//!
//! Trade-offs: the pid check works on Linux (`/proc/<pid>`); elsewhere only
//! the lease frees a dead holder's lock. A pid reused by an unrelated process
//! looks alive, and `/proc` mounted with `hidepid` hides other users'
//! processes (they look gone): both fall back on, or defeat, the pid check,
//! never the lease.

use std::time::Duration;

use gyre_store::LockHolder;

/// What a contender makes of the lock it found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The contender holds it already.
    Own,
    /// Its holder is gone: take it over.
    Stale,
    /// Its holder is alive: wait.
    Live,
}

/// Judges the lock `current`, last renewed `renewed_ms_ago` ago, for the
/// contender `me` who allows holders a `lease`.
pub(crate) fn judge(
    current: &LockHolder,
    renewed_ms_ago: i64,
    me: &LockHolder,
    lease: Duration,
) -> Verdict {
    if current.token == me.token {
        return Verdict::Own;
    }
    let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
    if renewed_ms_ago >= lease_ms {
        return Verdict::Stale;
    }
    if current.host == me.host && process_is_gone(current.pid) {
        return Verdict::Stale;
    }
    Verdict::Live
}

/// Whether no process `pid` exists on this machine, as far as can be told.
/// A stat of `/proc` is answered from kernel memory, never a disk, so it is
/// fine on the async runtime.
#[cfg(target_os = "linux")]
fn process_is_gone(pid: u32) -> bool {
    match std::fs::metadata(format!("/proc/{pid}")) {
        Ok(_) => false,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// Without `/proc` nothing can be told: only the lease frees the lock.
#[cfg(not(target_os = "linux"))]
fn process_is_gone(_pid: u32) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(token: &str, pid: u32, host: &str) -> LockHolder {
        LockHolder {
            token: token.into(),
            pid,
            host: host.into(),
        }
    }

    #[test]
    fn the_same_token_is_its_own_holder_whatever_the_age() {
        let me = holder("t", 1, "h");
        assert_eq!(
            judge(&me, i64::MAX, &me, Duration::ZERO),
            Verdict::Own,
            "re-entry never counts as a takeover"
        );
    }

    #[test]
    fn a_lock_older_than_the_lease_is_stale() {
        let me = holder("a", std::process::id(), "h");
        let other = holder("b", std::process::id(), "h");
        let lease = Duration::from_secs(5);
        assert_eq!(judge(&other, 4_999, &me, lease), Verdict::Live);
        assert_eq!(judge(&other, 5_000, &me, lease), Verdict::Stale);
        // A clock that went backwards never makes a lock stale.
        assert_eq!(judge(&other, -10, &me, lease), Verdict::Live);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_gone_pid_counts_only_on_the_same_host() {
        let me = holder("a", std::process::id(), "here");
        // Above the kernel's pid_max limit (2^22), so never a process.
        let gone = u32::MAX - 1;
        let lease = Duration::from_secs(60);
        assert_eq!(
            judge(&holder("b", gone, "here"), 0, &me, lease),
            Verdict::Stale
        );
        assert_eq!(
            judge(&holder("b", gone, "elsewhere"), 0, &me, lease),
            Verdict::Live
        );
        assert_eq!(
            judge(&holder("b", std::process::id(), "here"), 0, &me, lease),
            Verdict::Live
        );
    }
}
