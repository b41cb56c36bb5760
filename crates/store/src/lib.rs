//! Session storage as the loop sees it: the [`SessionStore`] trait, the
//! types it speaks in ([`SessionMeta`], [`Checkpoint`], [`SessionRecord`],
//! [`LockHolder`], [`LockAttempt`]), [`StoreError`], [`Location`] (where a
//! store lives, as data), and the JSONL export/import of a session
//! ([`jsonl`]), written against the trait.
//!
//! The backends (SQLite, PostgreSQL) and opening a [`Location`] are in
//! gyre-store-sql, so that gyre-core, which needs only the trait and these
//! types, builds no database driver.
//!
//! Invariants every backend keeps:
//! - Every call is one committed transaction: a killed process loses nothing
//!   that a returned call wrote, and a failed call writes nothing.
//! - [`SessionStore::sync`] makes everything written so far durable on disk
//!   (the loop calls it at turn boundaries).
//! - Messages come back in the order they were appended, each with its parts in
//!   the order they were appended ([`SessionStore::append_part`] adds to an
//!   existing message, so a turn can be recorded part by part, before each part
//!   is acted on). Checkpoints come back in the order they were added.
//! - A write carrying a [`Fence`] ([`SessionStore::write_fenced`]) is
//!   refused in its own transaction when the session's lock was acquired
//!   again since the fence's generation was issued.
//! - A subagent's session names the session that spawned it
//!   ([`SessionMeta::parent_id`]); the store records and looks up that link
//!   but never follows it: deleting a session deletes that session only.
//!
//! Must not hold: a database driver (no `sqlx` in its dependencies or its
//! API: a driver's error is boxed in [`StoreError`]), SQL, or loop logic.

mod error;
mod fence;
pub mod jsonl;
mod location;
mod lock;

use std::time::Duration;

use futures::future::BoxFuture;
use gyre_protocol::{Message, Part};
use serde::{Deserialize, Serialize};

pub use error::{BoxError, StoreError};
pub use fence::{Fence, Fenced, Write};
pub use location::Location;
pub use lock::{LockAttempt, LockHolder};

/// What is known about a session besides its messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMeta {
    pub id: String,
    /// The working directory the session ran in.
    pub cwd: String,
    pub provider: String,
    pub model: String,
    /// The first prompt, shortened, for listings.
    pub title: String,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    /// The session whose run spawned this one: set for a subagent's session
    /// (the `task` tool's child loop), `None` for a session a person
    /// started. The store records the link and looks it up
    /// ([`SessionStore::list_children`]) but enforces nothing: the parent
    /// need not exist (a child may be imported alone, or outlive a parent
    /// deleted by itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
}

/// A point the workspace can be restored to: what the files were before a
/// mutating tool changed them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Unique within the session.
    pub id: String,
    /// The message (of the same session) the checkpoint belongs to: cutting
    /// the history before it removes the checkpoint too.
    pub message_id: String,
    /// The tool call about to change the files, if one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Opaque to the store: whatever names the saved files (e.g. a shadow git
    /// tree id the core makes).
    pub snapshot: String,
    pub created_at_ms: i64,
}

/// A command a run started that may still be running: what a later run of
/// the session needs to find it and stop it (a run paused past its lease,
/// or one whose process survived somehow, may have left it running).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningCommand {
    /// The tool call that started it.
    pub call_id: String,
    /// The machine it runs on (only there can it be found).
    pub host: String,
    /// Its process group (led by the command's shell).
    pub pgid: i64,
    /// When the group's leader started, in the kernel's clock ticks since
    /// boot (`/proc/PID/stat`'s `starttime`): a reused pid never matches.
    pub started: i64,
}

/// Everything of one session: what an export holds and an import restores.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    pub meta: SessionMeta,
    pub state: Option<serde_json::Value>,
    pub messages: Vec<Message>,
    pub checkpoints: Vec<Checkpoint>,
}

/// Where sessions live.
pub trait SessionStore: Send + Sync {
    fn create_session<'a>(&'a self, meta: &'a SessionMeta)
    -> BoxFuture<'a, Result<(), StoreError>>;

