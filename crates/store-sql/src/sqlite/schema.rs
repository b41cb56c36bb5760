//! Bringing a SQLite file's schema up to date.
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
//! The migrations themselves are [`crate::sql::MIGRATIONS`], the same for
//! PostgreSQL.

use sqlx::{Connection, SqliteConnection};

use crate::schema::{MigrateError, pending};
use crate::sql::{CREATE_VERSION_TABLE, CURRENT_VERSION, LATEST_VERSION, RECORD_VERSION};

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
    for (version, sql) in pending(found)? {
        sqlx::raw_sql(sql).execute(&mut *tx).await?;
        sqlx::query(RECORD_VERSION)
            .bind(version)
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
        assert_eq!(rows, vec![(1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (6, 1)]);
        assert_eq!(LATEST_VERSION, 6);
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
