//! What goes in comes back out, in order, also from a new store on the same
//! database; on both backends.

use gyre_protocol::{Message, Part};
use serde_json::json;

use crate::common::{assistant, both_backends, every_part_kind, meta};

both_backends! {
    async fn every_part_kind_round_trips_whole_and_part_by_part(db: &TestDb) {
        let store = db.open().await;
        store.create_session(&meta("s1", 1)).await.unwrap();

        let whole = assistant("m1", every_part_kind());
        store.append_message("s1", &whole).await.unwrap();

        // The same parts recorded one by one into a message appended empty.
        store
            .append_message("s1", &assistant("m2", vec![]))
            .await
            .unwrap();
        for part in every_part_kind() {
            store.append_part("s1", "m2", &part).await.unwrap();
        }

        let loaded = store.load_messages("s1").await.unwrap();
        assert_eq!(loaded, vec![whole, assistant("m2", every_part_kind())]);
    }

    async fn many_messages_and_parts_keep_their_order(db: &TestDb) {
        let store = db.open().await;
        store.create_session(&meta("s1", 1)).await.unwrap();

        // Ids sort opposite to append order, so only the stored order can be right.
        let mut expected = Vec::new();
        for i in 0..60 {
            let id = format!("m{:03}", 999 - i);
            let parts: Vec<Part> = (0..i % 4).map(|j| Part::text(format!("{i}.{j}"))).collect();
            let message = assistant(&id, parts);
            store.append_message("s1", &message).await.unwrap();
            expected.push(message);
        }
        // Parts appended later land after the message's existing parts.
        for j in 0..12 {
            let part = Part::text(format!("late {j}"));
            store.append_part("s1", "m990", &part).await.unwrap();
            expected[9].parts.push(part);
        }

        assert_eq!(store.load_messages("s1").await.unwrap(), expected);
    }

    async fn an_empty_session_loads_no_messages_and_no_state(db: &TestDb) {
        let store = db.open().await;
        store.create_session(&meta("s1", 1)).await.unwrap();
        assert_eq!(store.load_messages("s1").await.unwrap(), vec![]);
        assert_eq!(store.load_state("s1").await.unwrap(), None);
        assert_eq!(store.checkpoints("s1").await.unwrap(), vec![]);
    }

    async fn state_round_trips_and_is_replaced(db: &TestDb) {
        let store = db.open().await;
        store.create_session(&meta("s1", 1)).await.unwrap();

        let first = json!({"turn": 1, "transition": "next_turn", "nested": {"a": [1, 2, null]}});
        store.save_state("s1", &first).await.unwrap();
        assert_eq!(store.load_state("s1").await.unwrap(), Some(first));

        let second = json!({"turn": 2});
        store.save_state("s1", &second).await.unwrap();
        assert_eq!(store.load_state("s1").await.unwrap(), Some(second));
    }

    async fn sessions_list_newest_updated_first_and_appends_bump_them(db: &TestDb) {
        let store = db.open().await;
        // Old timestamps, so that any write "now" is newer than all of them.
        for (id, at) in [("a", 100), ("b", 300), ("c", 200)] {
            store.create_session(&meta(id, at)).await.unwrap();
        }
        let ids =
            |list: Vec<gyre_store::SessionMeta>| list.into_iter().map(|m| m.id).collect::<Vec<_>>();
        assert_eq!(ids(store.list_sessions().await.unwrap()), ["b", "c", "a"]);

        store
            .append_message("a", &Message::user_text("m1", "hi"))
            .await
            .unwrap();
        assert_eq!(ids(store.list_sessions().await.unwrap()), ["a", "b", "c"]);

        store.save_state("c", &json!({})).await.unwrap();
        let list = store.list_sessions().await.unwrap();
        assert_eq!(ids(list.clone()), ["c", "a", "b"]);
        assert!(list[0].updated_at_ms > 300);
        assert_eq!(list[0].created_at_ms, 200, "creation time is never changed");
    }

    async fn get_session_returns_what_was_created(db: &TestDb) {
        let store = db.open().await;
        let created = meta("s1", 42);
        store.create_session(&created).await.unwrap();
        assert_eq!(store.get_session("s1").await.unwrap(), Some(created));
        assert_eq!(store.get_session("nope").await.unwrap(), None);
    }

    async fn a_new_store_on_the_same_database_sees_everything(db: &TestDb) {
        let state = json!({"turn": 3});
        let message = assistant("m1", every_part_kind());
        {
            let store = db.open().await;
            store.create_session(&meta("s1", 5)).await.unwrap();
            store.append_message("s1", &message).await.unwrap();
            store
                .append_part("s1", "m1", &Part::text("tail"))
                .await
                .unwrap();
            store.save_state("s1", &state).await.unwrap();
            store.sync().await.unwrap();
        }
        let reopened = db.open().await;
        let mut expected = message;
        expected.parts.push(Part::text("tail"));
        assert_eq!(reopened.load_messages("s1").await.unwrap(), vec![expected]);
        assert_eq!(reopened.load_state("s1").await.unwrap(), Some(state));
        let sessions = reopened.list_sessions().await.unwrap();
        assert_eq!(sessions.len(), 1);
        assert_eq!(sessions[0].title, "title of s1");
    }

    async fn a_discarded_message_is_gone_with_its_parts_and_later_appends_follow_on(db: &TestDb) {
        let store = db.open().await;
        store.create_session(&meta("s1", 1)).await.unwrap();
        let kept = assistant("m1", vec![Part::text("kept")]);
        store.append_message("s1", &kept).await.unwrap();
        store
            .append_message("s1", &assistant("m2", vec![Part::text("cut off")]))
            .await
            .unwrap();
        store
            .append_part("s1", "m2", &Part::text("more"))
            .await
            .unwrap();

        store.discard_message("s1", "m2").await.unwrap();
        assert_eq!(store.load_messages("s1").await.unwrap(), vec![kept.clone()]);

        // The retried answer may even reuse nothing of the old one.
        let retried = assistant("m3", vec![Part::text("whole")]);
        store.append_message("s1", &retried).await.unwrap();
        let reopened = db.open().await;
        assert_eq!(
            reopened.load_messages("s1").await.unwrap(),
            vec![kept, retried]
        );
    }

    async fn origins_round_trip_and_the_conversation_stores_none(db: &TestDb) {
        use gyre_protocol::{CompactBoundary, CompactTrigger, Origin};
        let store = db.open().await;
        store.create_session(&meta("s1", 1)).await.unwrap();
        let summary =
            Message::user_text("m2", "summary").with_origin(Origin::Summary(CompactBoundary {
                trigger: CompactTrigger::Overflow,
                pre_tokens: 40_000,
                post_tokens: 3_000,
                kept_from: Some("m1".into()),
            }));
        let notice = Message::user_text("m3", "continue").with_origin(Origin::Gyre);
        let plain = assistant("m1", vec![Part::text("hi")]);
        for message in [&plain, &summary, &notice] {
            store.append_message("s1", message).await.unwrap();
        }
        drop(store);
        let store = db.open().await;
        let loaded = store.load_messages("s1").await.unwrap();
        assert_eq!(loaded, vec![plain, summary.clone(), notice]);
        assert_eq!(
            loaded[1].compact_boundary().map(|b| b.trigger),
            Some(CompactTrigger::Overflow)
        );

        // Only messages with an origin beyond the conversation carry a value.
        let stored = db.pairs("SELECT id, origin FROM messages ORDER BY seq").await;
        assert_eq!(stored[0], ("m1".to_string(), None));
        assert!(stored[1].1.as_deref().unwrap().contains("\"summary\""));
        assert_eq!(stored[2].1.as_deref(), Some(r#"{"kind":"gyre"}"#));
    }

    /// A database written by the first schema (no `origin` column, no locks
    /// or checkpoints, no parents) opens, keeps its messages, and takes origins,
    /// checkpoints and locks from then on.
    async fn a_version_one_database_is_upgraded_in_place(db: &TestDb) {
        use gyre_protocol::Origin;
        let store = db.open().await;
        store.create_session(&meta("s1", 1)).await.unwrap();
        store
            .append_message("s1", &Message::user_text("m1", "old"))
            .await
            .unwrap();
        drop(store);
        db.exec(
            "DROP TABLE running_commands; \
             ALTER TABLE sessions DROP COLUMN lock_generation; \
             DROP INDEX sessions_by_parent; ALTER TABLE sessions DROP COLUMN parent_id; \
             DROP TABLE checkpoints; DROP TABLE session_locks; \
             ALTER TABLE messages DROP COLUMN origin; \
             DELETE FROM schema_version WHERE version > 1;",
        )
        .await;
        assert_eq!(db.versions().await, [1]);

        let store = db.open().await;
        assert_eq!(db.versions().await, [1, 2, 3, 4, 5, 6]);
        let notice = Message::user_text("m2", "new").with_origin(Origin::Gyre);
        store.append_message("s1", &notice).await.unwrap();
        assert_eq!(
            store.load_messages("s1").await.unwrap(),
            vec![Message::user_text("m1", "old"), notice]
        );
        assert_eq!(store.checkpoints("s1").await.unwrap(), vec![]);
    }

    /// Several processes (or `gyre serve` hosts) opening a new database at
    /// once create its schema once.
    async fn concurrent_first_opens_apply_each_migration_once(db: &TestDb) {
        let opens = (0..4).map(|_| db.open());
        let stores = futures::future::join_all(opens).await;
        assert_eq!(db.versions().await, [1, 2, 3, 4, 5, 6]);
        stores[0].create_session(&meta("s1", 1)).await.unwrap();
        assert_eq!(stores[3].list_sessions().await.unwrap().len(), 1);
    }
}
