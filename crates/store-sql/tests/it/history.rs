//! Reshaping sessions: delete, checkpoints, truncate_after, fork; on both
//! backends.

use gyre_protocol::{Message, Origin, Part};
use gyre_store::{Checkpoint, SessionStore, StoreError};
use serde_json::json;

use crate::common::{assistant, both_backends, every_part_kind, ids, meta};

fn checkpoint(id: &str, message_id: &str, call_id: Option<&str>) -> Checkpoint {
    Checkpoint {
        id: id.to_owned(),
        message_id: message_id.to_owned(),
        call_id: call_id.map(str::to_owned),
        snapshot: format!("tree-{id}"),
        created_at_ms: 1_700_000_000_000,
    }
}

/// Session `s1`: m1..m5 with parts (m3 with every kind, m4 from gyre), a
/// state, and checkpoints c2 (of m2) and c4 (of m4).
async fn five_messages(store: &dyn SessionStore) -> Vec<Message> {
    store.create_session(&meta("s1", 1)).await.unwrap();
    let messages = vec![
        Message::user_text("m1", "first"),
        assistant("m2", vec![Part::text("two"), Part::text("parts")]),
        assistant("m3", every_part_kind()),
        Message::user_text("m4", "notice").with_origin(Origin::Gyre),
        assistant("m5", vec![Part::text("last")]),
    ];
    for message in &messages {
        store.append_message("s1", message).await.unwrap();
    }
    store
        .add_checkpoint("s1", &checkpoint("c2", "m2", None))
        .await
        .unwrap();
    store
        .add_checkpoint("s1", &checkpoint("c4", "m4", Some("call-9")))
        .await
        .unwrap();
    store.save_state("s1", &json!({"turn": 5})).await.unwrap();
    messages
}

