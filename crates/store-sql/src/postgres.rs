//! The PostgreSQL backend: one database shared by every `gyre serve` host,
//! through a small connection pool, running the shared engine's SQL.
//!
//! Invariants:
//! - Every call is one committed transaction (see [`crate::engine`]) on one
//!   pooled connection; a commit is durable when it returns (PostgreSQL's
//!   default `synchronous_commit`), so [`SessionStore::sync`] has nothing
//!   to do.
//! - Writers of one session are serialised by its `sessions` row lock (see
//!   [`crate::sql`]); writers of different sessions run in parallel.
//! - The schema lives in the connection's `search_path` (the first schema
//!   in it), so several gyre installations, or tests, can share a database
//!   in separate schemas.
//! - Errors name the database by a URL without its password.
//!
//! Trade-off: the pool holds at most [`POOL_SIZE`] connections, opened on
//! demand and closed after [`IDLE_TIMEOUT`]; a caller waits at most
//! [`ACQUIRE_TIMEOUT`] for one.
//!
//! [`SessionStore::sync`]: gyre_store::SessionStore::sync

mod schema;

use std::time::Duration;

use gyre_store::{Location, StoreError};
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, Postgres};

use crate::dialect::local_now_ms;
use crate::engine::Backend;
use crate::location::pg_options;
use crate::schema::MigrateError;
use crate::sql::LATEST_VERSION;

/// Enough for a `gyre serve` host running several sessions at once.
const POOL_SIZE: u32 = 8;
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// A [`SessionStore`](gyre_store::SessionStore) in a PostgreSQL database.
pub struct PgStore {
    pool: PgPool,
    /// The URL without its password.
    name: String,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("database", &self.name)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://…` or
    /// `postgresql://…`) and brings its schema up to date.
    pub async fn connect(url: &str) -> Result<PgStore, StoreError> {
        let location = crate::parse_location(url)?;
        PgStore::open(&location).await
    }

    /// Like [`PgStore::connect`], from a parsed location.
    pub async fn open(location: &Location) -> Result<PgStore, StoreError> {
        let Some(parsed) = pg_options(location) else {
            return Err(StoreError::Location {
                database: location.to_string(),
                reason: "it is not a postgres:// URL".to_owned(),
            });
        };
        let (options, name) = parsed?;
        Self::open_with(options, name).await
    }

    async fn open_with(options: PgConnectOptions, name: String) -> Result<PgStore, StoreError> {
        let options = match options.get_application_name() {
            Some(_) => options,
            None => options.application_name("gyre"),
        }
        // Logging every statement costs more than the statements themselves.
        .disable_statement_logging();
        // One direct connection first: it fails at once when the server is
        // unreachable (a pool retries until its timeout), and it migrates.
        let mut conn = PgConnection::connect_with(&options)
            .await
            .map_err(|source| StoreError::Open {
                database: name.clone(),
                source: Box::new(source),
            })?;
        let migrated = schema::migrate(&mut conn, local_now_ms()).await;
        // Best effort: the server drops a connection whose client went away.
        let _ = conn.close().await;
        match migrated {
            Ok(()) => {}
            Err(MigrateError::Newer { found }) => {
                return Err(StoreError::NewerSchema {
                    database: name,
                    found,
                    supported: LATEST_VERSION,
                });
            }
            Err(MigrateError::Sql(source)) => {
                return Err(StoreError::Migrate {
                    database: name,
                    source: Box::new(source),
                });
            }
        }
        let pool = PgPoolOptions::new()
            .max_connections(POOL_SIZE)
            .min_connections(0)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .idle_timeout(IDLE_TIMEOUT)
            .connect_lazy_with(options);
        Ok(PgStore { pool, name })
    }

    /// The database, as errors name it (without a password).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Closes every connection and waits for them.
    pub async fn close(self) {
        self.pool.close().await;
    }
}

impl Backend for PgStore {
    type Db = Postgres;
    type Conn<'a> = PoolConnection<Postgres>;

    async fn conn(&self) -> Result<PoolConnection<Postgres>, StoreError> {
        self.pool
            .acquire()
            .await
            .map_err(|e| self.fail("get a connection", e))
    }

    fn name(&self) -> &str {
        &self.name
    }

    async fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }
}
