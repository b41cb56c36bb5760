//! The whole difference between the backends, as seen by the shared engine:
//! how to run one of [`crate::sql`]'s statements with its arguments, read a
//! column, begin a write transaction and read the clock.
//!
//! Invariants:
//! - The engine speaks a vocabulary of three value kinds ([`Arg`]: text,
//!   nullable text, 64-bit integer), the same the portable schema stores, so
//!   no statement depends on a backend's type mapping.
//! - Arguments are copied into the query when it is built; nothing borrowed
//!   outlives the call.
//! - A read transaction sees one snapshot for all its statements (SQLite: a
//!   deferred transaction in WAL mode; PostgreSQL: REPEATABLE READ).
//! - A write transaction on SQLite is `BEGIN IMMEDIATE` (the write lock is
//!   taken up front, so a second process waits on `busy_timeout` instead of
//!   failing a lock upgrade half-way); on PostgreSQL a plain READ COMMITTED
//!   `BEGIN`, serialised per session by the session row's lock (see
//!   [`crate::sql`]).
//! - Lock times come from one clock shared by every contender: the local
//!   clock for SQLite (one machine), the database server's clock for
//!   PostgreSQL (hosts' clocks may disagree by more than a lease).

use std::future::Future;
use std::time::{SystemTime, UNIX_EPOCH};

use futures::FutureExt;
use futures::stream::BoxStream;
use sqlx::postgres::{PgArguments, PgConnection, PgRow};
use sqlx::query::Query;
use sqlx::sqlite::{SqliteArguments, SqliteConnection, SqliteRow};
use sqlx::{Connection, Database, Postgres, Row, Sqlite, Transaction};

use crate::trouble::Trouble;

/// One statement argument.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg<'a> {
    Text(&'a str),
    MaybeText(Option<&'a str>),
    Int(i64),
}

/// What the engine needs of a database driver.
pub(crate) trait Dialect: Database {
    /// Runs a statement; the number of rows it changed.
    fn execute(
        conn: &mut Self::Connection,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> impl Future<Output = Result<u64, sqlx::Error>> + Send;

    fn fetch_optional(
        conn: &mut Self::Connection,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> impl Future<Output = Result<Option<Self::Row>, sqlx::Error>> + Send;

    /// Rows one at a time, so a long history is never buffered twice.
    fn fetch<'c>(
        conn: &'c mut Self::Connection,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> BoxStream<'c, Result<Self::Row, sqlx::Error>>;

    fn text(row: &Self::Row, index: usize) -> Result<Option<String>, sqlx::Error>;

    fn int(row: &Self::Row, index: usize) -> Result<Option<i64>, sqlx::Error>;

    fn begin_write(
        conn: &mut Self::Connection,
    ) -> impl Future<Output = Result<Transaction<'_, Self>, sqlx::Error>> + Send;

    /// A transaction whose statements all read one snapshot.
    fn begin_read(
        conn: &mut Self::Connection,
    ) -> impl Future<Output = Result<Transaction<'_, Self>, sqlx::Error>> + Send;

    /// Milliseconds since the Unix epoch on the clock lock times use.
    fn clock_ms(
        conn: &mut Self::Connection,
    ) -> impl Future<Output = Result<i64, sqlx::Error>> + Send;

    /// What kind of failure `error` is (a damaged file, a full disk, a
    /// read-only place, or anything else).
    fn trouble(error: &sqlx::Error) -> Trouble;
}

/// Milliseconds since the Unix epoch on this machine's clock.
pub(crate) fn local_now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn sqlite_query(sql: &'static str, args: &[Arg<'_>]) -> Query<'static, Sqlite, SqliteArguments> {
    args.iter().fold(sqlx::query(sql), |query, arg| match *arg {
        Arg::Text(text) => query.bind(text),
        Arg::MaybeText(text) => query.bind(text),
        Arg::Int(int) => query.bind(int),
    })
}

impl Dialect for Sqlite {
    fn execute(
        conn: &mut SqliteConnection,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> impl Future<Output = Result<u64, sqlx::Error>> + Send {
        sqlite_query(sql, args)
            .execute(conn)
            .map(|done| done.map(|d| d.rows_affected()))
    }

    fn fetch_optional(
        conn: &mut SqliteConnection,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> impl Future<Output = Result<Option<SqliteRow>, sqlx::Error>> + Send {
        sqlite_query(sql, args).fetch_optional(conn)
    }

    fn fetch<'c>(
        conn: &'c mut SqliteConnection,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> BoxStream<'c, Result<SqliteRow, sqlx::Error>> {
        sqlite_query(sql, args).fetch(conn)
    }

    fn text(row: &SqliteRow, index: usize) -> Result<Option<String>, sqlx::Error> {
        row.try_get(index)
    }

    fn int(row: &SqliteRow, index: usize) -> Result<Option<i64>, sqlx::Error> {
        row.try_get(index)
    }

    fn begin_write(
        conn: &mut SqliteConnection,
    ) -> impl Future<Output = Result<Transaction<'_, Sqlite>, sqlx::Error>> + Send {
        conn.begin_with("BEGIN IMMEDIATE")
    }

    fn begin_read(
        conn: &mut SqliteConnection,
    ) -> impl Future<Output = Result<Transaction<'_, Sqlite>, sqlx::Error>> + Send {
        // A deferred transaction in WAL mode keeps the snapshot of its first
        // read until it ends, and blocks no writer.
        conn.begin()
    }

    fn clock_ms(
        _conn: &mut SqliteConnection,
    ) -> impl Future<Output = Result<i64, sqlx::Error>> + Send {
        std::future::ready(Ok(local_now_ms()))
    }

    fn trouble(error: &sqlx::Error) -> Trouble {
        crate::trouble::sqlite(error)
    }
}

fn pg_query(sql: &'static str, args: &[Arg<'_>]) -> Query<'static, Postgres, PgArguments> {
    args.iter().fold(sqlx::query(sql), |query, arg| match *arg {
        Arg::Text(text) => query.bind(text),
        Arg::MaybeText(text) => query.bind(text),
        Arg::Int(int) => query.bind(int),
    })
}

