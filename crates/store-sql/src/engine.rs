//! The one implementation of [`SessionStore`], generic over the backends: a
//! backend lends a connection and names its database, the engine does the
//! rest with the statements of [`crate::sql`].
//!
//! Invariants:
//! - Each trait call takes one connection for its whole duration and is one
//!   transaction: a single statement in autocommit, or a write transaction
//!   ([`Dialect::begin_write`]) that is committed last; any early return
//!   drops it, which rolls it back.
//! - CPU work (JSON encoding) happens before a connection is taken, so no
//!   one waits on it.
//! - Errors name the backend's database; nothing panics on bad data.

mod commands;
mod history;
mod locking;
mod read;
mod write;

use std::future::Future;
use std::ops::DerefMut;
use std::time::Duration;

use futures::future::BoxFuture;
use gyre_protocol::{Message, Origin, Part, Role};
use gyre_store::{
    Checkpoint, Fence, LockAttempt, LockHolder, RunningCommand, SessionMeta, SessionRecord,
    SessionStore, StoreError, Write,
};
use sqlx::Database;

use crate::dialect::Dialect;
use crate::trouble::Trouble;

/// What a backend gives the engine.
pub(crate) trait Backend: Send + Sync {
    type Db: Dialect;
    /// A borrowed connection: a mutex guard, or one from a pool.
    type Conn<'a>: DerefMut<Target = <Self::Db as Database>::Connection> + Send
    where
        Self: 'a;

    fn conn(&self) -> impl Future<Output = Result<Self::Conn<'_>, StoreError>> + Send;

    /// The database as errors name it (never with a password).
    fn name(&self) -> &str;

    /// The body of [`SessionStore::sync`].
    fn flush(&self) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// ` (N free on …)` for a disk-full message; empty when unknown (a
    /// server's disk).
    fn free_space(&self) -> String {
        String::new()
    }

    /// What a person must make writable when a write is refused.
    fn write_target(&self) -> std::path::PathBuf {
        std::path::PathBuf::from(self.name())
    }

    /// Whether an I/O error means a full disk (SQLite cannot say).
    fn io_is_full(&self) -> bool {
        false
    }

    fn fail(&self, action: &'static str, source: sqlx::Error) -> StoreError {
        let database = self.name().to_owned();
        let trouble = match Self::Db::trouble(&source) {
            Trouble::Io if self.io_is_full() => Trouble::Full,
            trouble => trouble,
        };
        match trouble {
            Trouble::Corrupt => StoreError::Corrupt {
                database,
                source: Box::new(source),
            },
            Trouble::Full => StoreError::DiskFull {
                database,
                free: self.free_space(),
            },
            Trouble::ReadOnly => StoreError::ReadOnly {
                database,
                dir: self.write_target(),
                reason: source.to_string(),
            },
            Trouble::Io | Trouble::Other => crate::error::query(self.name(), action, source),
        }
    }

    fn session_not_found(&self, session_id: &str) -> StoreError {
        StoreError::SessionNotFound {
            database: self.name().to_owned(),
            session_id: session_id.to_owned(),
        }
    }

    fn session_exists(&self, session_id: &str) -> StoreError {
        StoreError::SessionExists {
            database: self.name().to_owned(),
            session_id: session_id.to_owned(),
        }
    }

    fn decode_error(&self, session_id: &str, what: &'static str, reason: String) -> StoreError {
        StoreError::Decode {
            database: self.name().to_owned(),
            session_id: session_id.to_owned(),
            what,
            reason,
        }
    }
}

