//! Bad calls and bad databases give clear errors naming the database,
//! never panics.

use gyre_protocol::{Message, Part};
use gyre_store::{Location, SessionStore, StoreError};
use gyre_store_sql::{PgStore, SqliteStore, parse_location};
use serde_json::json;

use crate::common::{assistant, both_backends, meta, open, temp_db};

both_backends! {
    async fn append_part_to_a_missing_message_is_refused_and_writes_nothing(db: &TestDb) {
        let store = db.open().await;
        store.create_session(&meta("s1", 1)).await.unwrap();
        store
            .append_message("s1", &assistant("m1", vec![]))
            .await
            .unwrap();

        let err = store
            .append_part("s1", "m2", &Part::text("x"))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::MessageNotFound { session_id, message_id }
                if session_id == "s1" && message_id == "m2"),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "message m2 does not exist in session s1");

        // The message id exists, but in another session.
        store.create_session(&meta("s2", 1)).await.unwrap();
        let err = store
            .append_part("s2", "m1", &Part::text("x"))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::MessageNotFound { .. }), "{err:?}");

        assert_eq!(
            store.load_messages("s1").await.unwrap(),
            vec![assistant("m1", vec![])]
        );
        assert_eq!(store.load_messages("s2").await.unwrap(), vec![]);
    }

    async fn calls_on_a_missing_session_say_so(db: &TestDb) {
        let store = db.open().await;
        let is_missing = |err: StoreError| match err {
            StoreError::SessionNotFound { session_id, .. } => session_id == "ghost",
            _ => false,
        };
        let message = Message::user_text("m1", "hi");
        assert!(is_missing(
            store.append_message("ghost", &message).await.unwrap_err()
        ));
        assert!(is_missing(
            store.save_state("ghost", &json!({})).await.unwrap_err()
        ));
        assert!(is_missing(store.load_state("ghost").await.unwrap_err()));
        assert!(is_missing(store.load_messages("ghost").await.unwrap_err()));
        assert!(is_missing(store.checkpoints("ghost").await.unwrap_err()));
        assert!(is_missing(store.export_session("ghost").await.unwrap_err()));
        let err = store.load_state("ghost").await.unwrap_err();
        assert!(err.to_string().contains(&db.location().to_string()), "{err}");
        assert!(store.list_sessions().await.unwrap().is_empty());
    }

    async fn duplicates_are_refused_and_leave_the_first_intact(db: &TestDb) {
        let store = db.open().await;
        store.create_session(&meta("s1", 1)).await.unwrap();
        let err = store.create_session(&meta("s1", 2)).await.unwrap_err();
        assert!(matches!(err, StoreError::SessionExists { .. }), "{err:?}");
        assert!(
            err.to_string().contains(&db.location().to_string()),
            "{err}"
        );

        let first = assistant("m1", vec![Part::text("first")]);
        store.append_message("s1", &first).await.unwrap();
        let err = store
            .append_message("s1", &assistant("m1", vec![Part::text("second")]))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::MessageExists { .. }), "{err:?}");

        let kept = store.get_session("s1").await.unwrap().unwrap();
        assert_eq!(kept.created_at_ms, 1, "the second create changed nothing");
        assert_eq!(store.load_messages("s1").await.unwrap(), vec![first]);
    }

    async fn a_database_from_a_newer_gyre_is_left_alone(db: &TestDb) {
        drop(db.open().await);
        db.exec("INSERT INTO schema_version (version, applied_at_ms) VALUES (999, 0)")
            .await;

        let Err(err) = gyre_store_sql::open(db.location()).await else {
            panic!("a newer schema was opened");
        };
        assert!(
            matches!(
                err,
                StoreError::NewerSchema {
                    found: 999,
                    supported: 6,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("upgrade gyre"), "{err}");
        assert!(err.to_string().contains(&db.location().to_string()), "{err}");
        assert_eq!(db.versions().await, [1, 2, 3, 4, 5, 6, 999], "nothing was touched");
    }
}

/// An unreachable server fails at once, naming the database without its
/// password.
#[tokio::test]
async fn an_unreachable_server_is_named_without_its_password() {
    // Port 1 on loopback: refused at once.
    let url = "postgres://gyre:sekrit-pw@127.0.0.1:1/nowhere";
    let started = std::time::Instant::now();
    let err = PgStore::connect(url).await.unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("postgres://gyre@127.0.0.1:1/nowhere"),
        "{text}"
    );
    assert!(!text.contains("sekrit"), "{text}");
    assert!(!format!("{err:?}").contains("sekrit"));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));

    let location: Location = parse_location(url).unwrap();
    let Err(err) = gyre_store_sql::open(&location).await else {
        panic!("opened a database on port 1");
    };
    assert!(!err.to_string().contains("sekrit"), "{err}");
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_reported_as_corrupt_by_name() {
    let (dir, _) = temp_db();
    let path = dir.path().join("garbage.db");
    std::fs::write(&path, vec![0x5a_u8; 8192]).unwrap();

    let err = SqliteStore::open(&path).await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("corrupt or not a SQLite database"), "{text}");
}

#[tokio::test]
async fn a_damaged_database_is_reported_as_corrupt_by_name() {
    let (_dir, path) = temp_db();
    {
        let store = open(&path).await;
        store.create_session(&meta("s1", 1)).await.unwrap();
        let parts = (0..200)
            .map(|i| Part::text(format!("part {i} {}", "x".repeat(100))))
            .collect();
        store
            .append_message("s1", &assistant("m1", parts))
            .await
            .unwrap();
        store.close().await.unwrap();
    }
    // Closing the last connection checkpointed everything into the file; keep
    // its header page and overwrite the pages after it.
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 3 * 4096, "the fixture spans several pages");
    for byte in &mut bytes[4096..] {
        *byte = 0xa5;
    }
    std::fs::write(&path, bytes).unwrap();

    let err = match SqliteStore::open(&path).await {
        Err(err) => err,
        Ok(store) => store.load_messages("s1").await.unwrap_err(),
    };
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[tokio::test]
async fn a_path_that_cannot_be_opened_names_the_file() {
    let (dir, _) = temp_db();
    // A directory where the database file should be.
    let path = dir.path().join("a-directory.db");
    std::fs::create_dir(&path).unwrap();

    let err = SqliteStore::open(&path).await.unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[tokio::test]
async fn a_parent_that_is_a_file_is_reported() {
    let (dir, _) = temp_db();
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, b"not a directory").unwrap();

    let err = SqliteStore::open(&blocker.join("sessions.db"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::CreateDir { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&blocker.display().to_string()),
        "{err}"
    );
}
