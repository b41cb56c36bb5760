//! The SQLite backend: one database file, one connection.
//!
//! Invariants:
//! - Every call is one committed transaction: single statements run in
//!   autocommit, multi-statement writes in `BEGIN IMMEDIATE` (taking the write
//!   lock up front, so a second process waits on `busy_timeout` instead of
//!   failing a lock upgrade half-way).
//! - Messages are numbered per session (`seq`) and parts per message (`idx`) at
//!   insert time, inside the writing transaction, so loads come back in append
//!   order whatever the ids.
//! - Every append and state save bumps `sessions.updated_at_ms`, which orders
//!   [`SessionStore::list_sessions`].
//! - Errors never panic; a damaged or foreign file is reported as
//!   [`StoreError::Corrupt`] naming the file.
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

mod read;
mod schema;
mod sync;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use gyre_protocol::{Message, Origin, Part, Role};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection, SqliteConnection};
use tokio::sync::Mutex;

use crate::error::{is_corruption, is_unique_violation};
use crate::{SessionMeta, SessionStore, StoreError};

use schema::MigrateError;

/// Another process holding the write lock is waited for this long.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Negative means KiB: a 1 MiB page cache.
const CACHE_SIZE: &str = "-1024";
/// The store runs a dozen distinct statements; more would only hold memory.
const STATEMENT_CACHE: usize = 24;

/// A [`SessionStore`] in one SQLite file.
pub struct SqliteStore {
    /// The file, or `:memory:`; named in every error.
    path: PathBuf,
    storage: Storage,
    conn: Mutex<SqliteConnection>,
}

