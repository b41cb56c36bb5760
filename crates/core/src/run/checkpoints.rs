//! A checkpoint before each mutating call: the workspace's files are
//! snapshotted (see [`crate::checkpoint`]) and the snapshot recorded in the
//! store against the message that holds the call, so the session can be
//! rewound to how the files were before it.
//!
//! A checkpoint that cannot be taken (no git, a full disk) is logged and the
//! call still runs: a checkpoint protects the work, it must not stop it.

use std::sync::Arc;

use gyre_store::{Checkpoint, SessionStore};

use crate::checkpoint::Checkpointer;
use crate::scheduler::BeforeRun;
use crate::session::{new_id, now_ms};

pub(super) fn before_mutation(
    checkpointer: Arc<Checkpointer>,
    store: Arc<dyn SessionStore>,
    session_id: String,
    message_id: String,
    call_id: String,
) -> BeforeRun {
    Box::pin(async move {
        let snapshot = match checkpointer.snapshot().await {
            Ok(tree) => tree,
            Err(error) => {
                tracing::warn!(call = %call_id, "no checkpoint before the call: {error}");
                return;
            }
        };
        let checkpoint = Checkpoint {
            id: new_id(),
            message_id,
            call_id: Some(call_id),
            snapshot,
            created_at_ms: now_ms(),
        };
        if let Err(error) = store.add_checkpoint(&session_id, &checkpoint).await {
            tracing::warn!(call = ?checkpoint.call_id, "the checkpoint was not recorded: {error}");
        }
    })
}
