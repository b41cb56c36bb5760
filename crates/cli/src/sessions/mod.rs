//! `gyre sessions …`: stored sessions listed, shown, exported, imported and
//! deleted; and ([`start`]) which session a run goes on in.
//!
//! Invariants:
//! - Every subcommand opens the store where runs put sessions
//!   (`crate::store`): `GYRE_DATABASE_URL`, else `$GYRE_HOME/sessions.db`.
//! - An id that names no session is exit 2 with one line naming it (and the
//!   store, without any password).
//! - stdout carries only the command's output, written on a blocking thread;
//!   a reader that stops reading (`| head`) ends the command quietly.
//! - What is printed or exported passes through the redactor built from the
//!   current directory's config (`[redact] patterns`) and the provider keys
//!   in the environment.
//!
//! Each subcommand is one arm of [`run`] and one function; `replay` and
//! `rewind` are in [`history`].

mod history;
mod render;
mod start;
mod transfer;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gyre_core::Redactor;
use gyre_core::sessions::RewindScope;
use gyre_store::{Location, SessionStore, StoreError};

use crate::args::SessionsCommand;
use crate::config::{Config, user_config_dir};
use crate::exit::{Exit, SUCCESS};

pub use history::checkpoints_root;
pub use start::{NewSession, SessionChoice, not_found, open_session};

/// The store a subcommand works on, and where it is (for messages).
struct Stored {
    store: Arc<dyn SessionStore>,
    location: Location,
}

/// Runs one `gyre sessions` subcommand.
pub async fn run(command: SessionsCommand, home: &Path) -> Result<i32, Exit> {
    let location = crate::store::location(home)?;
    let stored = Stored {
        store: crate::store::open(&location).await?,
        location,
    };
    match command {
        SessionsCommand::List { here } => {
            let scope = if here {
                Scope::Directory(current_dir()?.display().to_string())
            } else {
                Scope::All
            };
            list(&stored, scope, redactor()?).await
        }
        SessionsCommand::Show { id } => show(&stored, &id, redactor()?).await,
        SessionsCommand::Export { id } => {
            let redactor = redactor()?;
            transfer::export(stored.store.as_ref(), &stored.location, &id, redactor).await
        }
        SessionsCommand::Import { file } => {
            let id = transfer::import(stored.store.as_ref(), &stored.location, file).await?;
            write_stdout(move |out| writeln!(out, "{id}")).await
        }
        SessionsCommand::Delete { id } => delete(&stored, &id).await,
        SessionsCommand::Replay { id } => history::replay(&stored, &id).await,
        SessionsCommand::Rewind {
            id,
            to,
            files_only,
            conversation_only,
        } => {
            let scope = match (files_only, conversation_only) {
                (true, _) => RewindScope::FilesOnly,
                (_, true) => RewindScope::ConversationOnly,
                _ => RewindScope::FilesAndConversation,
            };
            history::rewind(&stored, home, &id, &to, scope).await
        }
    }?;
    Ok(SUCCESS)
}

/// Which sessions `list` prints.
enum Scope {
    All,
    /// Those stored with this (canonical) working directory.
    Directory(String),
}

async fn list(stored: &Stored, scope: Scope, redactor: Redactor) -> Result<(), Exit> {
    let sessions = stored
        .store
        .list_sessions()
        .await
        .map_err(|e| Exit::failure(format!("cannot list the sessions: {e}")))?;
    let lines: Vec<String> = sessions
        .iter()
        .filter(|meta| match &scope {
            Scope::All => true,
            Scope::Directory(cwd) => &meta.cwd == cwd,
        })
        .map(|meta| render::list_line(meta, &redactor))
        .collect();
    write_stdout(move |out| {
        for line in &lines {
            writeln!(out, "{line}")?;
        }
        Ok(())
    })
    .await
}

async fn show(stored: &Stored, id: &str, redactor: Redactor) -> Result<(), Exit> {
    let read_error = |e: StoreError| match e {
        StoreError::SessionNotFound { .. } => not_found(id, &stored.location),
        other => Exit::failure(format!("cannot read session {id}: {other}")),
    };
    let meta = stored
        .store
        .get_session(id)
        .await
        .map_err(read_error)?
        .ok_or_else(|| not_found(id, &stored.location))?;
    let messages = stored.store.load_messages(id).await.map_err(read_error)?;
    let text = render::show(&meta, &messages, &redactor);
    write_stdout(move |out| out.write_all(text.as_bytes())).await
}

async fn delete(stored: &Stored, id: &str) -> Result<(), Exit> {
    let deleted = stored
        .store
        .delete_session(id)
        .await
        .map_err(|e| Exit::failure(format!("cannot delete session {id}: {e}")))?;
    if !deleted {
        return Err(not_found(id, &stored.location));
    }
    let line = format!("deleted {id}");
    write_stdout(move |out| writeln!(out, "{line}")).await
}

/// The redactor of the current directory's config.
fn redactor() -> Result<Redactor, Exit> {
    let cwd = current_dir()?;
    let config =
        Config::load(user_config_dir().as_deref(), &cwd).map_err(|e| Exit::usage(e.to_string()))?;
    crate::launch::redactor(&config)
}

/// The current directory in the canonical form sessions are stored with.
fn current_dir() -> Result<PathBuf, Exit> {
    std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .map_err(|e| Exit::usage(format!("cannot read the current directory: {e}")))
}

/// Runs `work` on a blocking thread.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, Exit> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Exit::failure(format!("internal error: {e}")))
}

/// Writes to stdout (buffered, flushed) on a blocking thread. A closed
/// stdout is the reader's choice, not a failure.
async fn write_stdout(
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()> + Send + 'static,
) -> Result<(), Exit> {
    let written = blocking(move || {
        let mut out = BufWriter::new(std::io::stdout().lock());
        write(&mut out)?;
        out.flush()
    })
    .await?;
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Exit::failure(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(()),
    }
}