/// Where the database lives, which decides what `sync` must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Storage {
    File,
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
    /// and brings its schema up to date.
    pub async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|source| StoreError::CreateDir {
                    path: parent.to_path_buf(),
                    source,
                })?;
        }
        let options = base_options()
            .filename(sqlite_filename(path))
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal);
        Self::connect(path.to_path_buf(), Storage::File, options).await
    }

    /// A private database in memory, gone when the store is dropped.
    pub async fn open_in_memory() -> Result<SqliteStore, StoreError> {
        // The default filename is `:memory:`; one connection means one database.
        Self::connect(PathBuf::from(":memory:"), Storage::Memory, base_options()).await
    }

    /// The database file this store writes (`:memory:` for an in-memory store).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Closes the connection and waits for it: the last connection to a file
    /// checkpoints the WAL into the database and removes it. Dropping the
    /// store instead closes it in the background.
    pub async fn close(self) -> Result<(), StoreError> {
        let path = self.path;
        self.conn
            .into_inner()
            .close()
            .await
            .map_err(|source| StoreError::Query {
                path,
                action: "close the database",
                source,
            })
    }

    async fn connect(
        path: PathBuf,
        storage: Storage,
        options: SqliteConnectOptions,
    ) -> Result<SqliteStore, StoreError> {
        let mut conn = match options.connect().await {
            Ok(conn) => conn,
            Err(source) if is_corruption(&source) => {
                return Err(StoreError::Corrupt { path, source });
            }
            Err(source) => return Err(StoreError::Open { path, source }),
        };
        match schema::migrate(&mut conn, now_ms()).await {
            Ok(()) => {}
            Err(MigrateError::Newer { found }) => {
                return Err(StoreError::NewerSchema {
                    path,
                    found,
                    supported: schema::LATEST_VERSION,
                });
            }
            Err(MigrateError::Sql(source)) if is_corruption(&source) => {
                return Err(StoreError::Corrupt { path, source });
            }
            Err(MigrateError::Sql(source)) => return Err(StoreError::Migrate { path, source }),
        }
        Ok(SqliteStore {
            path,
            storage,
            conn: Mutex::new(conn),
        })
    }

    fn query_error(&self, action: &'static str, source: sqlx::Error) -> StoreError {
        if is_corruption(&source) {
            StoreError::Corrupt {
                path: self.path.clone(),
                source,
            }
        } else {
            StoreError::Query {
                path: self.path.clone(),
                action,
                source,
            }
        }
    }

    fn session_not_found(&self, session_id: &str) -> StoreError {
        StoreError::SessionNotFound {
            path: self.path.clone(),
            session_id: session_id.to_owned(),
        }
    }

    fn decode_error(&self, session_id: &str, what: &'static str, reason: String) -> StoreError {
        StoreError::Decode {
            path: self.path.clone(),
            session_id: session_id.to_owned(),
            what,
            reason,
        }
    }

    async fn insert_session(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        const ACTION: &str = "create a session";
        let mut conn = self.conn.lock().await;
        let inserted = sqlx::query(
            "INSERT INTO sessions \
             (id, cwd, provider, model, title, created_at_ms, updated_at_ms, state) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, NULL)",
        )
        .bind(&meta.id)
        .bind(&meta.cwd)
        .bind(&meta.provider)
        .bind(&meta.model)
        .bind(&meta.title)
        .bind(meta.created_at_ms)
        .bind(meta.updated_at_ms)
        .execute(&mut *conn)
        .await;
        match inserted {
            Ok(_) => Ok(()),
            Err(e) if is_unique_violation(&e) => Err(StoreError::SessionExists {
                path: self.path.clone(),
                session_id: meta.id.clone(),
            }),
            Err(e) => Err(self.query_error(ACTION, e)),
        }
    }

    async fn insert_message(&self, session_id: &str, message: &Message) -> Result<(), StoreError> {
        const ACTION: &str = "append a message";
        // Encode before taking the lock: no CPU work while others wait.
        let parts = message
            .parts
            .iter()
            .map(encode_part)
            .collect::<Result<Vec<_>, _>>()?;
        let origin = encode_origin(&message.origin)?;
        let now = now_ms();
        let mut conn = self.conn.lock().await;
        let mut tx = conn
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| self.query_error(ACTION, e))?;
        if !touch_session(&mut tx, session_id, now)
            .await
            .map_err(|e| self.query_error(ACTION, e))?
        {
            return Err(self.session_not_found(session_id));
        }
        let inserted = sqlx::query(
            "INSERT INTO messages (session_id, seq, id, role, created_at_ms, origin) \
             SELECT $1, COALESCE(MAX(seq) + 1, 0), $2, $3, $4, $5 \
             FROM messages WHERE session_id = $1",
        )
        .bind(session_id)
        .bind(&message.id)
        .bind(role_name(message.role))
        .bind(now)
        .bind(origin)
        .execute(&mut *tx)
        .await;
        match inserted {
            Ok(_) => {}
            Err(e) if is_unique_violation(&e) => {
                return Err(StoreError::MessageExists {
                    session_id: session_id.to_owned(),
                    message_id: message.id.clone(),
                });
            }
            Err(e) => return Err(self.query_error(ACTION, e)),
        }
        for (idx, data) in parts.into_iter().enumerate() {
            sqlx::query(
                "INSERT INTO parts (session_id, message_id, idx, data) VALUES ($1, $2, $3, $4)",
            )
            .bind(session_id)
            .bind(&message.id)
            .bind(i64::try_from(idx).unwrap_or(i64::MAX))
            .bind(data)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.query_error(ACTION, e))?;
        }
        tx.commit().await.map_err(|e| self.query_error(ACTION, e))
    }

    async fn insert_part(
        &self,
        session_id: &str,
        message_id: &str,
        part: &Part,
    ) -> Result<(), StoreError> {
        const ACTION: &str = "append a part";
        let data = encode_part(part)?;
        let now = now_ms();
        let mut conn = self.conn.lock().await;
        let mut tx = conn
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| self.query_error(ACTION, e))?;
        // Selecting from `messages` inserts nothing when the message is
        // missing, which tells us so without a separate lookup.
        let inserted = sqlx::query(
            "INSERT INTO parts (session_id, message_id, idx, data) \
             SELECT m.session_id, m.id, \
                    (SELECT COALESCE(MAX(p.idx) + 1, 0) FROM parts p \
                     WHERE p.session_id = $1 AND p.message_id = $2), \
                    $3 \
             FROM messages m WHERE m.session_id = $1 AND m.id = $2",
        )
        .bind(session_id)
        .bind(message_id)
        .bind(data)
        .execute(&mut *tx)
        .await
        .map_err(|e| self.query_error(ACTION, e))?;
        if inserted.rows_affected() == 0 {
            return Err(StoreError::MessageNotFound {
                session_id: session_id.to_owned(),
                message_id: message_id.to_owned(),
            });
        }
        touch_session(&mut tx, session_id, now)
            .await
            .map_err(|e| self.query_error(ACTION, e))?;
        tx.commit().await.map_err(|e| self.query_error(ACTION, e))
    }

    async fn delete_message(&self, session_id: &str, message_id: &str) -> Result<(), StoreError> {
        const ACTION: &str = "discard a message";
        let mut conn = self.conn.lock().await;
        let mut tx = conn
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| self.query_error(ACTION, e))?;
        for statement in [
            "DELETE FROM parts WHERE session_id = $1 AND message_id = $2",
            "DELETE FROM messages WHERE session_id = $1 AND id = $2",
        ] {
            sqlx::query(statement)
                .bind(session_id)
                .bind(message_id)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.query_error(ACTION, e))?;
        }
        tx.commit().await.map_err(|e| self.query_error(ACTION, e))
    }

    async fn update_state(
        &self,
        session_id: &str,
        state: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let text = serde_json::to_string(state).map_err(|source| StoreError::Encode {
            what: "session state",
            source,
        })?;
        let mut conn = self.conn.lock().await;
        let updated =
            sqlx::query("UPDATE sessions SET state = $2, updated_at_ms = $3 WHERE id = $1")
                .bind(session_id)
                .bind(text)
                .bind(now_ms())
                .execute(&mut *conn)
                .await
                .map_err(|e| self.query_error("save the session state", e))?;
        if updated.rows_affected() == 0 {
            return Err(self.session_not_found(session_id));
        }
        Ok(())
    }
}