/// Implements the trait for a backend by running the engine. A macro, not a
/// blanket `impl<B: Backend>`: the trait is gyre-store's, so it can only be
/// implemented here for this crate's own types.
macro_rules! session_store {
    ($store:ty) => {
        impl SessionStore for $store {
            fn create_session<'a>(
                &'a self,
                meta: &'a SessionMeta,
            ) -> BoxFuture<'a, Result<(), StoreError>> {
                Box::pin(write::create_session(self, meta))
            }

            fn append_message<'a>(
                &'a self,
                session_id: &'a str,
                message: &'a Message,
            ) -> BoxFuture<'a, Result<(), StoreError>> {
                Box::pin(write::append_message(self, session_id, message, None))
            }

            fn append_part<'a>(
                &'a self,
                session_id: &'a str,
                message_id: &'a str,
                part: &'a Part,
            ) -> BoxFuture<'a, Result<(), StoreError>> {
                Box::pin(write::append_part(self, session_id, message_id, part, None))
            }

            fn discard_message<'a>(
                &'a self,
                session_id: &'a str,
                message_id: &'a str,
            ) -> BoxFuture<'a, Result<(), StoreError>> {
                Box::pin(write::discard_message(self, session_id, message_id, None))
            }

            fn save_state<'a>(
                &'a self,
                session_id: &'a str,
                state: &'a serde_json::Value,
            ) -> BoxFuture<'a, Result<(), StoreError>> {
                Box::pin(write::save_state(self, session_id, state, None))
            }

            fn write_fenced<'a>(
                &'a self,
                fence: &'a Fence,
                write: Write<'a>,
            ) -> BoxFuture<'a, Result<(), StoreError>> {
                Box::pin(fenced_write(self, fence, write))
            }

            fn load_state<'a>(
                &'a self,
                session_id: &'a str,
            ) -> BoxFuture<'a, Result<Option<serde_json::Value>, StoreError>> {
                Box::pin(read::load_state(self, session_id))
            }

            fn load_messages<'a>(
                &'a self,
                session_id: &'a str,
            ) -> BoxFuture<'a, Result<Vec<Message>, StoreError>> {
                Box::pin(read::load_messages(self, session_id))
            }

            fn get_session<'a>(
                &'a self,
                session_id: &'a str,
            ) -> BoxFuture<'a, Result<Option<SessionMeta>, StoreError>> {
                Box::pin(read::get_session(self, session_id))
            }

            fn list_sessions(&self) -> BoxFuture<'_, Result<Vec<SessionMeta>, StoreError>> {
                Box::pin(read::list_sessions(self))
            }

            fn list_children<'a>(
                &'a self,
                parent_id: &'a str,
            ) -> BoxFuture<'a, Result<Vec<SessionMeta>, StoreError>> {
                Box::pin(read::list_children(self, parent_id))
            }

            fn sync(&self) -> BoxFuture<'_, Result<(), StoreError>> {
                Box::pin(self.flush())
            }

            fn delete_session<'a>(
                &'a self,
                session_id: &'a str,
            ) -> BoxFuture<'a, Result<bool, StoreError>> {
                Box::pin(write::delete_session(self, session_id))
            }

            fn try_lock<'a>(
                &'a self,
                session_id: &'a str,
                holder: &'a LockHolder,
                lease: Duration,
            ) -> BoxFuture<'a, Result<LockAttempt, StoreError>> {
                Box::pin(locking::try_lock(self, session_id, holder, lease))
            }

            fn renew_lock<'a>(
                &'a self,
                session_id: &'a str,
                holder: &'a LockHolder,
            ) -> BoxFuture<'a, Result<bool, StoreError>> {
                Box::pin(locking::renew_lock(self, session_id, holder))
            }

            fn unlock<'a>(
                &'a self,
                session_id: &'a str,
                holder: &'a LockHolder,
            ) -> BoxFuture<'a, Result<(), StoreError>> {
                Box::pin(locking::unlock(self, session_id, holder))
            }

            fn add_checkpoint<'a>(
                &'a self,
                session_id: &'a str,
                checkpoint: &'a Checkpoint,
            ) -> BoxFuture<'a, Result<(), StoreError>> {
                Box::pin(history::add_checkpoint(self, session_id, checkpoint, None))
            }

            fn record_command<'a>(
                &'a self,
                session_id: &'a str,
                command: &'a RunningCommand,
            ) -> BoxFuture<'a, Result<(), StoreError>> {
                Box::pin(commands::record_command(self, session_id, command, None))
            }

            fn forget_commands<'a>(
                &'a self,
                session_id: &'a str,
                call_id: Option<&'a str>,
            ) -> BoxFuture<'a, Result<(), StoreError>> {
                Box::pin(commands::forget_commands(self, session_id, call_id, None))
            }

            fn running_commands<'a>(
                &'a self,
                session_id: &'a str,
            ) -> BoxFuture<'a, Result<Vec<RunningCommand>, StoreError>> {
                Box::pin(commands::running_commands(self, session_id))
            }

            fn checkpoints<'a>(
                &'a self,
                session_id: &'a str,
            ) -> BoxFuture<'a, Result<Vec<Checkpoint>, StoreError>> {
                Box::pin(read::checkpoints(self, session_id))
            }

            fn truncate_after<'a>(
                &'a self,
                session_id: &'a str,
                message_id: &'a str,
            ) -> BoxFuture<'a, Result<u64, StoreError>> {
                Box::pin(history::truncate_after(self, session_id, message_id))
            }

            fn fork_session<'a>(
                &'a self,
                from_id: &'a str,
                new_meta: &'a SessionMeta,
                through: Option<&'a str>,
            ) -> BoxFuture<'a, Result<(), StoreError>> {
                Box::pin(history::fork_session(self, from_id, new_meta, through))
            }

            fn export_session<'a>(
                &'a self,
                session_id: &'a str,
            ) -> BoxFuture<'a, Result<SessionRecord, StoreError>> {
                Box::pin(read::export_session(self, session_id))
            }

            fn import_session<'a>(
                &'a self,
                record: &'a SessionRecord,
            ) -> BoxFuture<'a, Result<(), StoreError>> {
                Box::pin(history::import_session(self, record))
            }
        }
    };
}

