//! Session storage: the [`SessionStore`] trait and its SQLite backend.
//!
//! Invariants:
//! - Every write is committed before the call returns (SQLite in WAL mode): a
//!   killed process loses nothing that a returned call wrote.
//! - [`SessionStore::sync`] makes everything written so far durable on disk
//!   (the loop calls it at turn boundaries).
//! - Messages come back in the order they were appended, each with its parts in
//!   the order they were appended ([`SessionStore::append_part`] adds to an
//!   existing message, so a turn can be recorded part by part, before each part
//!   is acted on).
//! - The store holds no loop logic.

mod error;
mod sqlite;

use futures::future::BoxFuture;
use gyre_protocol::{Message, Part};
use serde::{Deserialize, Serialize};

pub use error::StoreError;
pub use sqlite::SqliteStore;

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

    /// Removes a message and its parts: an answer cut off by a failed stream
    /// that will be asked for again. Only the newest message of a session is
    /// ever discarded, in one transaction (all of it or nothing).
    fn discard_message<'a>(
        &'a self,
        session_id: &'a str,
        message_id: &'a str,
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

    /// Every session, newest (last updated) first.
    fn list_sessions(&self) -> BoxFuture<'_, Result<Vec<SessionMeta>, StoreError>>;

    /// Makes everything written so far durable on disk.
    fn sync(&self) -> BoxFuture<'_, Result<(), StoreError>>;
}
