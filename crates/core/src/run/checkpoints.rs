//! One checkpoint per answer that changes files: the workspace's files are
//! snapshotted (see [`crate::checkpoint`]) and the snapshot recorded in the
//! store against the answer's message, so the session can be rewound to how
//! the files were before that answer's first change.
//!
//! Invariants:
//! - The snapshot starts as soon as a call to a tool that may change files
//!   begins streaming (its git work overlaps the model's streaming), and the
//!   answer's first mutating call waits for it before it runs; no mutating
//!   call of the answer can have run before the snapshot started.
//! - One checkpoint per answer: rewinding goes to a message, and the state
//!   before an answer's first change is what a rewind to the message before
//!   it restores.
//! - A checkpoint that cannot be taken (no git, a full disk) is logged, said
//!   to the run's consumer ([`Event::CheckpointFailed`]: a `system` line, a
//!   notice) and the call still runs: a checkpoint protects the work, it
//!   must not stop it, but the user must know the work is not protected.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use gyre_protocol::Event;
use gyre_store::{Checkpoint, SessionStore};

use crate::checkpoint::Checkpointer;
use crate::events::EventSink;
use crate::id::new_id;
use crate::scheduler::BeforeRun;
use crate::session::now_ms;

/// A snapshot under way (or done), awaitable by several.
type Snapshot = Shared<BoxFuture<'static, Result<String, Arc<str>>>>;

/// The checkpoint of one answer, from its first snapshot to its record.
#[derive(Default)]
pub(super) struct AnswerCheckpoint {
    snapshot: Option<Snapshot>,
    recorded: bool,
}

impl AnswerCheckpoint {
    /// Starts the snapshot now (on its own task), unless one is under way.
    pub fn start(&mut self, checkpointer: &Arc<Checkpointer>) {
        if self.snapshot.is_some() {
            return;
        }
        let checkpointer = checkpointer.clone();
        let task = tokio::spawn(async move { checkpointer.snapshot().await });
        let snapshot = async move {
            match task.await {
                Ok(Ok(tree)) => Ok(tree),
                Ok(Err(error)) => Err(Arc::from(error.to_string())),
                Err(error) => Err(Arc::from(error.to_string())),
            }
        };
        self.snapshot = Some(snapshot.boxed().shared());
    }

    /// What the answer's first mutating call awaits before it runs; `None`
    /// for the calls after it.
    pub fn before_first_change(
        &mut self,
        checkpointer: &Arc<Checkpointer>,
        store: Arc<dyn SessionStore>,
        session_id: String,
        message_id: String,
        call_id: String,
        events: EventSink,
    ) -> Option<BeforeRun> {
        if self.recorded {
            return None;
        }
        self.recorded = true;
        self.start(checkpointer);
        let snapshot = self.snapshot.clone()?;
        Some(Box::pin(async move {
            let tree = match snapshot.await {
                Ok(tree) => tree,
                Err(error) => {
                    tracing::warn!(call = %call_id, "no checkpoint before the call: {error}");
                    events.emit(failed(call_id, &error)).await;
                    return;
                }
            };
            let checkpoint = Checkpoint {
                id: new_id(),
                message_id,
                call_id: Some(call_id.clone()),
                snapshot: tree,
                created_at_ms: now_ms(),
            };
            if let Err(error) = store.add_checkpoint(&session_id, &checkpoint).await {
                tracing::warn!("the checkpoint was not recorded: {error}");
                let error = format!("it was taken but not recorded: {error}");
                events.emit(failed(call_id, &error)).await;
            }
        }))
    }
}

/// The event that tells the user a call runs unprotected.
fn failed(call_id: String, error: &str) -> Event {
    Event::CheckpointFailed {
        call_id,
        message: format!(
            "no checkpoint before this change ({error}); a files-rewind cannot restore what it changes"
        ),
    }
}
