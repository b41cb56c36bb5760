//! Reading a location string ([`parse_location`]) and opening it behind the
//! trait ([`open`]): here, not in gyre-store, because what a PostgreSQL URL
//! means (its defaults, the `PG*` variables, sockets) is the driver's.
//!
//! Invariants:
//! - `postgres://` and `postgresql://` (any case) mean PostgreSQL; any other
//!   non-empty string is a file path, even one that looks like another URL.
//! - A location never shows a password: its shown form is built from the
//!   parsed parts without it, and an unparseable URL is shown by its scheme
//!   alone.

use std::str::FromStr;
use std::sync::Arc;

use gyre_store::{Location, SessionStore, StoreError};
use sqlx::postgres::PgConnectOptions;

use crate::{PgStore, SqliteStore};

const PG_SCHEMES: [&str; 2] = ["postgres://", "postgresql://"];

/// Reads a location: `postgres://…`/`postgresql://…` (any of the
/// parameters libpq-style URLs take) or else a file path.
pub fn parse_location(text: &str) -> Result<Location, StoreError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(StoreError::Location {
            database: "\"\"".to_owned(),
            reason: "it is empty; give a file path or a postgres:// URL".to_owned(),
        });
    }
    let Some(scheme) = PG_SCHEMES.iter().find(|scheme| {
        text.get(..scheme.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
    }) else {
        return Ok(Location::sqlite(text));
    };
    // sqlx matches the scheme exactly; the rest keeps its case.
    let url = format!("{scheme}{}", &text[scheme.len()..]);
    let options = connect_options(&url, &format!("{scheme}…"))?;
    Ok(Location::postgres(url, shown_url(&options)))
}

/// The driver's reading of `url`; an error names the database as `shown`.
fn connect_options(url: &str, shown: &str) -> Result<PgConnectOptions, StoreError> {
    PgConnectOptions::from_str(url).map_err(|e| StoreError::Location {
        database: shown.to_owned(),
        reason: e.to_string(),
    })
}

/// The connect options of a PostgreSQL `location`, with the name errors give
/// it; `None` for a SQLite file.
pub(crate) fn pg_options(
    location: &Location,
) -> Option<Result<(PgConnectOptions, String), StoreError>> {
    let url = location.postgres_url()?;
    let shown = location.to_string();
    Some(connect_options(url, &shown).map(|options| (options, shown)))
}

/// `postgres://user@host:port/database`: enough to tell databases apart,
/// nothing secret.
fn shown_url(options: &PgConnectOptions) -> String {
    let host = match options.get_socket() {
        Some(socket) => socket.display().to_string(),
        None => format!("{}:{}", options.get_host(), options.get_port()),
    };
    let database = options.get_database().unwrap_or_default();
    format!("postgres://{}@{host}/{database}", options.get_username())
}

/// Opens the store at `location` (creating a SQLite file and its directory,
/// or the schema in a PostgreSQL database, as needed) with its schema
/// brought up to date.
pub async fn open(location: &Location) -> Result<Arc<dyn SessionStore>, StoreError> {
    match location.sqlite_path() {
        Some(path) => Ok(Arc::new(SqliteStore::open(path).await?)),
        None => Ok(Arc::new(PgStore::open(location).await?)),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn urls_are_postgres_and_anything_else_is_a_file() {
        let pg = parse_location("postgres://u:secret@db.example:6543/gyre").unwrap();
        assert!(pg.is_postgres());
        assert_eq!(pg.to_string(), "postgres://u@db.example:6543/gyre");
        let pg = parse_location("PostgreSQL://u@h/d?sslmode=disable").unwrap();
        assert_eq!(pg.to_string(), "postgres://u@h:5432/d");

        for path in ["/var/gyre/sessions.db", "sessions.db", "sqlite://x.db"] {
            let file = parse_location(path).unwrap();
            assert_eq!(file.sqlite_path(), Some(Path::new(path)));
            assert_eq!(file.to_string(), path);
        }
        assert!(parse_location("  ").is_err());
    }

    #[test]
    fn passwords_are_never_shown() {
        for url in [
            "postgres://u:hunter2@h/d",
            "postgres://u@h/d?password=hunter2",
            "postgresql://u:hunter2@h:5/d?options[search_path]=x",
        ] {
            let location = parse_location(url).unwrap();
            assert!(!location.to_string().contains("hunter2"), "{location}");
            assert!(!format!("{location:?}").contains("hunter2"));
        }
        let err = parse_location("postgres://u:hunter2@h:notaport/d").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(err.to_string().contains("postgres://"), "{err}");
    }

    #[test]
    fn the_connect_options_are_the_parsed_ones() {
        let location = parse_location("postgresql://u:pw@h:7/d").unwrap();
        let (options, shown) = pg_options(&location).unwrap().unwrap();
        assert_eq!(shown, "postgres://u@h:7/d");
        assert_eq!(options.get_port(), 7);
        assert!(pg_options(&Location::sqlite("x.db")).is_none());
    }
}
