//! What the backends make of a driver's error before it is boxed into a
//! [`StoreError`]: whether it means a damaged file or a taken key, which
//! only the driver's own error can tell.

use gyre_store::StoreError;

/// SQLite primary result codes that mean the file's content cannot be trusted.
const SQLITE_CORRUPT: i32 = 11;
const SQLITE_NOTADB: i32 = 26;

/// Whether a SQLite `error` says the database file is damaged or not a
/// database at all. Only meaningful for SQLite: PostgreSQL's SQLSTATEs are
/// another numbering.
pub(crate) fn is_sqlite_corruption(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|db| db.code())
        .and_then(|code| code.parse::<i32>().ok())
        // Extended result codes keep the primary code in the low byte.
        .is_some_and(|code| matches!(code & 0xff, SQLITE_CORRUPT | SQLITE_NOTADB))
}

/// Whether `error` is a violated UNIQUE or PRIMARY KEY constraint.
pub(crate) fn is_unique_violation(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|db| db.is_unique_violation())
}

/// A statement of `action` failed on `database`.
pub(crate) fn query(database: &str, action: &'static str, source: sqlx::Error) -> StoreError {
    StoreError::Query {
        database: database.to_owned(),
        action,
        source: Box::new(source),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_database_errors_are_not_corruption() {
        assert!(!is_sqlite_corruption(&sqlx::Error::RowNotFound));
        assert!(!is_unique_violation(&sqlx::Error::RowNotFound));
    }
}
