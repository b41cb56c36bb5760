//! Subagent sessions: the parent link through every write and read, the
//! children of a session, deletes that leave children alone, JSONL, and a
//! database from before the link upgraded in place; on both backends.

use gyre_protocol::Message;
use gyre_store::{SessionMeta, SessionStore, jsonl};

use crate::common::{both_backends, meta};

/// A session spawned by `parent`, created at `created_at_ms`.
fn child(id: &str, parent: &str, created_at_ms: i64) -> SessionMeta {
    SessionMeta {
        parent_id: Some(parent.to_owned()),
        created_at_ms,
        ..meta(id, created_at_ms)
    }
}

fn ids_of(sessions: &[SessionMeta]) -> Vec<&str> {
    sessions.iter().map(|m| m.id.as_str()).collect()
}

/// `p` with children `kid-b` (older) and `kid-a`, `kid-b`'s child `grand`,
/// and an unrelated `alone`. The children's ids sort against their age, so
/// an order by id would show.
async fn family(store: &dyn SessionStore) {
    store.create_session(&meta("p", 1)).await.unwrap();
    store
        .create_session(&child("kid-b", "p", 10))
        .await
        .unwrap();
    store
        .create_session(&child("kid-a", "p", 20))
        .await
        .unwrap();
    store
        .create_session(&child("grand", "kid-b", 30))
        .await
        .unwrap();
    store.create_session(&meta("alone", 40)).await.unwrap();
}

async fn export_text(store: &dyn SessionStore, id: &str) -> String {
    let mut out = Vec::new();
    jsonl::export(store, id, &mut out, &|_| {}).await.unwrap();
    String::from_utf8(out).unwrap()
}