impl SessionStore for SqliteStore {
    fn create_session<'a>(
        &'a self,
        meta: &'a SessionMeta,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.insert_session(meta))
    }

    fn append_message<'a>(
        &'a self,
        session_id: &'a str,
        message: &'a Message,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.insert_message(session_id, message))
    }

    fn append_part<'a>(
        &'a self,
        session_id: &'a str,
        message_id: &'a str,
        part: &'a Part,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.insert_part(session_id, message_id, part))
    }

    fn discard_message<'a>(
        &'a self,
        session_id: &'a str,
        message_id: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.delete_message(session_id, message_id))
    }

    fn save_state<'a>(
        &'a self,
        session_id: &'a str,
        state: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.update_state(session_id, state))
    }

    fn load_state<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, StoreError>> {
        Box::pin(self.select_state(session_id))
    }

    fn load_messages<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Message>, StoreError>> {
        Box::pin(self.select_messages(session_id))
    }

    fn get_session<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<SessionMeta>, StoreError>> {
        Box::pin(self.select_session(session_id))
    }

    fn list_sessions(&self) -> BoxFuture<'_, Result<Vec<SessionMeta>, StoreError>> {
        Box::pin(self.select_sessions())
    }

    fn sync(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(self.flush_to_disk())
    }
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

/// Sets the session's `updated_at_ms`; false when there is no such session.
async fn touch_session(
    conn: &mut SqliteConnection,
    session_id: &str,
    now: i64,
) -> Result<bool, sqlx::Error> {
    let updated = sqlx::query("UPDATE sessions SET updated_at_ms = $2 WHERE id = $1")
        .bind(session_id)
        .bind(now)
        .execute(conn)
        .await?;
    Ok(updated.rows_affected() > 0)
}

fn encode_part(part: &Part) -> Result<String, StoreError> {
    serde_json::to_string(part).map_err(|source| StoreError::Encode {
        what: "message part",
        source,
    })
}

/// NULL for the conversation itself, so most rows carry nothing extra.
fn encode_origin(origin: &Origin) -> Result<Option<String>, StoreError> {
    if origin.is_conversation() {
        return Ok(None);
    }
    serde_json::to_string(origin)
        .map(Some)
        .map_err(|source| StoreError::Encode {
            what: "message origin",
            source,
        })
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::read::parse_role;
    use super::*;

    #[test]
    fn roles_round_trip_through_their_names() {
        for role in [Role::User, Role::Assistant] {
            assert_eq!(parse_role(Some(role_name(role))), Some(role));
        }
        assert_eq!(parse_role(Some("system")), None);
        assert_eq!(parse_role(None), None);
    }

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