both_backends! {
    async fn delete_session_removes_everything_and_says_whether_it_was_there(db: &TestDb) {
        let store = db.open().await;
        five_messages(store.as_ref()).await;
        store.create_session(&meta("other", 1)).await.unwrap();

        assert!(store.delete_session("s1").await.unwrap());
        assert_eq!(store.get_session("s1").await.unwrap(), None);
        assert!(matches!(
            store.load_messages("s1").await.unwrap_err(),
            StoreError::SessionNotFound { .. }
        ));
        let listed: Vec<_> = store.list_sessions().await.unwrap().into_iter().map(|m| m.id).collect();
        assert_eq!(listed, ["other"]);
        assert!(!store.delete_session("s1").await.unwrap(), "already gone");
        assert!(!store.delete_session("never").await.unwrap());

        // Nothing of it is left behind, and its ids are free again.
        for table in ["messages", "parts", "checkpoints", "session_locks"] {
            let sql = format!("SELECT session_id, NULL FROM {table} WHERE session_id = 's1'");
            assert_eq!(db.pairs(&sql).await, vec![], "{table}");
        }
        store.create_session(&meta("s1", 2)).await.unwrap();
        assert_eq!(store.load_messages("s1").await.unwrap(), vec![]);
        assert_eq!(store.checkpoints("s1").await.unwrap(), vec![]);
        assert_eq!(store.load_state("s1").await.unwrap(), None);
        store.append_message("s1", &Message::user_text("m1", "again")).await.unwrap();
        store.add_checkpoint("s1", &checkpoint("c2", "m1", None)).await.unwrap();
    }

    async fn checkpoints_come_back_in_the_order_they_were_added(db: &TestDb) {
        let store = db.open().await;
        five_messages(store.as_ref()).await;
        // Ids sort opposite to insertion order; one more for an earlier message.
        store.add_checkpoint("s1", &checkpoint("a1", "m1", Some("call-0"))).await.unwrap();
        assert_eq!(
            store.checkpoints("s1").await.unwrap(),
            vec![
                checkpoint("c2", "m2", None),
                checkpoint("c4", "m4", Some("call-9")),
                checkpoint("a1", "m1", Some("call-0")),
            ]
        );

        let err = store.add_checkpoint("s1", &checkpoint("x", "m9", None)).await.unwrap_err();
        assert!(
            matches!(&err, StoreError::MessageNotFound { message_id, .. } if message_id == "m9"),
            "{err:?}"
        );
        let err = store.add_checkpoint("s1", &checkpoint("c2", "m3", None)).await.unwrap_err();
        assert!(matches!(err, StoreError::CheckpointExists { .. }), "{err:?}");
        let err = store.add_checkpoint("ghost", &checkpoint("c", "m1", None)).await.unwrap_err();
        assert!(matches!(err, StoreError::SessionNotFound { .. }), "{err:?}");
        assert_eq!(store.checkpoints("s1").await.unwrap().len(), 3);

        // Discarding a message takes its checkpoints with it.
        store.discard_message("s1", "m4").await.unwrap();
        let left: Vec<_> = store.checkpoints("s1").await.unwrap().into_iter().map(|c| c.id).collect();
        assert_eq!(left, ["c2", "a1"]);
    }

    async fn truncate_after_cuts_later_messages_parts_and_checkpoints(db: &TestDb) {
        let store = db.open().await;
        let messages = five_messages(store.as_ref()).await;

        assert_eq!(store.truncate_after("s1", "m2").await.unwrap(), 3);
        assert_eq!(store.load_messages("s1").await.unwrap(), messages[..2]);
        assert_eq!(store.checkpoints("s1").await.unwrap(), vec![checkpoint("c2", "m2", None)]);
        assert_eq!(store.load_state("s1").await.unwrap(), Some(json!({"turn": 5})));

        // Cut ids are free again, and new messages follow the kept ones.
        let again = assistant("m3", vec![Part::text("retold")]);
        store.append_message("s1", &again).await.unwrap();
        store.add_checkpoint("s1", &checkpoint("c4", "m3", None)).await.unwrap();
        assert_eq!(ids(&store.load_messages("s1").await.unwrap()), ["m1", "m2", "m3"]);

        assert_eq!(store.truncate_after("s1", "m3").await.unwrap(), 0, "nothing after the last");
        let err = store.truncate_after("s1", "m9").await.unwrap_err();
        assert!(
            matches!(&err, StoreError::MessageNotFound { message_id, .. } if message_id == "m9"),
            "{err:?}"
        );
        assert!(matches!(
            store.truncate_after("ghost", "m1").await.unwrap_err(),
            StoreError::MessageNotFound { .. }
        ));
        assert_eq!(store.load_messages("s1").await.unwrap().len(), 3, "a refused cut removes nothing");
        assert_eq!(store.truncate_after("s1", "m1").await.unwrap(), 2);
        assert_eq!(store.checkpoints("s1").await.unwrap(), vec![]);
    }

    async fn a_fork_through_a_message_copies_that_prefix_and_the_state(db: &TestDb) {
        let store = db.open().await;
        let messages = five_messages(store.as_ref()).await;
        let fork = meta("fork", 77);

        store.fork_session("s1", &fork, Some("m3")).await.unwrap();
        assert_eq!(store.get_session("fork").await.unwrap(), Some(fork));
        assert_eq!(store.load_messages("fork").await.unwrap(), messages[..3]);
        assert_eq!(store.checkpoints("fork").await.unwrap(), vec![checkpoint("c2", "m2", None)]);
        assert_eq!(store.load_state("fork").await.unwrap(), Some(json!({"turn": 5})));

        // The two go their own ways.
        let next = Message::user_text("m6", "only in the fork");
        store.append_message("fork", &next).await.unwrap();
        store.append_part("fork", "m2", &Part::text("fork part")).await.unwrap();
        assert_eq!(ids(&store.load_messages("fork").await.unwrap()), ["m1", "m2", "m3", "m6"]);
        assert_eq!(store.load_messages("s1").await.unwrap(), messages);
        assert_eq!(store.checkpoints("s1").await.unwrap().len(), 2);
    }

    async fn a_whole_fork_copies_everything_and_refusals_write_nothing(db: &TestDb) {
        let store = db.open().await;
        let messages = five_messages(store.as_ref()).await;

        store.fork_session("s1", &meta("whole", 9), None).await.unwrap();
        assert_eq!(store.load_messages("whole").await.unwrap(), messages);
        assert_eq!(store.checkpoints("whole").await.unwrap(), store.checkpoints("s1").await.unwrap());
        store.truncate_after("whole", "m1").await.unwrap();
        assert_eq!(store.load_messages("s1").await.unwrap(), messages, "the source keeps its own");

        let err = store.fork_session("s1", &meta("whole", 9), None).await.unwrap_err();
        assert!(matches!(err, StoreError::SessionExists { .. }), "{err:?}");
        let err = store.fork_session("ghost", &meta("f2", 9), None).await.unwrap_err();
        assert!(
            matches!(&err, StoreError::SessionNotFound { session_id, .. } if session_id == "ghost"),
            "{err:?}"
        );
        let err = store.fork_session("s1", &meta("f3", 9), Some("m9")).await.unwrap_err();
        assert!(matches!(err, StoreError::MessageNotFound { .. }), "{err:?}");
        assert_eq!(store.get_session("f2").await.unwrap(), None);
        assert_eq!(store.get_session("f3").await.unwrap(), None);

        // A fork of a fork of an empty session is empty, without state.
        store.create_session(&meta("empty", 1)).await.unwrap();
        store.fork_session("empty", &meta("f4", 1), None).await.unwrap();
        assert_eq!(store.load_messages("f4").await.unwrap(), vec![]);
        assert_eq!(store.load_state("f4").await.unwrap(), None);
    }
}
