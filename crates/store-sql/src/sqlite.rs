//! The SQLite backend: one database file, one connection, the shared
//! engine's SQL.
//!
//! Invariants:
//! - Every call is one committed transaction (see [`crate::engine`]); write
//!   transactions are `BEGIN IMMEDIATE`.
//! - Errors never panic; a damaged or foreign file is reported as
//!   [`StoreError::Corrupt`] naming the file, found by an integrity check
//!   (`PRAGMA quick_check`) when the file is opened, before anything is
//!   written into it. Its cost is about a millisecond per MB of database,
//!   on every open of a file.
//! - A file this user cannot write is opened read-only (see `open`), so
//!   `sessions list` and `export` work on a read-only `GYRE_HOME`; a full
//!   disk and a read-only place are errors that say what to do.
//!
//! Durability trade-off: the journal is a WAL with `synchronous=NORMAL`. A
//! commit is a `write()` into the WAL without an fsync, so a committed write
//! survives a killed process (the OS holds the data) but may be lost on power
//! failure or an OS crash; the database itself is never corrupted
//! (<https://www.sqlite.org/pragma.html#pragma_synchronous>). Commits stay
//! cheap (no fsync per part); [`SessionStore::sync`], which the loop calls at
//! turn boundaries, makes everything written so far survive power loss too
//! (how: see the `sync` module).
//!
//! Memory: one connection with a 1 MiB page cache (`cache_size=-1024`) and a
//! small statement cache; gyre as a whole must stay within ~15 MB RSS.
//! Concurrency within the process is a `tokio::sync::Mutex` around the
//! connection: SQLite serialises writers anyway, and the store's statements
//! take microseconds. sqlx runs the connection on one worker thread of its
//! own; nothing else runs in the background.
//!
//! [`SessionStore::sync`]: gyre_store::SessionStore::sync

mod open;
mod schema;
mod sync;

use std::path::{Path, PathBuf};
use std::time::Duration;

use gyre_store::StoreError;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection, Sqlite, SqliteConnection};
use tokio::sync::{Mutex, MutexGuard};

use crate::engine::Backend;
use crate::trouble;

/// Another process holding the write lock is waited for this long.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Negative means KiB: a 1 MiB page cache.
const CACHE_SIZE: &str = "-1024";
/// The store runs about forty distinct statements; more would only hold
/// memory.
const STATEMENT_CACHE: usize = 48;

/// A [`SessionStore`](gyre_store::SessionStore) in one SQLite file.
pub struct SqliteStore {
    /// The file, or `:memory:`.
    path: PathBuf,
    /// The file as errors name it.
    name: String,
    storage: Storage,
    conn: Mutex<SqliteConnection>,
}

/// Where the database lives, which decides what `sync` must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Storage {
    File,
    /// A file this user cannot write, opened for reading only.
    ReadOnlyFile,
    Memory,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating it and its directory if needed) the database at `path`
    /// and brings its schema up to date. A database this user cannot write
    /// (a read-only directory or file) is opened for reading only: reads
    /// work, and a write fails with [`StoreError::ReadOnly`] saying what to
    /// do. A damaged file fails its integrity check here, before anything
    /// is written into it.
    pub async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(parent) = parent {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|source| match source.kind() {
                    std::io::ErrorKind::PermissionDenied
                    | std::io::ErrorKind::ReadOnlyFilesystem => {
                        StoreError::ReadOnly {
                            database: path.display().to_string(),
                            // The directory that refused: the nearest one
                            // that exists.
                            dir: parent
                                .ancestors()
                                .find(|dir| dir.is_dir())
                                .unwrap_or(parent)
                                .to_path_buf(),
                            reason: source.to_string(),
                        }
                    }
                    _ => StoreError::CreateDir {
                        path: parent.to_path_buf(),
                        source,
                    },
                })?;
        }
        let dir = parent.unwrap_or(Path::new("."));
        if path.exists() && !(trouble::writable(dir) && trouble::writable(path)) {
            return open::read_only(path).await;
        }
        let options = base_options()
            .filename(sqlite_filename(path))
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal);
        open::connect(path.to_path_buf(), Storage::File, options).await
    }

    /// A private database in memory, gone when the store is dropped.
    pub async fn open_in_memory() -> Result<SqliteStore, StoreError> {
        // The default filename is `:memory:`; one connection means one database.
        open::connect(PathBuf::from(":memory:"), Storage::Memory, base_options()).await
    }

    /// The database file this store writes (`:memory:` for an in-memory store).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the store was opened for reading only (see [`SqliteStore::open`]).
    pub fn is_read_only(&self) -> bool {
        self.storage == Storage::ReadOnlyFile
    }

    /// Closes the connection and waits for it: the last connection to a file
    /// checkpoints the WAL into the database and removes it. Dropping the
    /// store instead closes it in the background.
    pub async fn close(self) -> Result<(), StoreError> {
        let database = self.name;
        self.conn
            .into_inner()
            .close()
            .await
            .map_err(|source| crate::error::query(&database, "close the database", source))
    }
}

