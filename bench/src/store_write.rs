//! Writing a history into a session store the way gyre's loop records it,
//! and what a SQLite store's files hold on disk.
//!
//! Invariants:
//! - A message is appended with its first part (`append_message`), each
//!   further part with `append_part`, as the loop records a streamed answer
//!   part by part (core's `run::record`).
//! - A turn boundary follows every user message holding a tool result, and
//!   the last message: there the loop's state is saved (`save_state`, the
//!   JSON of a default `QueryState`) and the store synced (`sync`), as
//!   core's turn checkpoint does. A prompt is synced with the turn after it.
//! - The only clock read here is around `sync` (its share of a turn);
//!   callers time the rest.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use gyre_protocol::Message;
use gyre_store::{SessionStore, StoreError};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection};

/// What one write did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Written {
    /// `append_message` and `append_part` calls.
    pub appends: usize,
    /// Turn boundaries (state saved, store synced).
    pub turns: usize,
    /// The time spent in `sync`, all turns together.
    pub sync: Duration,
}

/// The loop state as core saves it at a turn boundary.
pub fn loop_state() -> anyhow::Result<serde_json::Value> {
    serde_json::to_value(gyre_core::QueryState::default()).context("cannot serialise the state")
}

/// Appends `messages` to the session as the loop does, with a sync at each
/// turn boundary.
pub async fn like_the_loop(
    store: &dyn SessionStore,
    session_id: &str,
    messages: &[Message],
    state: &serde_json::Value,
) -> Result<Written, StoreError> {
    let mut written = Written::default();
    for (i, message) in messages.iter().enumerate() {
        let mut parts = message.parts.iter();
        let first = Message::new(
            message.id.clone(),
            message.role,
            parts.next().cloned().into_iter().collect(),
        )
        .with_origin(message.origin.clone());
        store.append_message(session_id, &first).await?;
        written.appends += 1;
        for part in parts {
            store.append_part(session_id, &message.id, part).await?;
            written.appends += 1;
        }
        let boundary = i + 1 == messages.len() || message.tool_results().next().is_some();
        if boundary {
            store.save_state(session_id, state).await?;
            let start = Instant::now();
            store.sync().await?;
            written.sync += start.elapsed();
            written.turns += 1;
        }
    }
    Ok(written)
}

/// The sizes of a SQLite database's files; a missing WAL or SHM is 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskBytes {
    pub db: u64,
    pub wal: u64,
    pub shm: u64,
}

impl DiskBytes {
    pub fn of(db: &Path) -> anyhow::Result<DiskBytes> {
        Ok(DiskBytes {
            db: size(db)?,
            wal: size(&sibling(db, "-wal"))?,
            shm: size(&sibling(db, "-shm"))?,
        })
    }

    pub fn total(self) -> u64 {
        self.db + self.wal + self.shm
    }
}

fn sibling(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn size(path: &Path) -> anyhow::Result<u64> {
    match std::fs::metadata(path) {
        Ok(meta) => Ok(meta.len()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e).with_context(|| format!("cannot stat {}", path.display())),
    }
}

/// `PRAGMA wal_checkpoint(TRUNCATE)` from a second connection, while the
/// store keeps its own open (so the WAL file stays, emptied): fails unless
/// every frame was backfilled.
pub async fn checkpoint_truncate(db: &Path) -> anyhow::Result<()> {
    let mut conn = SqliteConnectOptions::new()
        .filename(db)
        .disable_statement_logging()
        .connect()
        .await
        .with_context(|| format!("cannot open {}", db.display()))?;
    let (busy, frames, backfilled): (i64, i64, i64) =
        sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
            .fetch_one(&mut conn)
            .await
            .context("wal_checkpoint(TRUNCATE) failed")?;
    conn.close().await.context("cannot close the connection")?;
    anyhow::ensure!(
        busy == 0 && frames == backfilled,
        "wal_checkpoint(TRUNCATE) left work: busy {busy}, {backfilled} of {frames} frames"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use gyre_store_sql::SqliteStore;

    use super::*;
    use crate::history;
    use crate::resume_rss::session_meta;

    #[tokio::test]
    async fn writes_part_by_part_with_a_sync_per_turn() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("s.db");
        let store = SqliteStore::open(&db).await.expect("open");
        let meta = session_meta(dir.path());
        store.create_session(&meta).await.expect("create");
        let messages = history::rounds(5, 3);
        let state = loop_state().expect("state");
        let written = like_the_loop(&store, &meta.id, &messages, &state)
            .await
            .expect("write");
        // The prompt, then 5 × (text, call; result).
        assert_eq!((written.appends, written.turns), (16, 5));
        assert_eq!(store.load_messages(&meta.id).await.expect("load"), messages);
        assert_eq!(
            store.load_state(&meta.id).await.expect("state"),
            Some(state)
        );

        checkpoint_truncate(&db).await.expect("checkpoint");
        let bytes = DiskBytes::of(&db).expect("sizes");
        assert_eq!(bytes.wal, 0);
        assert!(
            bytes.db > history::text_bytes(&messages) as u64,
            "{bytes:?}"
        );
        store.close().await.expect("close");
        assert_eq!(DiskBytes::of(&db).expect("sizes").shm, 0);
    }
}