    /// Appends a whole message (possibly with no parts yet).
    fn append_message<'a>(
        &'a self,
        session_id: &'a str,
        message: &'a Message,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Appends one part to a message appended before.
    fn append_part<'a>(
        &'a self,
        session_id: &'a str,
        message_id: &'a str,
        part: &'a Part,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Removes a message and its parts (and checkpoints): an answer cut off by
    /// a failed stream that will be asked for again. Only the newest message
    /// of a session is ever discarded, in one transaction (all of it or
    /// nothing).
    fn discard_message<'a>(
        &'a self,
        session_id: &'a str,
        message_id: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// One of the writes above, made by the holder of the session's lock:
    /// refused with [`Fenced`](StoreError::Fenced), in the same transaction
    /// and writing nothing, when the lock was acquired since (by a takeover,
    /// or after a release) with a later generation than `fence`'s. Errors
    /// otherwise as the plain write's.
    fn write_fenced<'a>(
        &'a self,
        fence: &'a Fence,
        write: Write<'a>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Replaces the session's loop state (the core's serialised `QueryState`).
    fn save_state<'a>(
        &'a self,
        session_id: &'a str,
        state: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    fn load_state<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, StoreError>>;

    fn load_messages<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Message>, StoreError>>;

    fn get_session<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<SessionMeta>, StoreError>>;

    /// Every session, newest (last updated) first, subagents' sessions
    /// included.
    fn list_sessions(&self) -> BoxFuture<'_, Result<Vec<SessionMeta>, StoreError>>;

    /// The sessions whose [`parent_id`](SessionMeta::parent_id) is
    /// `parent_id`, oldest (`created_at_ms`, then id) first; empty when there
    /// are none, also when there is no such parent.
    fn list_children<'a>(
        &'a self,
        parent_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<SessionMeta>, StoreError>>;

    /// Makes everything written so far durable on disk.
    fn sync(&self) -> BoxFuture<'_, Result<(), StoreError>>;

    /// Removes the session and everything of it (messages, parts, state,
    /// checkpoints, its lock) in one transaction; false when there was no
    /// such session. A holder of its lock finds the lock lost. Its children
    /// (sessions naming it as parent) are left as they are: a caller that
    /// wants them gone deletes them itself ([`SessionStore::list_children`]).
    fn delete_session<'a>(&'a self, session_id: &'a str)
    -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Tries to take the session's single-flight lock for `holder`, without
    /// waiting: acquired when nobody holds it, when `holder`'s token does
    /// (re-entry, which renews it), or when the holder is gone — it did not
    /// renew within `lease`, or it runs on `holder.host` and its pid no
    /// longer exists — in which case the lock is taken over atomically (of
    /// several contenders exactly one wins). A new acquisition or a takeover
    /// gets the next generation of the session's lock (its fencing token);
    /// re-entry keeps the holder's. Otherwise busy, naming the
    /// holder. [`SessionNotFound`](StoreError::SessionNotFound) when there
    /// is no such session.
    ///
    /// A holder must renew more often than any contender's lease.
    fn try_lock<'a>(
        &'a self,
        session_id: &'a str,
        holder: &'a LockHolder,
        lease: Duration,
    ) -> BoxFuture<'a, Result<LockAttempt, StoreError>>;

    /// Renews the lock `holder` holds; false when it does not hold it any
    /// more (it was taken over, released, or the session deleted).
    fn renew_lock<'a>(
        &'a self,
        session_id: &'a str,
        holder: &'a LockHolder,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Releases the lock if `holder`'s token holds it; otherwise does nothing.
    fn unlock<'a>(
        &'a self,
        session_id: &'a str,
        holder: &'a LockHolder,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Records a command a run of the session started (replacing a record
    /// of the same call and group).
    fn record_command<'a>(
        &'a self,
        session_id: &'a str,
        command: &'a RunningCommand,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Forgets the commands recorded for `call_id` (all of the session's
    /// when `None`).
    fn forget_commands<'a>(
        &'a self,
        session_id: &'a str,
        call_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The commands recorded for the session, oldest first.
    fn running_commands<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<RunningCommand>, StoreError>>;

    /// Records a checkpoint of a message of the session
    /// ([`MessageNotFound`](StoreError::MessageNotFound) if the message is not
    /// in it, [`CheckpointExists`](StoreError::CheckpointExists) if the id is
    /// taken).
    fn add_checkpoint<'a>(
        &'a self,
        session_id: &'a str,
        checkpoint: &'a Checkpoint,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The session's checkpoints in the order they were added.
    fn checkpoints<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Checkpoint>, StoreError>>;

    /// Removes every message appended after `message_id` (with their parts
    /// and checkpoints), keeping that message; how many messages went.
    /// [`MessageNotFound`](StoreError::MessageNotFound) when the message is
    /// not in the session. The state is left as it is.
    fn truncate_after<'a>(
        &'a self,
        session_id: &'a str,
        message_id: &'a str,
    ) -> BoxFuture<'a, Result<u64, StoreError>>;

    /// Creates the session `new_meta` holding copies of `from_id`'s messages
    /// (same ids, order, parts and origins) up to and including `through`
    /// (all when `None`), their checkpoints, and `from_id`'s state; the
    /// source is left unchanged. `new_meta` is stored as given.
    fn fork_session<'a>(
        &'a self,
        from_id: &'a str,
        new_meta: &'a SessionMeta,
        through: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Everything of a session (meta, state, messages, checkpoints) read from
    /// one snapshot: what [`jsonl::export`] writes.
    fn export_session<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<SessionRecord, StoreError>>;

    /// Creates a whole session in one transaction, keeping `record.meta`
    /// exactly as given (its `updated_at_ms` too): what
    /// [`jsonl::import`] writes. [`SessionExists`](StoreError::SessionExists)
    /// when the id is taken; nothing is written on any error.
    fn import_session<'a>(
        &'a self,
        record: &'a SessionRecord,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
}
