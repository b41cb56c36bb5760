//! What can go wrong in the store, one sentence each.
//!
//! Every message names what failed and, where a file is involved, the database
//! path, so the CLI can print it as is. The underlying cause is both written
//! into the message (users see one line) and kept as the error's `source`.

use std::io;
use std::path::PathBuf;

/// An error of a [`crate::SessionStore`] call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("could not create the directory {} for the session database: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    #[error("could not open the session database {}: {source}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: sqlx::Error,
    },

    #[error(
        "the session database {} is corrupt or not a SQLite database ({source}); move it aside to start a new one",
        path.display()
    )]
    Corrupt {
        path: PathBuf,
        #[source]
        source: sqlx::Error,
    },

    #[error(
        "the session database {} has schema version {found}, newer than the {supported} this gyre knows; upgrade gyre",
        path.display()
    )]
    NewerSchema {
        path: PathBuf,
        found: i64,
        supported: i64,
    },

    #[error("could not upgrade the schema of the session database {}: {source}", path.display())]
    Migrate {
        path: PathBuf,
        #[source]
        source: sqlx::Error,
    },

    /// A statement failed; `action` says what the store was doing.
    #[error("could not {action} in the session database {}: {source}", path.display())]
    Query {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: sqlx::Error,
    },

    #[error("session {session_id} does not exist in the session database {}", path.display())]
    SessionNotFound { path: PathBuf, session_id: String },

    #[error("session {session_id} already exists in the session database {}", path.display())]
    SessionExists { path: PathBuf, session_id: String },

    #[error("message {message_id} does not exist in session {session_id}")]
    MessageNotFound {
        session_id: String,
        message_id: String,
    },

    #[error("message {message_id} already exists in session {session_id}")]
    MessageExists {
        session_id: String,
        message_id: String,
    },

    #[error("could not encode the {what} as JSON: {source}")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },

    #[error(
        "the session database {} holds an unreadable {what} in session {session_id}: {reason}",
        path.display()
    )]
    Decode {
        path: PathBuf,
        session_id: String,
        what: &'static str,
        reason: String,
    },

    #[error("could not flush the session database {} to disk: {source}", path.display())]
    Sync {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// SQLite primary result codes that mean the file's content cannot be trusted.
const SQLITE_CORRUPT: i32 = 11;
const SQLITE_NOTADB: i32 = 26;

/// Whether `error` says the database file is damaged or not a database at all.
pub(crate) fn is_corruption(error: &sqlx::Error) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_database_file() {
        let err = StoreError::SessionNotFound {
            path: PathBuf::from("/tmp/x/sessions.db"),
            session_id: "s1".into(),
        };
        assert_eq!(
            err.to_string(),
            "session s1 does not exist in the session database /tmp/x/sessions.db"
        );
    }

    #[test]
    fn non_database_errors_are_not_corruption() {
        assert!(!is_corruption(&sqlx::Error::RowNotFound));
        assert!(!is_unique_violation(&sqlx::Error::RowNotFound));
    }
}
