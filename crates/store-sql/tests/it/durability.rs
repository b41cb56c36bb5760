//! A committed write survives the writing process being killed with SIGKILL.
//!
//! The parent test re-runs this test binary with an environment variable that
//! makes `child_writer` act as the child: it writes, says so on stdout, and
//! blocks on stdin until it is killed (or its parent goes away: EOF).

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use gyre_protocol::Part;
use gyre_store::SessionStore;
use gyre_store_sql::SqliteStore;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::common::{assistant, every_part_kind, meta, temp_db};

const CHILD_DB_ENV: &str = "GYRE_STORE_TEST_CHILD_DB";
const WRITTEN: &str = "GYRE-STORE-CHILD-WRITTEN";
const CHILD_DEADLINE: Duration = Duration::from_secs(60);
/// The signal number of SIGKILL on every Unix gyre runs on.
const SIGKILL: i32 = 9;

/// Not a test on its own: the child half of `a_committed_write_survives_sigkill`.
#[test]
fn child_writer() {
    let Some(path) = std::env::var_os(CHILD_DB_ENV).map(PathBuf::from) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Kept alive while waiting, so nothing is checkpointed or closed cleanly.
    let store = runtime.block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        store.create_session(&meta("killed", 1)).await.unwrap();
        store
            .append_message("killed", &assistant("m1", every_part_kind()))
            .await
            .unwrap();
        store
            .append_part("killed", "m1", &Part::text("after the message"))
            .await
            .unwrap();
        store
            .save_state("killed", &json!({"turn": 7}))
            .await
            .unwrap();
        store
    });
    let mut stdout = std::io::stdout();
    writeln!(stdout, "\n{WRITTEN}").unwrap();
    stdout.flush().unwrap();
    let _ = std::io::stdin().read(&mut [0_u8; 1]);
    drop(store);
}

#[tokio::test]
async fn a_committed_write_survives_sigkill() {
    let (_dir, path) = temp_db();
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "durability::child_writer",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DB_ENV, &path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();

    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let saw_written = tokio::time::timeout(CHILD_DEADLINE, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains(WRITTEN) {
                return true;
            }
        }
        false
    })
    .await
    .expect("the child did not report its write in time");
    assert!(saw_written, "the child exited without writing");

    child.start_kill().unwrap();
    let status = tokio::time::timeout(CHILD_DEADLINE, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.signal(), Some(SIGKILL), "{status:?}");

    // The writes were never checkpointed: they live only in the WAL.
    let mut wal = path.clone().into_os_string();
    wal.push("-wal");
    assert!(std::fs::metadata(&wal).unwrap().len() > 0);

    let store = SqliteStore::open(&path).await.unwrap();
    let mut expected = assistant("m1", every_part_kind());
    expected.parts.push(Part::text("after the message"));
    assert_eq!(store.load_messages("killed").await.unwrap(), vec![expected]);
    assert_eq!(
        store.load_state("killed").await.unwrap(),
        Some(json!({"turn": 7}))
    );
}

#[tokio::test]
async fn sync_succeeds_while_another_reader_pins_the_log() {
    use sqlx::{ConnectOptions, Connection, sqlite::SqliteConnectOptions};

    let (_dir, path) = temp_db();
    let store = SqliteStore::open(&path).await.unwrap();
    store.create_session(&meta("s1", 1)).await.unwrap();
    store.sync().await.unwrap();

    // A reader in the middle of a transaction keeps the checkpoint from
    // backfilling what is written after its snapshot, so `sync` must flush
    // the log itself.
    let options = SqliteConnectOptions::new().filename(&path);
    let mut reader = options.connect().await.unwrap();
    let mut snapshot = reader.begin().await.unwrap();
    let before: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM messages")
        .fetch_one(&mut *snapshot)
        .await
        .unwrap();
    assert_eq!(before, 0);

    store
        .append_message("s1", &assistant("m1", vec![Part::text("x")]))
        .await
        .unwrap();
    // What `sync`'s checkpoint will find, seen from a third connection.
    let mut probe = options.connect().await.unwrap();
    let (_, wal_frames, checkpointed): (i64, i64, i64) =
        sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
            .fetch_one(&mut probe)
            .await
            .unwrap();
    probe.close().await.unwrap();
    assert!(
        checkpointed < wal_frames,
        "the reader must pin the log: {checkpointed} of {wal_frames} frames"
    );

    store.sync().await.unwrap();

    snapshot.rollback().await.unwrap();
    reader.close().await.unwrap();
    assert_eq!(store.load_messages("s1").await.unwrap().len(), 1);
}