/// A lease holder's write: the plain write with its fence.
async fn fenced_write<B: Backend>(
    b: &B,
    fence: &Fence,
    write: Write<'_>,
) -> Result<(), StoreError> {
    let (session_id, generation) = (fence.session_id.as_str(), Some(fence.generation));
    match write {
        Write::Message(message) => write::append_message(b, session_id, message, generation).await,
        Write::Part { message_id, part } => {
            write::append_part(b, session_id, message_id, part, generation).await
        }
        Write::Discard { message_id } => {
            write::discard_message(b, session_id, message_id, generation).await
        }
        Write::State(state) => write::save_state(b, session_id, state, generation).await,
        Write::Checkpoint(checkpoint) => {
            history::add_checkpoint(b, session_id, checkpoint, generation).await
        }
        Write::Command(command) => {
            commands::record_command(b, session_id, command, generation).await
        }
        Write::ForgetCommands { call_id } => {
            commands::forget_commands(b, session_id, call_id, generation).await
        }
    }
}

session_store!(crate::SqliteStore);
session_store!(crate::PgStore);

/// `usize` positions as the BIGINT the schema stores.
pub(crate) fn as_int(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(crate) fn encode_part(part: &Part) -> Result<String, StoreError> {
    serde_json::to_string(part).map_err(|source| StoreError::Encode {
        what: "message part",
        source,
    })
}

/// NULL for the conversation itself, so most rows carry nothing extra.
pub(crate) fn encode_origin(origin: &Origin) -> Result<Option<String>, StoreError> {
    if origin.is_conversation() {
        return Ok(None);
    }
    serde_json::to_string(origin)
        .map(Some)
        .map_err(|source| StoreError::Encode {
            what: "message origin",
            source,
        })
}

pub(crate) fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

pub(crate) fn parse_role(name: Option<&str>) -> Option<Role> {
    match name? {
        "user" => Some(Role::User),
        "assistant" => Some(Role::Assistant),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_round_trip_through_their_names() {
        for role in [Role::User, Role::Assistant] {
            assert_eq!(parse_role(Some(role_name(role))), Some(role));
        }
        assert_eq!(parse_role(Some("system")), None);
        assert_eq!(parse_role(None), None);
    }
}
