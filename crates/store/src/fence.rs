//! Fencing tokens: the writes of a lease holder carry the generation its
//! lock was acquired with, and the store refuses them once a later
//! acquisition happened (Kleppmann's fencing-token argument, as etcd's
//! revisions and ZooKeeper's zxids are used for it).
//!
//! A lease alone cannot keep a paused holder (SIGSTOP, a frozen cgroup, a
//! suspended laptop, a long GC or swap storm) from writing after its lease
//! ran out and another holder took over: the paused process cannot know it
//! was paused. So the check is made where the write lands, in the same
//! transaction as the write: the session's highest issued generation must
//! still be the writer's.
//!
//! Invariants:
//! - [`Fenced`] routes every write to its session through
//!   [`SessionStore::write_fenced`]; reads, and writes to other sessions (a
//!   subagent's own), pass through unchanged.
//! - A refused write changes nothing and returns
//!   [`StoreError::Fenced`](crate::StoreError::Fenced).
//! - Fencing costs no extra round trip: the check is a condition on the
//!   session-row update every write already starts with.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use gyre_protocol::{Message, Part};

use crate::{
    Checkpoint, LockAttempt, LockHolder, RunningCommand, SessionMeta, SessionRecord, SessionStore,
    StoreError,
};

/// A lease holder's claim on a session: its lock's generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub session_id: String,
    /// From [`LockAttempt::Acquired`].
    pub generation: i64,
}

/// One write a lease holder makes to its session.
#[derive(Debug, Clone, Copy)]
pub enum Write<'a> {
    /// [`SessionStore::append_message`].
    Message(&'a Message),
    /// [`SessionStore::append_part`].
    Part { message_id: &'a str, part: &'a Part },
    /// [`SessionStore::discard_message`].
    Discard { message_id: &'a str },
    /// [`SessionStore::save_state`].
    State(&'a serde_json::Value),
    /// [`SessionStore::add_checkpoint`].
    Checkpoint(&'a Checkpoint),
    /// [`SessionStore::record_command`].
    Command(&'a RunningCommand),
    /// [`SessionStore::forget_commands`].
    ForgetCommands { call_id: Option<&'a str> },
}

/// A store whose writes to one session are fenced by a lease's generation.
pub struct Fenced {
    inner: Arc<dyn SessionStore>,
    fence: Fence,
}

impl Fenced {
    pub fn new(inner: Arc<dyn SessionStore>, fence: Fence) -> Self {
        Fenced { inner, fence }
    }

    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    fn write<'a>(
        &'a self,
        session_id: &'a str,
        write: Write<'a>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        if session_id == self.fence.session_id {
            self.inner.write_fenced(&self.fence, write)
        } else {
            match write {
                Write::Message(m) => self.inner.append_message(session_id, m),
                Write::Part { message_id, part } => {
                    self.inner.append_part(session_id, message_id, part)
                }
                Write::Discard { message_id } => self.inner.discard_message(session_id, message_id),
                Write::State(state) => self.inner.save_state(session_id, state),
                Write::Checkpoint(c) => self.inner.add_checkpoint(session_id, c),
                Write::Command(c) => self.inner.record_command(session_id, c),
                Write::ForgetCommands { call_id } => {
                    self.inner.forget_commands(session_id, call_id)
                }
            }
        }
    }
}

impl std::fmt::Debug for Fenced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fenced")
            .field("fence", &self.fence)
            .finish_non_exhaustive()
    }
}

impl SessionStore for Fenced {
    fn create_session<'a>(
        &'a self,
        meta: &'a SessionMeta,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.create_session(meta)
    }

    fn append_message<'a>(
        &'a self,
        session_id: &'a str,
        message: &'a Message,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.write(session_id, Write::Message(message))
    }

    fn append_part<'a>(
        &'a self,
        session_id: &'a str,
        message_id: &'a str,
        part: &'a Part,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.write(session_id, Write::Part { message_id, part })
    }

    fn discard_message<'a>(
        &'a self,
        session_id: &'a str,
        message_id: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.write(session_id, Write::Discard { message_id })
    }

    fn save_state<'a>(
        &'a self,
        session_id: &'a str,
        state: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.write(session_id, Write::State(state))
    }

    fn write_fenced<'a>(
        &'a self,
        fence: &'a Fence,
        write: Write<'a>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.write_fenced(fence, write)
    }

    fn load_state<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, StoreError>> {
        self.inner.load_state(session_id)
    }

    fn load_messages<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Message>, StoreError>> {
        self.inner.load_messages(session_id)
    }

    fn get_session<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<SessionMeta>, StoreError>> {
        self.inner.get_session(session_id)
    }

    fn list_sessions(&self) -> BoxFuture<'_, Result<Vec<SessionMeta>, StoreError>> {
        self.inner.list_sessions()
    }

    fn list_children<'a>(
        &'a self,
        parent_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<SessionMeta>, StoreError>> {
        self.inner.list_children(parent_id)
    }

    fn sync(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        self.inner.sync()
    }

    fn delete_session<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.inner.delete_session(session_id)
    }

    fn try_lock<'a>(
        &'a self,
        session_id: &'a str,
        holder: &'a LockHolder,
        lease: Duration,
    ) -> BoxFuture<'a, Result<LockAttempt, StoreError>> {
        self.inner.try_lock(session_id, holder, lease)
    }

    fn renew_lock<'a>(
        &'a self,
        session_id: &'a str,
        holder: &'a LockHolder,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.inner.renew_lock(session_id, holder)
    }

    fn unlock<'a>(
        &'a self,
        session_id: &'a str,
        holder: &'a LockHolder,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.unlock(session_id, holder)
    }

    fn add_checkpoint<'a>(
        &'a self,
        session_id: &'a str,
        checkpoint: &'a Checkpoint,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.write(session_id, Write::Checkpoint(checkpoint))
    }

    fn record_command<'a>(
        &'a self,
        session_id: &'a str,
        command: &'a RunningCommand,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.write(session_id, Write::Command(command))
    }

    fn forget_commands<'a>(
        &'a self,
        session_id: &'a str,
        call_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.write(session_id, Write::ForgetCommands { call_id })
    }

    fn running_commands<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<RunningCommand>, StoreError>> {
        self.inner.running_commands(session_id)
    }

    fn checkpoints<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Checkpoint>, StoreError>> {
        self.inner.checkpoints(session_id)
    }

    fn truncate_after<'a>(
        &'a self,
        session_id: &'a str,
        message_id: &'a str,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        self.inner.truncate_after(session_id, message_id)
    }

    fn fork_session<'a>(
        &'a self,
        from_id: &'a str,
        new_meta: &'a SessionMeta,
        through: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.fork_session(from_id, new_meta, through)
    }

    fn export_session<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<SessionRecord, StoreError>> {
        self.inner.export_session(session_id)
    }

    fn import_session<'a>(
        &'a self,
        record: &'a SessionRecord,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.import_session(record)
    }
}
