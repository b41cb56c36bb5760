//! What the backends make of a driver's error before it is boxed into a
//! [`StoreError`]: whether it means a taken key, which only the driver's own
//! error can tell (damage, a full disk, a read-only place: `crate::trouble`).

use gyre_store::StoreError;

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
        assert!(!is_unique_violation(&sqlx::Error::RowNotFound));
    }
}
