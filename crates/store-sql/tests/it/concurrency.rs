//! Several writers at once: tasks sharing a store, and two stores on one
//! database (as two gyre processes, or hosts, would be); on both backends.

use std::sync::Arc;

use gyre_protocol::{Message, Part};
use gyre_store::SessionStore;

use crate::common::{assistant, both_backends, meta};

const TASKS: usize = 8;
const MESSAGES: usize = 25;

/// Appends MESSAGES messages to `session`, each followed by one appended part.
async fn write_session(store: &dyn SessionStore, session: &str) -> Vec<Message> {
    let mut written = Vec::new();
    for i in 0..MESSAGES {
        let id = format!("{session}-m{i}");
        let mut message = assistant(&id, vec![Part::text(format!("{session} {i}"))]);
        store.append_message(session, &message).await.unwrap();
        let extra = Part::text(format!("{session} {i} extra"));
        store.append_part(session, &id, &extra).await.unwrap();
        message.parts.push(extra);
        written.push(message);
    }
    written
}

both_backends! {
    async fn tasks_appending_to_different_sessions_do_not_interfere(db: &TestDb) {
        let store = db.open().await;
        for t in 0..TASKS {
            store
                .create_session(&meta(&format!("s{t}"), 1))
                .await
                .unwrap();
        }

        let mut handles = Vec::new();
        for t in 0..TASKS {
            let store = Arc::clone(&store);
            handles.push(tokio::spawn(async move {
                let session = format!("s{t}");
                let written = write_session(store.as_ref(), &session).await;
                (session, written)
            }));
        }
        for handle in handles {
            let (session, written) = handle.await.unwrap();
            assert_eq!(store.load_messages(&session).await.unwrap(), written);
        }
        assert_eq!(store.list_sessions().await.unwrap().len(), TASKS);
    }

    async fn two_stores_on_one_database_append_to_the_same_session(db: &TestDb) {
        let first = db.open().await;
        let second = db.open().await;
        first.create_session(&meta("shared", 1)).await.unwrap();

        let mut handles = Vec::new();
        for (name, store) in [("a", Arc::clone(&first)), ("b", Arc::clone(&second))] {
            handles.push(tokio::spawn(async move {
                for i in 0..MESSAGES {
                    let id = format!("{name}{i}");
                    let message = Message::user_text(id.clone(), "x");
                    store.append_message("shared", &message).await.unwrap();
                    store
                        .append_part("shared", &id, &Part::text("y"))
                        .await
                        .unwrap();
                }
            }));
        }
        for handle in handles {
            handle.await.unwrap();
        }

        // Each writer's messages are all there, in the order that writer
        // wrote them, each with both its parts.
        let loaded = first.load_messages("shared").await.unwrap();
        assert_eq!(loaded.len(), 2 * MESSAGES);
        assert!(loaded.iter().all(|m| m.parts.len() == 2));
        for name in ["a", "b"] {
            let ids: Vec<_> = loaded
                .iter()
                .filter(|m| m.id.starts_with(name))
                .map(|m| m.id.clone())
                .collect();
            let expected: Vec<_> = (0..MESSAGES).map(|i| format!("{name}{i}")).collect();
            assert_eq!(ids, expected);
        }
        assert_eq!(second.load_messages("shared").await.unwrap(), loaded);
    }
}
