//! Which session store a command uses, and opening it.
//!
//! `GYRE_DATABASE_URL=postgres://…` puts sessions in PostgreSQL; otherwise
//! they live in `$GYRE_HOME/sessions.db` (SQLite). Every command that reads
//! or writes sessions goes through [`location`] and [`open`], so they all
//! agree on where sessions are.
//!
//! Invariants: no message printed from here contains the URL's password —
//! errors and names show [`Location`]'s `Display`, which leaves it out, and
//! the variable's raw value is never printed. A `GYRE_DATABASE_URL` that is
//! not a PostgreSQL URL is refused (exit 2) rather than taken as a file
//! name, so a typo in the scheme does not quietly start a new, empty store.

use std::path::Path;
use std::sync::Arc;

use gyre_store::{Location, SessionStore};

use crate::exit::Exit;
use crate::home::database_path;

/// The variable that moves sessions to PostgreSQL.
pub const DATABASE_URL_VAR: &str = "GYRE_DATABASE_URL";

/// Where sessions are: `GYRE_DATABASE_URL` when set, else the SQLite file
/// in `home`.
pub fn location(home: &Path) -> Result<Location, Exit> {
    match std::env::var(DATABASE_URL_VAR) {
        Ok(url) if !url.trim().is_empty() => from_url(&url),
        Ok(_) | Err(std::env::VarError::NotPresent) => Ok(Location::sqlite(database_path(home))),
        Err(std::env::VarError::NotUnicode(_)) => Err(Exit::usage(format!(
            "{DATABASE_URL_VAR} is not valid UTF-8; set it to a postgres:// URL or unset it"
        ))),
    }
}

fn from_url(url: &str) -> Result<Location, Exit> {
    let location = gyre_store_sql::parse_location(url)
        .map_err(|e| Exit::usage(format!("{DATABASE_URL_VAR}: {e}")))?;
    if !location.is_postgres() {
        return Err(Exit::usage(format!(
            "{DATABASE_URL_VAR} must be a postgres:// URL; unset it to keep sessions in $GYRE_HOME/sessions.db"
        )));
    }
    Ok(location)
}

/// Opens the store at `location` (creating it as needed).
pub async fn open(location: &Location) -> Result<Arc<dyn SessionStore>, Exit> {
    gyre_store_sql::open(location)
        .await
        .map_err(|e| Exit::failure(format!("cannot open the session store: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_postgres_and_never_show_the_password() {
        let location = from_url("postgres://u:hunter2@db:6543/gyre").unwrap();
        assert_eq!(location.to_string(), "postgres://u@db:6543/gyre");

        let err = from_url("postgress://u:hunter2@db/gyre").unwrap_err();
        assert_eq!(err.code, crate::exit::USAGE);
        assert!(!err.message.contains("hunter2"), "{err}");

        let err = from_url("postgres://u:hunter2@db:notaport/gyre").unwrap_err();
        assert_eq!(err.code, crate::exit::USAGE);
        assert!(!err.message.contains("hunter2"), "{err}");
        assert!(err.message.contains(DATABASE_URL_VAR), "{err}");
    }
}
