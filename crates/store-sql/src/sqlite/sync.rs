//! Making what was written durable: the body of [`SessionStore::sync`].
//!
//! With `synchronous=NORMAL` a commit reaches the WAL without an fsync. SQLite
//! fsyncs the WAL before a checkpoint backfills any of it, and the database
//! file after a complete checkpoint, so a `PASSIVE` checkpoint that backfills
//! every frame leaves everything on disk. When it cannot (another connection
//! reads an older snapshot, or another checkpoint runs), the WAL file and its
//! directory are fsynced directly, on a blocking thread.
//!
//! [`SessionStore::sync`]: gyre_store::SessionStore::sync

use std::path::Path;

use super::{SqliteStore, Storage};
use gyre_store::StoreError;

use crate::engine::Backend;

impl SqliteStore {
    pub(super) async fn flush_to_disk(&self) -> Result<(), StoreError> {
        // Nothing of a read-only store's is ever unsynced.
        if matches!(self.storage, Storage::Memory | Storage::ReadOnlyFile) {
            return Ok(());
        }
        let mut conn = self.conn.lock().await;
        let (busy, wal_frames, checkpointed): (i64, i64, i64) =
            sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
                .fetch_one(&mut *conn)
                .await
                .map_err(|e| self.fail("checkpoint the write-ahead log", e))?;
        drop(conn);
        // A frame is only ever backfilled after the WAL was fsynced, so a fully
        // backfilled log is on disk; otherwise sync the log ourselves.
        if busy == 0 && checkpointed == wal_frames {
            return Ok(());
        }
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || fsync_wal(&path))
            .await
            .map_err(|e| StoreError::Sync {
                database: self.name.clone(),
                source: std::io::Error::other(e),
            })?
            .map_err(|source| StoreError::Sync {
                database: self.name.clone(),
                source,
            })
    }
}

/// Flushes the WAL file (and its directory entry) of the database at `db`.
fn fsync_wal(db: &Path) -> std::io::Result<()> {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    match std::fs::File::open(&wal) {
        Ok(file) => file.sync_all()?,
        // No WAL means every commit is already in the database file.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    match db.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => std::fs::File::open(dir)?.sync_all(),
        None => std::fs::File::open(".")?.sync_all(),
    }
}
