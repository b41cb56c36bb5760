//! The schema and its migrations, embedded in the binary.
//!
//! Invariants:
//! - `MIGRATIONS[i]` takes the schema from version `i` to version `i + 1`; a
//!   migration is never edited once released, only new ones appended.
//! - Pending migrations are applied in order inside one `BEGIN IMMEDIATE`
//!   transaction, together with the version rows that record them, so a
//!   crash mid-upgrade leaves the previous version intact and two processes
//!   opening the same file upgrade it once.
//! - A database at the current version costs two cheap statements and no
//!   write lock: opening is on the start-up path of every run.
//!
//! The SQL stays portable for a later PostgreSQL backend: TEXT ids, BIGINT
//! epoch-ms timestamps (PostgreSQL's INTEGER is 32-bit; SQLite's BIGINT has
//! INTEGER affinity, the same 64-bit storage), JSON as TEXT, `$n` placeholders,
//! no SQLite-only clauses.

use sqlx::{Connection, SqliteConnection};

const CREATE_VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_version (
    version BIGINT PRIMARY KEY NOT NULL,
    applied_at_ms BIGINT NOT NULL
)";

const CURRENT_VERSION: &str = "SELECT COALESCE(MAX(version), 0) FROM schema_version";

const RECORD_VERSION: &str = "INSERT INTO schema_version (version, applied_at_ms) VALUES ($1, $2)";

/// Version 1: sessions, their messages, and the messages' parts.
///
/// Messages are numbered per session (`seq`) so they load in append order
/// whatever their ids; parts are numbered per message (`idx`). `parts.data` is
/// the serde JSON of a `Part`, `sessions.state` the core's serialised state.
const V1: &str = "
CREATE TABLE sessions (
    id TEXT PRIMARY KEY NOT NULL,
    cwd TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    title TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL,
    state TEXT NULL
);
CREATE INDEX sessions_by_updated ON sessions (updated_at_ms, id);
CREATE TABLE messages (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    id TEXT NOT NULL,
    role TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq),
    UNIQUE (session_id, id)
);
CREATE TABLE parts (
    session_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    idx BIGINT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (session_id, message_id, idx),
    FOREIGN KEY (session_id, message_id) REFERENCES messages (session_id, id) ON DELETE CASCADE
);
";

/// Version 2: a message's origin beyond its role (gyre's notices, and the
/// summaries that mark compact boundaries), as the serde JSON of
/// `gyre_protocol::Origin`; NULL for the common case, the conversation itself.
const V2: &str = "ALTER TABLE messages ADD COLUMN origin TEXT NULL;";

/// Every migration, oldest first.
const MIGRATIONS: &[&str] = &[V1, V2];

/// The schema version this build writes.
pub(crate) const LATEST_VERSION: i64 = MIGRATIONS.len() as i64;

/// Why the schema could not be brought up to date.
#[derive(Debug)]
pub(crate) enum MigrateError {
    /// The file was written by a newer gyre; this build must not touch it.
    Newer {
        found: i64,
    },
    Sql(sqlx::Error),
}

impl From<sqlx::Error> for MigrateError {
    fn from(error: sqlx::Error) -> Self {
        MigrateError::Sql(error)
    }
}

/// Brings the schema to [`LATEST_VERSION`].
pub(crate) async fn migrate(conn: &mut SqliteConnection, now_ms: i64) -> Result<(), MigrateError> {
    // IF NOT EXISTS on an existing table takes no write lock, so the common
    // case (already current) never waits on another process's writes.
    sqlx::query(CREATE_VERSION_TABLE)
        .execute(&mut *conn)
        .await?;
    let found = current_version(&mut *conn).await?;
    if found == LATEST_VERSION {
        return Ok(());
    }
    if found > LATEST_VERSION {
        return Err(MigrateError::Newer { found });
    }

    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
    // Another process may have upgraded the file between the read and the lock.
    let found = current_version(&mut tx).await?;
    if found > LATEST_VERSION {
        return Err(MigrateError::Newer { found });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(version_index(found)) {
        sqlx::raw_sql(*sql).execute(&mut *tx).await?;
        sqlx::query(RECORD_VERSION)
            .bind(index as i64 + 1)
            .bind(now_ms)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

async fn current_version(conn: &mut SqliteConnection) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(CURRENT_VERSION).fetch_one(conn).await
}

/// How many migrations a database at `version` has already applied.
fn version_index(version: i64) -> usize {
    usize::try_from(version).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::ConnectOptions;
    use sqlx::sqlite::SqliteConnectOptions;

    async fn memory() -> SqliteConnection {
        SqliteConnectOptions::new().connect().await.unwrap()
    }

    #[tokio::test]
    async fn migrating_twice_applies_each_migration_once() {
        let mut conn = memory().await;
        migrate(&mut conn, 1).await.unwrap();
        migrate(&mut conn, 2).await.unwrap();
        let rows: Vec<(i64, i64)> =
            sqlx::query_as("SELECT version, applied_at_ms FROM schema_version ORDER BY version")
                .fetch_all(&mut conn)
                .await
                .unwrap();
        assert_eq!(rows, vec![(1, 1), (2, 1)]);
        assert_eq!(LATEST_VERSION, 2);
    }

    #[tokio::test]
    async fn a_newer_schema_is_refused() {
        let mut conn = memory().await;
        migrate(&mut conn, 1).await.unwrap();
        sqlx::query("INSERT INTO schema_version (version, applied_at_ms) VALUES (99, 0)")
            .execute(&mut conn)
            .await
            .unwrap();
        match migrate(&mut conn, 2).await {
            Err(MigrateError::Newer { found: 99 }) => {}
            other => panic!("expected a newer-schema refusal, got {other:?}"),
        }
    }
}