both_backends! {
    async fn parent_ids_come_back_from_every_read(db: &TestDb) {
        let store = db.open().await;
        family(store.as_ref()).await;

        assert_eq!(store.get_session("kid-a").await.unwrap(), Some(child("kid-a", "p", 20)));
        assert_eq!(store.get_session("p").await.unwrap().unwrap().parent_id, None);
        let parents: Vec<(String, Option<String>)> = store
            .list_sessions()
            .await
            .unwrap()
            .into_iter()
            .map(|m| (m.id, m.parent_id))
            .collect();
        let some = |id: &str| Some(id.to_owned());
        assert_eq!(
            parents,
            [
                ("alone".to_owned(), None),
                ("grand".to_owned(), some("kid-b")),
                ("kid-a".to_owned(), some("p")),
                ("kid-b".to_owned(), some("p")),
                ("p".to_owned(), None),
            ]
        );

        // Oldest first, only direct children.
        let children = store.list_children("p").await.unwrap();
        assert_eq!(children, [child("kid-b", "p", 10), child("kid-a", "p", 20)]);
        assert_eq!(ids_of(&store.list_children("kid-b").await.unwrap()), ["grand"]);
        assert!(store.list_children("alone").await.unwrap().is_empty());
        assert!(store.list_children("no-such-session").await.unwrap().is_empty());

        // A new store (another process) reads the same.
        let again = db.open().await;
        assert_eq!(again.list_children("p").await.unwrap(), children);
    }

    async fn a_fork_keeps_the_parent_it_is_given(db: &TestDb) {
        let store = db.open().await;
        family(store.as_ref()).await;
        store
            .append_message("kid-a", &Message::user_text("m1", "subtask"))
            .await
            .unwrap();

        // A subagent's session forked as another child of the same parent …
        let sibling = child("kid-c", "p", 50);
        store.fork_session("kid-a", &sibling, None).await.unwrap();
        assert_eq!(store.get_session("kid-c").await.unwrap(), Some(sibling));
        assert_eq!(ids_of(&store.list_children("p").await.unwrap()), ["kid-b", "kid-a", "kid-c"]);
        // … and as a session of its own, though its source had a parent.
        store.fork_session("kid-a", &meta("own", 60), None).await.unwrap();
        assert_eq!(store.get_session("own").await.unwrap().unwrap().parent_id, None);
        assert_eq!(
            store.load_messages("own").await.unwrap(),
            [Message::user_text("m1", "subtask")]
        );
        // And a top-level session forked into someone's child.
        store.fork_session("alone", &child("adopted", "kid-b", 70), None).await.unwrap();
        assert_eq!(ids_of(&store.list_children("kid-b").await.unwrap()), ["grand", "adopted"]);
    }

    /// The store never follows the link: deleting a parent leaves its
    /// children, still naming it.
    async fn deleting_a_parent_leaves_its_children(db: &TestDb) {
        let store = db.open().await;
        family(store.as_ref()).await;
        assert!(store.delete_session("p").await.unwrap());
        assert_eq!(store.get_session("p").await.unwrap(), None);
        assert_eq!(ids_of(&store.list_children("p").await.unwrap()), ["kid-b", "kid-a"]);
        assert_eq!(store.get_session("kid-a").await.unwrap(), Some(child("kid-a", "p", 20)));
        assert_eq!(ids_of(&store.list_children("kid-b").await.unwrap()), ["grand"]);
    }

    async fn exports_carry_the_parent_and_older_exports_import(db: &TestDb) {
        let store = db.open().await;
        family(store.as_ref()).await;
        store
            .append_message("kid-a", &Message::user_text("m1", "subtask"))
            .await
            .unwrap();
        let record = store.export_session("kid-a").await.unwrap();
        assert_eq!(record.meta.parent_id.as_deref(), Some("p"));
        let text = export_text(store.as_ref(), "kid-a").await;
        let first = text.lines().next().unwrap();
        assert!(first.contains(r#""parent_id":"p""#), "{first}");
        // A session without a parent writes no field: the lines older gyres wrote.
        let top = export_text(store.as_ref(), "alone").await;
        assert!(!top.contains("parent_id"), "{top}");

        // Into an empty database, as another machine would: the parent need
        // not be there.
        let target = TestDb::new(db.backend).await;
        let other = target.open().await;
        let imported = jsonl::import(other.as_ref(), text.as_bytes()).await.unwrap();
        assert_eq!(imported, record.meta);
        assert_eq!(other.export_session("kid-a").await.unwrap(), record);
        assert_eq!(ids_of(&other.list_children("p").await.unwrap()), ["kid-a"]);
        assert_eq!(export_text(other.as_ref(), "kid-a").await, text, "byte for byte");
        // An export without the field imports as a session without a parent.
        jsonl::import(other.as_ref(), top.as_bytes()).await.unwrap();
        assert_eq!(other.get_session("alone").await.unwrap(), Some(meta("alone", 40)));
        target.finish().await;

        // And back into the same database once the original is gone.
        store.delete_session("kid-a").await.unwrap();
        assert_eq!(ids_of(&store.list_children("p").await.unwrap()), ["kid-b"]);
        jsonl::import(store.as_ref(), text.as_bytes()).await.unwrap();
        assert_eq!(store.export_session("kid-a").await.unwrap(), record);
        assert_eq!(ids_of(&store.list_children("p").await.unwrap()), ["kid-b", "kid-a"]);
    }

    /// A database written by schema version 3 (no `parent_id` column) opens,
    /// reads its sessions as having no parent, and takes children from then on.
    async fn a_version_three_database_is_upgraded_in_place(db: &TestDb) {
        let store = db.open().await;
        store.create_session(&meta("old", 1)).await.unwrap();
        store
            .append_message("old", &Message::user_text("m1", "before"))
            .await
            .unwrap();
        let before = store.get_session("old").await.unwrap().unwrap();
        drop(store);
        db.exec(
            "DROP TABLE running_commands; \
             ALTER TABLE sessions DROP COLUMN lock_generation; \
             ALTER TABLE session_locks DROP COLUMN generation; \
             DROP INDEX sessions_by_parent; \
             ALTER TABLE sessions DROP COLUMN parent_id; \
             DELETE FROM schema_version WHERE version > 3;",
        )
        .await;
        assert_eq!(db.versions().await, [1, 2, 3]);

        let store = db.open().await;
        assert_eq!(db.versions().await, [1, 2, 3, 4, 5, 6]);
        assert_eq!(before.parent_id, None);
        assert_eq!(store.get_session("old").await.unwrap(), Some(before.clone()));
        assert_eq!(store.list_sessions().await.unwrap(), [before]);
        assert_eq!(
            store.load_messages("old").await.unwrap(),
            [Message::user_text("m1", "before")]
        );
        store.create_session(&child("kid", "old", 2)).await.unwrap();
        assert_eq!(store.list_children("old").await.unwrap(), [child("kid", "old", 2)]);
    }
}