/// The server's clock: `clock_timestamp()` moves within a transaction too.
const PG_CLOCK_MS: &str = "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)";

impl Dialect for Postgres {
    fn execute(
        conn: &mut PgConnection,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> impl Future<Output = Result<u64, sqlx::Error>> + Send {
        pg_query(sql, args)
            .execute(conn)
            .map(|done| done.map(|d| d.rows_affected()))
    }

    fn fetch_optional(
        conn: &mut PgConnection,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> impl Future<Output = Result<Option<PgRow>, sqlx::Error>> + Send {
        pg_query(sql, args).fetch_optional(conn)
    }

    fn fetch<'c>(
        conn: &'c mut PgConnection,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> BoxStream<'c, Result<PgRow, sqlx::Error>> {
        pg_query(sql, args).fetch(conn)
    }

    fn text(row: &PgRow, index: usize) -> Result<Option<String>, sqlx::Error> {
        row.try_get(index)
    }

    fn int(row: &PgRow, index: usize) -> Result<Option<i64>, sqlx::Error> {
        row.try_get(index)
    }

    fn begin_write(
        conn: &mut PgConnection,
    ) -> impl Future<Output = Result<Transaction<'_, Postgres>, sqlx::Error>> + Send {
        conn.begin()
    }

    fn begin_read(
        conn: &mut PgConnection,
    ) -> impl Future<Output = Result<Transaction<'_, Postgres>, sqlx::Error>> + Send {
        // READ COMMITTED would give each statement its own snapshot.
        conn.begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
    }

    fn clock_ms(conn: &mut PgConnection) -> impl Future<Output = Result<i64, sqlx::Error>> + Send {
        sqlx::query_scalar(PG_CLOCK_MS).fetch_one(conn)
    }

    fn trouble(error: &sqlx::Error) -> Trouble {
        // PostgreSQL reports damage as a query error like any other (there
        // is no file for the user to move aside); a full disk is its own.
        crate::trouble::postgres(error)
    }
}
