//! Schema versions, as both backends track them: a `schema_version` table
//! with one row per applied migration of [`crate::sql::MIGRATIONS`].
//!
//! Invariants:
//! - A database at a version newer than this build knows is never touched.
//! - Pending migrations are applied in order, each recorded in the same
//!   transaction as its statements (the backends hold that transaction and
//!   the lock that makes concurrent upgraders apply each migration once).

use crate::sql::{LATEST_VERSION, MIGRATIONS};

/// Why the schema could not be brought up to date.
#[derive(Debug)]
pub(crate) enum MigrateError {
    /// The database was written by a newer gyre; this build must not touch it.
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

/// The migrations a database at version `found` still needs, each with the
/// version it makes.
pub(crate) fn pending(
    found: i64,
) -> Result<impl Iterator<Item = (i64, &'static str)>, MigrateError> {
    if found > LATEST_VERSION {
        return Err(MigrateError::Newer { found });
    }
    let applied = usize::try_from(found).unwrap_or(0);
    Ok(MIGRATIONS
        .iter()
        .zip(1_i64..)
        .skip(applied)
        .map(|(sql, version)| (version, *sql)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_starts_after_the_applied_ones() {
        let all: Vec<i64> = pending(0).unwrap().map(|(v, _)| v).collect();
        assert_eq!(all, (1..=LATEST_VERSION).collect::<Vec<_>>());
        assert_eq!(pending(LATEST_VERSION).unwrap().count(), 0);
        assert_eq!(pending(-1).unwrap().count(), MIGRATIONS.len());
        assert!(matches!(
            pending(LATEST_VERSION + 1),
            Err(MigrateError::Newer { .. })
        ));
    }
}
