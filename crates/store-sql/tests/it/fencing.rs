//! Fencing tokens: each acquisition of a session's lock gets a greater
//! generation, and a holder's writes are refused once the lock moved on; on
//! both backends, and from separate stores (processes, hosts).

use std::sync::Arc;
use std::time::Duration;

use gyre_protocol::{Message, Part, Role};
use gyre_store::{
    Checkpoint, Fence, Fenced, LockAttempt, LockHolder, SessionStore, StoreError, Write,
};

use crate::common::{both_backends, ids, meta};

const LEASE: Duration = Duration::from_secs(60);

fn holder(token: &str, host: &str) -> LockHolder {
    LockHolder {
        token: token.to_owned(),
        pid: std::process::id(),
        host: host.to_owned(),
    }
}

async fn acquire(
    store: &dyn SessionStore,
    session: &str,
    who: &LockHolder,
    lease: Duration,
) -> i64 {
    match store.try_lock(session, who, lease).await.unwrap() {
        LockAttempt::Acquired { generation } => generation,
        busy => panic!("expected the lock, got {busy:?}"),
    }
}

fn text(id: &str, text: &str) -> Message {
    Message::new(id.to_owned(), Role::User, vec![Part::text(text)])
}

fn is_fenced(result: Result<(), StoreError>, generation: i64, current: i64) {
    match result {
        Err(StoreError::Fenced {
            generation: g,
            current: c,
            ..
        }) => assert_eq!((g, c), (generation, current)),
        other => panic!("expected the write to be fenced, got {other:?}"),
    }
}

both_backends! {
    async fn generations_grow_with_every_acquisition_and_survive_releases(db: &TestDb) {
        let store = db.open().await;
        store.create_session(&meta("s1", 1)).await.unwrap();
        let a = holder("token-a", "host-1");
        let first = acquire(store.as_ref(), "s1", &a, LEASE).await;
        assert!(first > 0, "{first}");
        // Re-entry keeps the generation.
        assert_eq!(acquire(store.as_ref(), "s1", &a, LEASE).await, first);
        // A takeover (another host, a zero lease) issues the next one.
        let b = holder("token-b", "host-2");
        let second = acquire(store.as_ref(), "s1", &b, Duration::ZERO).await;
        assert_eq!(second, first + 1);
        // A release does not reset it.
        store.unlock("s1", &b).await.unwrap();
        let third = acquire(store.as_ref(), "s1", &a, LEASE).await;
        assert_eq!(third, second + 1);
        // Per session.
        store.create_session(&meta("s2", 1)).await.unwrap();
        assert_eq!(acquire(store.as_ref(), "s2", &a, LEASE).await, 1);
    }

    async fn the_holders_fenced_writes_land(db: &TestDb) {
        let store = db.open().await;
        store.create_session(&meta("s1", 1)).await.unwrap();
        let generation = acquire(store.as_ref(), "s1", &holder("a", "h"), LEASE).await;
        let fenced = Fenced::new(store.clone(), Fence { session_id: "s1".into(), generation });
        fenced.append_message("s1", &text("m1", "hi")).await.unwrap();
        fenced.append_part("s1", "m1", &Part::text("more")).await.unwrap();
        fenced.save_state("s1", &serde_json::json!({"turn": 1})).await.unwrap();
        let checkpoint = Checkpoint {
            id: "c1".into(),
            message_id: "m1".into(),
            call_id: None,
            snapshot: "tree".into(),
            created_at_ms: 1,
        };
        fenced.add_checkpoint("s1", &checkpoint).await.unwrap();
        fenced.append_message("s1", &text("m2", "cut")).await.unwrap();
        fenced.discard_message("s1", "m2").await.unwrap();
        let messages = store.load_messages("s1").await.unwrap();
        assert_eq!(ids(&messages), ["m1"]);
        assert_eq!(messages[0].parts.len(), 2);
        assert_eq!(store.checkpoints("s1").await.unwrap(), [checkpoint]);
        assert_eq!(store.load_state("s1").await.unwrap(), Some(serde_json::json!({"turn": 1})));
    }

    async fn a_taken_over_holder_writes_nothing(db: &TestDb) {
        // Two stores: two processes (or hosts) sharing the database.
        let (one, two) = (db.open().await, db.open().await);
        one.create_session(&meta("s1", 1)).await.unwrap();
        let a = holder("token-a", "host-1");
        let old = acquire(one.as_ref(), "s1", &a, LEASE).await;
        let fence = Fence { session_id: "s1".into(), generation: old };
        one.write_fenced(&fence, Write::Message(&text("m1", "before"))).await.unwrap();
        one.write_fenced(&fence, Write::Message(&text("m2", "doomed"))).await.unwrap();
        one.save_state("s1", &serde_json::json!({"by": "a"})).await.unwrap();

        // A stops renewing; B takes over when the lease ran out.
        let b = holder("token-b", "host-2");
        let new = acquire(two.as_ref(), "s1", &b, Duration::ZERO).await;
        assert_eq!(new, old + 1);

        let checkpoint = Checkpoint {
            id: "c1".into(),
            message_id: "m1".into(),
            call_id: Some("call".into()),
            snapshot: "tree".into(),
            created_at_ms: 1,
        };
        let state = serde_json::json!({"by": "a, late"});
        let late = [
            Write::Message(&text("m3", "late")),
            Write::Part { message_id: "m1", part: &Part::text("late part") },
            Write::Discard { message_id: "m2" },
            Write::State(&state),
            Write::Checkpoint(&checkpoint),
        ];
        for write in late {
            is_fenced(one.write_fenced(&fence, write).await, old, new);
        }
        // Its renewal fails too: the token no longer holds the lock.
        assert!(!one.renew_lock("s1", &a).await.unwrap());
        // Nothing of A's late writes is in the session.
        let messages = two.load_messages("s1").await.unwrap();
        assert_eq!(ids(&messages), ["m1", "m2"]);
        assert_eq!(messages[0].parts.len(), 1);
        assert!(two.checkpoints("s1").await.unwrap().is_empty());
        assert_eq!(two.load_state("s1").await.unwrap(), Some(serde_json::json!({"by": "a"})));

        // B's writes land, also after it released the lock and A is still
        // fenced out by the generation B left.
        let b_fence = Fenced::new(two.clone(), Fence { session_id: "s1".into(), generation: new });
        b_fence.append_message("s1", &text("m3", "b")).await.unwrap();
        two.unlock("s1", &b).await.unwrap();
        is_fenced(one.write_fenced(&fence, Write::Message(&text("m4", "x"))).await, old, new);
        // A missing session is still reported as missing.
        let gone = Fence { session_id: "nope".into(), generation: 1 };
        assert!(matches!(
            one.write_fenced(&gone, Write::Message(&text("m", "x"))).await,
            Err(StoreError::SessionNotFound { .. })
        ));
    }

    async fn a_fenced_store_passes_other_sessions_through(db: &TestDb) {
        let store = db.open().await;
        store.create_session(&meta("s1", 1)).await.unwrap();
        store.create_session(&meta("child", 1)).await.unwrap();
        let generation = acquire(store.as_ref(), "s1", &holder("a", "h"), LEASE).await;
        let fenced: Arc<dyn SessionStore> =
            Arc::new(Fenced::new(store.clone(), Fence { session_id: "s1".into(), generation }));
        // Another run takes s1 over; the child session (never locked) is not fenced.
        acquire(store.as_ref(), "s1", &holder("b", "h2"), Duration::ZERO).await;
        fenced.append_message("child", &text("m1", "ok")).await.unwrap();
        assert!(matches!(
            fenced.append_message("s1", &text("m1", "late")).await,
            Err(StoreError::Fenced { .. })
        ));
    }
}