impl Backend for SqliteStore {
    type Db = Sqlite;
    type Conn<'a> = MutexGuard<'a, SqliteConnection>;

    async fn conn(&self) -> Result<MutexGuard<'_, SqliteConnection>, StoreError> {
        Ok(self.conn.lock().await)
    }

    fn name(&self) -> &str {
        &self.name
    }

    async fn flush(&self) -> Result<(), StoreError> {
        self.flush_to_disk().await
    }

    fn free_space(&self) -> String {
        trouble::free_space(&self.path)
    }

    fn io_is_full(&self) -> bool {
        self.storage != Storage::Memory && trouble::nearly_full(&self.path)
    }

    fn write_target(&self) -> PathBuf {
        write_target(&self.path)
    }
}

/// What must be made writable for `path` to be written: the file when its
/// directory is writable, else the directory.
fn write_target(path: &Path) -> PathBuf {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if trouble::writable(dir) && path.exists() {
        path.to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

/// Opens a connection, waiting while another process sets up the same new
/// file: switching a fresh database to WAL takes an exclusive lock, and
/// SQLite answers a second opener `SQLITE_BUSY` at once there (without its
/// busy handler). Bounded: about a second of tries.
async fn connect_when_free(
    options: &SqliteConnectOptions,
) -> Result<sqlx::SqliteConnection, sqlx::Error> {
    const TRIES: u32 = 50;
    let mut tries = 0;
    loop {
        match options.connect().await {
            Err(error) if tries < TRIES && is_busy(&error) => {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            other => return other,
        }
    }
}

fn is_busy(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|e| e.code())
        .is_some_and(|code| code == "5" || code == "517")
}

/// Options every connection shares, file or memory.
fn base_options() -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .busy_timeout(BUSY_TIMEOUT)
        .foreign_keys(true)
        .pragma("cache_size", CACHE_SIZE)
        .statement_cache_capacity(STATEMENT_CACHE)
        // Logging every statement costs more than the statements themselves.
        .disable_statement_logging()
}

/// sqlx opens files with SQLITE_OPEN_URI, so a relative path that happens to
/// start with `file:` would be read as a URI; `./` keeps it a path.
fn sqlite_filename(path: &Path) -> PathBuf {
    if path.is_relative() && path.as_os_str().as_encoded_bytes().starts_with(b"file:") {
        Path::new(".").join(path)
    } else {
        path.to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gyre_protocol::Message;
    use gyre_store::{SessionMeta, SessionStore};

    #[test]
    fn relative_paths_are_never_read_as_uris() {
        assert_eq!(
            sqlite_filename(Path::new("file:x.db")),
            Path::new("./file:x.db")
        );
        assert_eq!(sqlite_filename(Path::new("/a/b.db")), Path::new("/a/b.db"));
    }

    #[tokio::test]
    async fn in_memory_store_works_and_sync_is_a_no_op() {
        let store = SqliteStore::open_in_memory().await.unwrap();
        let meta = SessionMeta {
            id: "s".into(),
            cwd: "/".into(),
            provider: "p".into(),
            model: "m".into(),
            title: "t".into(),
            created_at_ms: 1,
            updated_at_ms: 1,
            parent_id: None,
        };
        store.create_session(&meta).await.unwrap();
        store
            .append_message("s", &Message::user_text("m1", "hi"))
            .await
            .unwrap();
        store.sync().await.unwrap();
        let messages = store.load_messages("s").await.unwrap();
        assert_eq!(messages, vec![Message::user_text("m1", "hi")]);
    }
}
