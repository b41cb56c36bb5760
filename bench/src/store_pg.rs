//! A scratch schema in the PostgreSQL database `GYRE_BENCH_DATABASE_URL`
//! names, for the `store` group's PostgreSQL rows.
//!
//! Invariants:
//! - The schema's name is new (`gyre_bench_<pid>_<ns>`), made by an admin
//!   connection kept beside the store; stores reach it through the URL's
//!   `options=-c search_path=<schema>`, so nothing lands in another schema.
//! - [`Scratch::drop_schema`] drops it (`CASCADE`); callers run it whatever
//!   the measurement's outcome. A killed process leaves it behind.
//! - Errors name the database by its URL without the password.

use anyhow::Context;
use gyre_store::Location;
use sqlx::{Connection, PgConnection};

pub const DATABASE_URL_ENV: &str = "GYRE_BENCH_DATABASE_URL";

/// The URL, or `None` when the variable is unset or empty.
pub fn database_url() -> Option<String> {
    std::env::var(DATABASE_URL_ENV)
        .ok()
        .filter(|url| !url.trim().is_empty())
}

/// One fresh schema and the connection that made it.
pub struct Scratch {
    admin: PgConnection,
    schema: String,
    /// The URL, scoped to the schema.
    pub location: Location,
    /// The database, as shown (no password).
    pub shown: String,
}

impl Scratch {
    pub async fn create(url: &str) -> anyhow::Result<Scratch> {
        let shown = gyre_store_sql::parse_location(url)
            .with_context(|| format!("{DATABASE_URL_ENV} is not a usable URL"))?
            .to_string();
        let mut admin = PgConnection::connect(url)
            .await
            .with_context(|| format!("cannot connect to {shown} ({DATABASE_URL_ENV})"))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let schema = format!("gyre_bench_{}_{nanos}", std::process::id());
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
            .execute(&mut admin)
            .await
            .with_context(|| format!("cannot create the schema {schema} in {shown}"))?;
        let separator = if url.contains('?') { '&' } else { '?' };
        let scoped = format!("{url}{separator}options=-c%20search_path%3D{schema}");
        let location = gyre_store_sql::parse_location(&scoped)
            .context("cannot scope the URL to the schema")?;
        Ok(Scratch {
            admin,
            schema,
            location,
            shown,
        })
    }

    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Whether the store's tables landed in the scratch schema.
    pub async fn holds_the_store(&mut self) -> anyhow::Result<bool> {
        let tables: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM information_schema.tables \
             WHERE table_schema = $1 AND table_name = 'messages'",
        )
        .bind(&self.schema)
        .fetch_one(&mut self.admin)
        .await
        .context("cannot list the scratch schema's tables")?;
        Ok(tables == 1)
    }

    pub async fn drop_schema(mut self) -> anyhow::Result<()> {
        let sql = format!("DROP SCHEMA {} CASCADE", self.schema);
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&mut self.admin)
            .await
            .with_context(|| format!("cannot drop the schema {} in {}", self.schema, self.shown))?;
        self.admin
            .close()
            .await
            .context("cannot close the admin connection")
    }
}
