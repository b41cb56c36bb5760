//! `gyre sessions replay` and `gyre sessions rewind`: a stored session's
//! runs printed again as stream-json (no model is called), and the session
//! put back to a message (its files from the checkpoints under
//! `$GYRE_HOME/checkpoints`, and/or its conversation).

use std::path::{Path, PathBuf};

use gyre_core::checkpoint::Checkpointer;
use gyre_core::sessions::{RewindError, RewindScope, Rewound};
use gyre_store::StoreError;

use super::{Stored, not_found, write_stdout};
use gyre_exec::StreamJson;
use gyre_host::Exit;
use gyre_host::home::checkpoints_root;

pub(super) async fn replay(stored: &Stored, id: &str) -> Result<(), Exit> {
    let events = gyre_core::sessions::replay(stored.store.as_ref(), id)
        .await
        .map_err(|e| match e {
            StoreError::SessionNotFound { .. } => not_found(id, &stored.location),
            other => Exit::failure(format!("cannot read session {id}: {other}")),
        })?;
    // The catalogue's prices of the session's model (a replay does not
    // read the config): the result's `saved_usd` as the live run printed it.
    let pricing = stored
        .store
        .get_session(id)
        .await
        .ok()
        .flatten()
        .and_then(|meta| gyre_llm::catalog::lookup(&meta.model))
        .and_then(|info| info.pricing);
    let mut lines = StreamJson::new(id.to_string(), false).with_pricing(pricing);
    let text: Vec<String> = events
        .iter()
        .flat_map(|event| lines.lines(event))
        .map(|line| line.to_string())
        .collect();
    write_stdout(move |out| {
        for line in text {
            writeln!(out, "{line}")?;
        }
        Ok(())
    })
    .await
}

pub(super) async fn rewind(
    stored: &Stored,
    home: &Path,
    id: &str,
    to: &str,
    scope: RewindScope,
) -> Result<(), Exit> {
    let meta = stored
        .store
        .get_session(id)
        .await
        .map_err(|e| Exit::failure(format!("cannot read session {id}: {e}")))?
        .ok_or_else(|| not_found(id, &stored.location))?;
    let workspace = PathBuf::from(&meta.cwd);
    let checkpointer = Checkpointer::new(
        Checkpointer::dir_for(&checkpoints_root(home), &workspace),
        &workspace,
    );
    let rewound = gyre_core::sessions::rewind(stored.store.as_ref(), &checkpointer, id, to, scope)
        .await
        .map_err(|e| match e {
            RewindError::UnknownMessage(_) => Exit::usage(format!(
                "{e}; `gyre sessions show {id}` lists the message ids"
            )),
            RewindError::Store(StoreError::SessionNotFound { .. }) => {
                not_found(id, &stored.location)
            }
            other => Exit::failure(format!("cannot rewind session {id}: {other}")),
        })?;
    let line = describe(id, to, scope, &rewound);
    write_stdout(move |out| writeln!(out, "{line}")).await
}

fn describe(id: &str, to: &str, scope: RewindScope, rewound: &Rewound) -> String {
    let mut parts = Vec::new();
    if scope != RewindScope::FilesOnly {
        parts.push(format!("{} messages removed", rewound.messages_removed));
    }
    if scope != RewindScope::ConversationOnly {
        parts.push(match &rewound.files {
            Some(files) => format!(
                "files restored ({} written, {} removed)",
                files.written,
                files.removed.len()
            ),
            None => "files unchanged since then".to_string(),
        });
    }
    format!(
        "rewound {} to {to}: {}",
        gyre_core::short_id(id),
        parts.join("; ")
    )
}
