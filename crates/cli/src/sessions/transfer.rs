//! `gyre sessions export ID` and `gyre sessions import FILE`: a session as
//! JSON Lines (the format is `gyre_store::jsonl`'s, documented in the
//! README), out and in.
//!
//! Invariants:
//! - No secret leaves: every exported message goes through
//!   [`Redactor::redact_message`], and the title (the first prompt's first
//!   line) through the redactor too.
//! - The store is read from one snapshot and written in one transaction
//!   (the store's `export_session` / `import_session`); the lines are
//!   written and read on a blocking thread, never on the async runtime.
//! - An import whose input is not a gyre export, or whose id already
//!   exists, is bad usage (exit 2) and writes nothing.

use std::io::BufReader;
use std::path::PathBuf;

use gyre_core::Redactor;
use gyre_store::{Location, SessionRecord, SessionStore, StoreError, jsonl};

use gyre_host::Exit;
use gyre_host::session_choice::not_found;

use crate::sessions::{blocking, write_stdout};

/// Writes session `id` to stdout, redacted.
pub async fn export(
    store: &dyn SessionStore,
    location: &Location,
    id: &str,
    redactor: Redactor,
) -> Result<(), Exit> {
    let mut record = store.export_session(id).await.map_err(|e| match e {
        StoreError::SessionNotFound { .. } => not_found(id, location),
        other => Exit::failure(format!("cannot read session {id}: {other}")),
    })?;
    redactor.redact_string(&mut record.meta.title);
    // The loop's state holds text too (each run's final answer).
    if let Some(state) = record.state.as_mut() {
        redactor.redact_json(state);
    }
    write_stdout(move |out| {
        jsonl::write_record(&record, &mut &mut *out, &|message| {
            redactor.redact_message(message);
        })
    })
    .await
}

/// Creates the session exported in `file` (`-`: stdin); its id.
pub async fn import(
    store: &dyn SessionStore,
    location: &Location,
    file: PathBuf,
) -> Result<String, Exit> {
    let record = blocking(move || read(&file)).await??;
    let id = record.meta.id.clone();
    store.import_session(&record).await.map_err(|e| match e {
        StoreError::SessionExists { .. } => Exit::usage(format!(
            "session {id} already exists in {location}; delete it first (`gyre sessions delete {id}`) to import it again"
        )),
        other => Exit::failure(format!("cannot import session {id}: {other}")),
    })?;
    Ok(id)
}

fn read(file: &std::path::Path) -> Result<SessionRecord, Exit> {
    let (name, record) = if file.as_os_str() == "-" {
        (
            "stdin".to_owned(),
            jsonl::read_record(std::io::stdin().lock()),
        )
    } else {
        let name = file.display().to_string();
        let opened = std::fs::File::open(file)
            .map_err(|e| Exit::usage(format!("cannot read {name}: {e}")))?;
        let record = jsonl::read_record(BufReader::new(opened));
        (name, record)
    };
    record.map_err(|e| Exit::usage(format!("{name} is not a gyre session export: {e}")))
}
