//! What can go wrong in the store, one sentence each.
//!
//! Every message names what failed and the database: a SQLite file's path,
//! or a PostgreSQL URL without its password (see [`crate::Location`]), so
//! the CLI can print it as is. The underlying cause is both written into the
//! message (users see one line) and kept as the error's `source`.
//!
//! A database driver's error is kept boxed ([`BoxError`]), so that this
//! crate and its users name no driver: a backend crate (gyre-store-sql)
//! puts its own errors in. Code that needs the driver's details (is it a
//! unique violation, a corrupt file?) decides in the backend before boxing.

use std::io;
use std::path::PathBuf;

/// A backend's underlying error, whatever its driver.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

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

    /// The location string is not a database gyre can open.
    #[error("the session database location {database} is not valid: {reason}")]
    Location { database: String, reason: String },

    #[error("could not open the session database {database}: {source}")]
    Open {
        database: String,
        #[source]
        source: BoxError,
    },

    #[error(
        "the session database {database} is corrupt or not a SQLite database ({source}); gyre will not write into it: move it aside (`mv {database} {database}.corrupt`) and gyre starts a new one (the old one can still be read with the sqlite3 tool's `.recover`)"
    )]
    Corrupt {
        database: String,
        #[source]
        source: BoxError,
    },

    /// The database (or its directory) cannot be written by this user:
    /// reading still works, writing needs another place.
    #[error(
        "the session database {database} cannot be written: {} is read-only for this user ({reason}); make it writable, or set GYRE_HOME to a directory you can write (commands that only read sessions still work here)", dir.display()
    )]
    ReadOnly {
        database: String,
        dir: PathBuf,
        reason: String,
    },

    /// The disk under the database is full; `free` says how much is left
    /// where, when it can be told.
    #[error(
        "the disk holding the session database {database} is full{free}; free some space there (or set GYRE_HOME to another disk) and resume the session: what was stored before this point is kept"
    )]
    DiskFull { database: String, free: String },

    #[error(
        "the session database {database} has schema version {found}, newer than the {supported} this gyre knows; upgrade gyre"
    )]
    NewerSchema {
        database: String,
        found: i64,
        supported: i64,
    },

    #[error("could not upgrade the schema of the session database {database}: {source}")]
    Migrate {
        database: String,
        #[source]
        source: BoxError,
    },

    /// A statement failed; `action` says what the store was doing.
    #[error("could not {action} in the session database {database}: {source}")]
    Query {
        database: String,
        action: &'static str,
        #[source]
        source: BoxError,
    },

    #[error("session {session_id} does not exist in the session database {database}")]
    SessionNotFound {
        database: String,
        session_id: String,
    },

    #[error("session {session_id} already exists in the session database {database}")]
    SessionExists {
        database: String,
        session_id: String,
    },

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

    #[error("checkpoint {checkpoint_id} already exists in session {session_id}")]
    CheckpointExists {
        session_id: String,
        checkpoint_id: String,
    },

    /// A lease holder's write came after a later acquisition of the lock:
    /// another run took the session over.
    #[error(
        "session {session_id} was taken over by another run (its lock is at generation {current}, this run's was {generation}); nothing was written"
    )]
    Fenced {
        session_id: String,
        generation: i64,
        current: i64,
    },

    #[error("could not encode the {what} as JSON: {source}")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },

    #[error(
        "the session database {database} holds an unreadable {what} in session {session_id}: {reason}"
    )]
    Decode {
        database: String,
        session_id: String,
        what: &'static str,
        reason: String,
    },

    #[error("could not flush the session database {database} to disk: {source}")]
    Sync {
        database: String,
        #[source]
        source: io::Error,
    },

    #[error("could not write the export of session {session_id}: {source}")]
    ExportWrite {
        session_id: String,
        #[source]
        source: io::Error,
    },

    /// A line of a JSONL import is unreadable or out of place; lines count
    /// from 1.
    #[error("line {line} of the session import: {reason}")]
    ImportLine { line: usize, reason: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_database() {
        let err = StoreError::SessionNotFound {
            database: "/tmp/x/sessions.db".into(),
            session_id: "s1".into(),
        };
        assert_eq!(
            err.to_string(),
            "session s1 does not exist in the session database /tmp/x/sessions.db"
        );
    }

    #[test]
    fn a_boxed_source_is_shown_and_kept() {
        let err = StoreError::Query {
            database: "db".into(),
            action: "read the sessions",
            source: io::Error::other("disk on fire").into(),
        };
        assert_eq!(
            err.to_string(),
            "could not read the sessions in the session database db: disk on fire"
        );
        let source = std::error::Error::source(&err).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("disk on fire"));
    }
}