both_backends! {
    async fn running_commands_are_recorded_forgotten_and_fenced(db: &TestDb) {
        use gyre_store::RunningCommand;
        let store = db.open().await;
        store.create_session(&meta("s1", 1)).await.unwrap();
        let command = |call: &str, pgid: i64| RunningCommand {
            call_id: call.into(),
            host: "h".into(),
            pgid,
            started: 100 + pgid,
        };
        let generation = acquire(store.as_ref(), "s1", &holder("a", "h"), LEASE).await;
        let fenced = Fenced::new(store.clone(), Fence { session_id: "s1".into(), generation });
        fenced.record_command("s1", &command("c1", 10)).await.unwrap();
        fenced.record_command("s1", &command("c1", 10)).await.unwrap();
        fenced.record_command("s1", &command("c2", 20)).await.unwrap();
        assert_eq!(
            store.running_commands("s1").await.unwrap(),
            [command("c1", 10), command("c2", 20)]
        );
        fenced.forget_commands("s1", Some("c1")).await.unwrap();
        assert_eq!(store.running_commands("s1").await.unwrap(), [command("c2", 20)]);
        // Taken over: the old holder records and forgets nothing.
        acquire(store.as_ref(), "s1", &holder("b", "h2"), Duration::ZERO).await;
        assert!(matches!(
            fenced.record_command("s1", &command("c3", 30)).await,
            Err(StoreError::Fenced { .. })
        ));
        assert!(matches!(
            fenced.forget_commands("s1", None).await,
            Err(StoreError::Fenced { .. })
        ));
        assert_eq!(store.running_commands("s1").await.unwrap(), [command("c2", 20)]);
        store.forget_commands("s1", None).await.unwrap();
        assert!(store.running_commands("s1").await.unwrap().is_empty());
        // Deleting the session deletes its records.
        store.record_command("s1", &command("c4", 40)).await.unwrap();
        assert!(store.delete_session("s1").await.unwrap());
        assert!(store.running_commands("s1").await.unwrap().is_empty());
    }
}
