//! Opening is on the start-up path of every run: it must stay fast.

use std::time::{Duration, Instant};

use gyre_protocol::Message;
use gyre_store::SessionStore;
use gyre_store_sql::SqliteStore;

use crate::common::{meta, temp_db};

/// Generous, for slow CI machines and debug builds; the real numbers are a
/// few milliseconds (printed with `--nocapture`).
const LIMIT: Duration = Duration::from_secs(2);

#[tokio::test]
async fn open_and_first_write_are_fast() {
    let (_dir, path) = temp_db();

    let start = Instant::now();
    let store = SqliteStore::open(&path).await.unwrap();
    store.create_session(&meta("s1", 1)).await.unwrap();
    let fresh = start.elapsed();
    store.close().await.unwrap();

    let start = Instant::now();
    let store = SqliteStore::open(&path).await.unwrap();
    store
        .append_message("s1", &Message::user_text("m1", "hello"))
        .await
        .unwrap();
    let existing = start.elapsed();

    eprintln!("open+first write: new file {fresh:?}, existing file {existing:?}");
    assert!(fresh < LIMIT && existing < LIMIT, "{fresh:?} {existing:?}");
}
