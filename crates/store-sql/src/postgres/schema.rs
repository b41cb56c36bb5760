//! Bringing a PostgreSQL schema up to date, safely from several hosts at
//! once.
//!
//! Invariants:
//! - The whole check-and-upgrade runs in one transaction that first takes a
//!   transaction-scoped advisory lock keyed by the schema: hosts starting
//!   together queue on it, and each later one finds the work done, so every
//!   migration is applied once. A crash mid-upgrade rolls everything back.
//! - Even the version table is created under that lock (a concurrent
//!   `CREATE TABLE IF NOT EXISTS` can fail in PostgreSQL), and only when it
//!   is missing, so a current database logs no notices.
//! - The migrations are [`crate::sql::MIGRATIONS`], the same as SQLite's.

use sqlx::{Connection, PgConnection};

use crate::schema::{MigrateError, pending};
use crate::sql::{CREATE_VERSION_TABLE, CURRENT_VERSION, LATEST_VERSION, RECORD_VERSION};

/// "gyre" in ASCII: the advisory lock's first key, the schema's hash its
/// second, so databases shared with other software, or schemas shared by
/// tests, do not contend.
const LOCK_MIGRATIONS: &str =
    "SELECT pg_advisory_xact_lock(1735008869, hashtext(COALESCE(current_schema(), '')))";

const VERSION_TABLE_EXISTS: &str = "SELECT to_regclass('schema_version') IS NOT NULL";

/// Brings the schema to [`LATEST_VERSION`].
pub(super) async fn migrate(conn: &mut PgConnection, now_ms: i64) -> Result<(), MigrateError> {
    let mut tx = conn.begin().await?;
    sqlx::query(LOCK_MIGRATIONS).execute(&mut *tx).await?;
    let exists: bool = sqlx::query_scalar(VERSION_TABLE_EXISTS)
        .fetch_one(&mut *tx)
        .await?;
    if !exists {
        sqlx::query(CREATE_VERSION_TABLE).execute(&mut *tx).await?;
    }
    let found: i64 = sqlx::query_scalar(CURRENT_VERSION)
        .fetch_one(&mut *tx)
        .await?;
    if found != LATEST_VERSION {
        for (version, sql) in pending(found)? {
            sqlx::raw_sql(sql).execute(&mut *tx).await?;
            sqlx::query(RECORD_VERSION)
                .bind(version)
                .bind(now_ms)
                .execute(&mut *tx)
                .await?;
        }
    }
    tx.commit().await?;
    Ok(())
}
