//! The single-flight lock of a session, across stores (processes, hosts);
//! on both backends.

use std::sync::Arc;
use std::time::Duration;

use gyre_store::{LockAttempt, LockHolder, StoreError};
use tokio::sync::Barrier;

use crate::common::{both_backends, meta};

/// Long enough that no live holder goes stale during a test.
const LEASE: Duration = Duration::from_secs(60);

fn holder(token: &str, host: &str) -> LockHolder {
    LockHolder {
        token: token.to_owned(),
        pid: std::process::id(),
        host: host.to_owned(),
    }
}

/// The pid of a process that existed and is gone: a child spawned and
/// waited for (so reaped).
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    assert!(child.wait().unwrap().success());
    pid
}

fn busy_holder(attempt: LockAttempt) -> (LockHolder, i64) {
    match attempt {
        LockAttempt::Busy {
            holder,
            renewed_ms_ago,
        } => (holder, renewed_ms_ago),
        LockAttempt::Acquired { .. } => panic!("expected the lock to be busy"),
    }
}

both_backends! {
    async fn a_live_holder_keeps_the_lock_and_is_named(db: &TestDb) {
        let (one, two) = (db.open().await, db.open().await);
        one.create_session(&meta("s1", 1)).await.unwrap();
        let a = holder("token-a", "host-1");
        let b = holder("token-b", "host-1");

        assert!(matches!(one.try_lock("s1", &a, LEASE).await.unwrap(), LockAttempt::Acquired { .. }));
        let (seen, ago) = busy_holder(two.try_lock("s1", &b, LEASE).await.unwrap());
        assert_eq!(seen, a);
        assert!((0..LEASE.as_millis() as i64).contains(&ago), "{ago}");
        // Another host cannot judge this host's pids: only the lease counts.
        let elsewhere = holder("token-c", "host-2");
        let (seen, _) = busy_holder(two.try_lock("s1", &elsewhere, LEASE).await.unwrap());
        assert_eq!(seen.token, "token-a");
        assert!(one.renew_lock("s1", &a).await.unwrap());
    }

    async fn the_holder_takes_it_again_and_renews(db: &TestDb) {
        let store = db.open().await;
        store.create_session(&meta("s1", 1)).await.unwrap();
        let a = holder("token-a", "host-1");
        for _ in 0..3 {
            assert!(matches!(store.try_lock("s1", &a, LEASE).await.unwrap(), LockAttempt::Acquired { .. }));
        }
        assert!(store.renew_lock("s1", &a).await.unwrap());
        // Renewing a lock one does not hold is refused, and takes nothing.
        let b = holder("token-b", "host-1");
        assert!(!store.renew_lock("s1", &b).await.unwrap());
        assert_eq!(busy_holder(store.try_lock("s1", &b, LEASE).await.unwrap()).0, a);
        // Locks are per session.
        store.create_session(&meta("s2", 1)).await.unwrap();
        assert!(matches!(store.try_lock("s2", &b, LEASE).await.unwrap(), LockAttempt::Acquired { .. }));
    }

    async fn a_lock_not_renewed_within_the_lease_is_taken_over(db: &TestDb) {
        let (one, two) = (db.open().await, db.open().await);
        one.create_session(&meta("s1", 1)).await.unwrap();
        // Different hosts, so only the lease can free it.
        let a = holder("token-a", "host-1");
        let b = holder("token-b", "host-2");
        assert!(matches!(one.try_lock("s1", &a, LEASE).await.unwrap(), LockAttempt::Acquired { .. }));

        // A zero lease: any lock is older than that.
        assert!(matches!(two.try_lock("s1", &b, Duration::ZERO).await.unwrap(), LockAttempt::Acquired { .. }));
        assert!(!one.renew_lock("s1", &a).await.unwrap(), "the old holder has lost it");
        let (seen, _) = busy_holder(one.try_lock("s1", &a, LEASE).await.unwrap());
        assert_eq!(seen, b);
        // The old holder's unlock leaves the new holder's lock alone.
        one.unlock("s1", &a).await.unwrap();
        assert!(two.renew_lock("s1", &b).await.unwrap());
    }

    async fn a_lock_whose_process_is_gone_on_this_host_is_taken_over_at_once(db: &TestDb) {
        let store = db.open().await;
        store.create_session(&meta("s1", 1)).await.unwrap();
        store.create_session(&meta("s2", 1)).await.unwrap();
        let dead = LockHolder {
            token: "token-dead".into(),
            pid: dead_pid(),
            host: "host-1".into(),
        };
        for session in ["s1", "s2"] {
            assert!(matches!(store.try_lock(session, &dead, LEASE).await.unwrap(), LockAttempt::Acquired { .. }));
        }

        // On the same host the pid is known gone: taken over within the lease.
        let b = holder("token-b", "host-1");
        assert!(matches!(store.try_lock("s1", &b, LEASE).await.unwrap(), LockAttempt::Acquired { .. }));
        assert!(!store.renew_lock("s1", &dead).await.unwrap());
        // From another host it cannot be told: busy until the lease runs out.
        let c = holder("token-c", "host-2");
        assert_eq!(busy_holder(store.try_lock("s2", &c, LEASE).await.unwrap()).0, dead);
    }

    async fn unlock_needs_the_holders_token(db: &TestDb) {
        let store = db.open().await;
        store.create_session(&meta("s1", 1)).await.unwrap();
        let a = holder("token-a", "host-1");
        let b = holder("token-b", "host-1");
        assert!(matches!(store.try_lock("s1", &a, LEASE).await.unwrap(), LockAttempt::Acquired { .. }));

        store.unlock("s1", &b).await.unwrap();
        assert_eq!(busy_holder(store.try_lock("s1", &b, LEASE).await.unwrap()).0, a);
        store.unlock("s1", &a).await.unwrap();
        assert!(!store.renew_lock("s1", &a).await.unwrap());
        assert!(matches!(store.try_lock("s1", &b, LEASE).await.unwrap(), LockAttempt::Acquired { .. }));
        // Unlocking what nobody holds, or a session that does not exist, is fine.
        store.unlock("s1", &b).await.unwrap();
        store.unlock("s1", &b).await.unwrap();
        store.unlock("ghost", &b).await.unwrap();
    }

    async fn of_concurrent_contenders_exactly_one_wins(db: &TestDb) {
        const CONTENDERS: usize = 6;
        // Three stores (processes), each with two contending tasks.
        let stores = futures::future::join_all((0..3).map(|_| db.open())).await;
        let setup = &stores[0];
        setup.create_session(&meta("free", 1)).await.unwrap();
        setup.create_session(&meta("stale", 1)).await.unwrap();
        let dead = LockHolder { token: "dead".into(), pid: dead_pid(), host: "host-1".into() };
        setup.try_lock("stale", &dead, LEASE).await.unwrap();

        // A free lock, and a stale one that all contenders try to take over.
        for session in ["free", "stale"] {
            let barrier = Arc::new(Barrier::new(CONTENDERS));
            let mut handles = Vec::new();
            for i in 0..CONTENDERS {
                let store = Arc::clone(&stores[i % stores.len()]);
                let barrier = Arc::clone(&barrier);
                handles.push(tokio::spawn(async move {
                    let me = holder(&format!("token-{i}"), "host-1");
                    barrier.wait().await;
                    (me.clone(), store.try_lock(session, &me, LEASE).await.unwrap())
                }));
            }
            let mut winners = Vec::new();
            let mut named = Vec::new();
            for handle in handles {
                match handle.await.unwrap() {
                    (me, LockAttempt::Acquired { .. }) => winners.push(me),
                    (_, LockAttempt::Busy { holder, .. }) => named.push(holder),
                }
            }
            assert_eq!(winners.len(), 1, "{session}: {winners:?}");
            assert!(named.iter().all(|h| *h == winners[0]), "{session}: {named:?}");
            assert!(setup.renew_lock(session, &winners[0]).await.unwrap());
        }
    }

    async fn locks_belong_to_existing_sessions_and_go_with_them(db: &TestDb) {
        let store = db.open().await;
        let a = holder("token-a", "host-1");
        let err = store.try_lock("ghost", &a, LEASE).await.unwrap_err();
        assert!(
            matches!(&err, StoreError::SessionNotFound { session_id, .. } if session_id == "ghost"),
            "{err:?}"
        );
        assert!(!store.renew_lock("ghost", &a).await.unwrap());

        store.create_session(&meta("s1", 1)).await.unwrap();
        assert!(matches!(store.try_lock("s1", &a, LEASE).await.unwrap(), LockAttempt::Acquired { .. }));
        assert!(store.delete_session("s1").await.unwrap());
        assert!(!store.renew_lock("s1", &a).await.unwrap(), "deleted with its session");
        store.create_session(&meta("s1", 2)).await.unwrap();
        let b = holder("token-b", "host-1");
        assert!(matches!(store.try_lock("s1", &b, LEASE).await.unwrap(), LockAttempt::Acquired { .. }));
    }
}
