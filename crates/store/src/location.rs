//! Where the sessions live, as one string: a PostgreSQL URL or a SQLite
//! file path; and [`open`], which opens either behind the trait.
//!
//! Invariants:
//! - `postgres://` and `postgresql://` (any case) mean PostgreSQL; any other
//!   non-empty string is a file path, even one that looks like another URL.
//! - A location never shows a password: its `Display` and `Debug` (and so
//!   every error naming the database) are built from the parsed parts
//!   without it, and an unparseable URL is shown by its scheme alone.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use sqlx::postgres::PgConnectOptions;

use crate::{PgStore, SessionStore, SqliteStore, StoreError};

const PG_SCHEMES: [&str; 2] = ["postgres://", "postgresql://"];

/// A session database: a SQLite file or a PostgreSQL database.
#[derive(Clone)]
pub struct Location(Kind);

#[derive(Clone)]
enum Kind {
    Sqlite(PathBuf),
    Postgres {
        options: Box<PgConnectOptions>,
        /// The URL without its password.
        shown: String,
    },
}

impl Location {
    /// A SQLite file, whatever the path looks like.
    pub fn sqlite(path: impl Into<PathBuf>) -> Location {
        Location(Kind::Sqlite(path.into()))
    }

    /// Reads a location: `postgres://…`/`postgresql://…` (any of the
    /// parameters libpq-style URLs take) or else a file path.
    pub fn parse(text: &str) -> Result<Location, StoreError> {
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
        let options = PgConnectOptions::from_str(&url).map_err(|e| StoreError::Location {
            database: format!("{scheme}…"),
            reason: e.to_string(),
        })?;
        let shown = shown_url(&options);
        Ok(Location(Kind::Postgres {
            options: Box::new(options),
            shown,
        }))
    }

    /// The file, for a SQLite location.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match &self.0 {
            Kind::Sqlite(path) => Some(path),
            Kind::Postgres { .. } => None,
        }
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self.0, Kind::Postgres { .. })
    }

    pub(crate) fn pg_options(&self) -> Option<(&PgConnectOptions, &str)> {
        match &self.0 {
            Kind::Postgres { options, shown } => Some((options, shown)),
            Kind::Sqlite(_) => None,
        }
    }
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

impl FromStr for Location {
    type Err = StoreError;

    fn from_str(text: &str) -> Result<Location, StoreError> {
        Location::parse(text)
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::Sqlite(path) => write!(f, "{}", path.display()),
            Kind::Postgres { shown, .. } => f.write_str(shown),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Location").field(&self.to_string()).finish()
    }
}

/// Opens the store at `location` (creating a SQLite file and its directory,
/// or the schema in a PostgreSQL database, as needed) with its schema
/// brought up to date.
pub async fn open(location: &Location) -> Result<Arc<dyn SessionStore>, StoreError> {
    match &location.0 {
        Kind::Sqlite(path) => Ok(Arc::new(SqliteStore::open(path).await?)),
        Kind::Postgres { .. } => Ok(Arc::new(PgStore::open(location).await?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_postgres_and_anything_else_is_a_file() {
        let pg = Location::parse("postgres://u:secret@db.example:6543/gyre").unwrap();
        assert!(pg.is_postgres());
        assert_eq!(pg.to_string(), "postgres://u@db.example:6543/gyre");
        let pg = Location::parse("PostgreSQL://u@h/d?sslmode=disable").unwrap();
        assert_eq!(pg.to_string(), "postgres://u@h:5432/d");

        for path in ["/var/gyre/sessions.db", "sessions.db", "sqlite://x.db"] {
            let file = Location::parse(path).unwrap();
            assert_eq!(file.sqlite_path(), Some(Path::new(path)));
            assert_eq!(file.to_string(), path);
        }
        assert!(Location::parse("  ").is_err());
    }

    #[test]
    fn passwords_are_never_shown() {
        for url in [
            "postgres://u:hunter2@h/d",
            "postgres://u@h/d?password=hunter2",
            "postgresql://u:hunter2@h:5/d?options[search_path]=x",
        ] {
            let location = Location::parse(url).unwrap();
            assert!(!location.to_string().contains("hunter2"), "{location}");
            assert!(!format!("{location:?}").contains("hunter2"));
        }
        let err = Location::parse("postgres://u:hunter2@h:notaport/d").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(err.to_string().contains("postgres://"), "{err}");
    }
}
