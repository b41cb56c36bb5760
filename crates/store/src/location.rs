//! Where the sessions live: a SQLite file or a PostgreSQL database, as plain
//! data. Reading a location string and opening it is the backends' work
//! (`gyre_store_sql::parse_location` and `gyre_store_sql::open`): a
//! PostgreSQL URL's meaning (defaults, `PG*` variables, sockets) is the
//! driver's, and this crate names no driver.
//!
//! Invariants:
//! - A location never shows a password: its `Display` and `Debug` (and so
//!   every error naming the database) are the `shown` form the backend
//!   built without it; the URL that connects is only handed to a backend
//!   ([`Location::postgres_url`]).

use std::fmt;
use std::path::{Path, PathBuf};

/// A session database: a SQLite file or a PostgreSQL database.
#[derive(Clone)]
pub struct Location(Kind);

#[derive(Clone)]
enum Kind {
    Sqlite(PathBuf),
    Postgres {
        /// What connects; may hold a password.
        url: String,
        /// The URL without its password.
        shown: String,
    },
}

impl Location {
    /// A SQLite file, whatever the path looks like.
    pub fn sqlite(path: impl Into<PathBuf>) -> Location {
        Location(Kind::Sqlite(path.into()))
    }

    /// A PostgreSQL database: `url` is what connects (it may hold a
    /// password), `shown` what names it in messages and must not. Built by
    /// the backend that read the URL (`gyre_store_sql::parse_location`),
    /// which knows what `shown` must say.
    pub fn postgres(url: impl Into<String>, shown: impl Into<String>) -> Location {
        Location(Kind::Postgres {
            url: url.into(),
            shown: shown.into(),
        })
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

    /// The URL that connects (password included), for a PostgreSQL
    /// location: for a backend only, never to be shown.
    pub fn postgres_url(&self) -> Option<&str> {
        match &self.0 {
            Kind::Postgres { url, .. } => Some(url),
            Kind::Sqlite(_) => None,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_location_shows_only_its_shown_form() {
        let location = Location::postgres("postgres://u:hunter2@h/d", "postgres://u@h:5432/d");
        assert!(location.is_postgres());
        assert_eq!(location.sqlite_path(), None);
        assert_eq!(location.to_string(), "postgres://u@h:5432/d");
        assert!(!format!("{location:?}").contains("hunter2"));
        assert_eq!(location.postgres_url(), Some("postgres://u:hunter2@h/d"));
    }

    #[test]
    fn a_file_is_shown_as_its_path() {
        let location = Location::sqlite("/var/gyre/sessions.db");
        assert!(!location.is_postgres());
        assert_eq!(location.postgres_url(), None);
        assert_eq!(
            location.sqlite_path(),
            Some(Path::new("/var/gyre/sessions.db"))
        );
        assert_eq!(location.to_string(), "/var/gyre/sessions.db");
    }
}
