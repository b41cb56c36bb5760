//! `gyre sessions …`: stored sessions listed, shown, exported, imported and
//! deleted (which session a run goes on in is `gyre_host::session_choice`).
//!
//! Invariants:
//! - Every subcommand opens the store where runs put sessions
//!   (`gyre_host::store`): `GYRE_DATABASE_URL`, else `$GYRE_HOME/sessions.db`.
//! - An id that names no session is exit 2 with one line naming it (and the
//!   store, without any password). An id may be given as a prefix (the
//!   short form, `gyre_core::short_id`); one naming several sessions is
//!   exit 2 naming them.
//! - Output names sessions by their short form, except `list`'s leading id
//!   and `show`'s `session` line, which are the full id.
//! - stdout carries only the command's output, written on a blocking thread;
//!   a reader that stops reading (`| head`) ends the command quietly.
//! - Subagents' sessions (those with a parent) are steps of their parents'
//!   runs: `list` leaves them out unless asked (`--all`), `show` names a
//!   session's parent and children, and `delete` takes the children with
//!   the parent.
//! - What is printed or exported passes through the redactor built from the
//!   current directory's config (`[redact] patterns`) and the provider keys
//!   in the environment.
//!
//! Each subcommand is one arm of [`run`] and one function; `replay` and
//! `rewind` are in [`history`].

mod history;
mod render;
mod transfer;

use std::collections::HashSet;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gyre_core::Redactor;
use gyre_core::sessions::RewindScope;
use gyre_store::{Location, SessionStore, StoreError};

use crate::args::SessionsCommand;
use gyre_host::config::{Config, user_config_dir};
use gyre_host::exit::{Exit, SUCCESS};
use gyre_host::session_choice::not_found;

/// The store a subcommand works on, and where it is (for messages).
struct Stored {
    store: Arc<dyn SessionStore>,
    location: Location,
}

impl Stored {
    /// The full id of the session `given` (an id or a prefix) names.
    async fn resolve(&self, given: &str) -> Result<String, Exit> {
        gyre_host::session_choice::resolve_id(self.store.as_ref(), &self.location, given).await
    }
}

/// Runs one `gyre sessions` subcommand.
pub async fn run(command: SessionsCommand, home: &Path) -> Result<i32, Exit> {
    let location = gyre_host::store::location(home)?;
    let stored = Stored {
        store: gyre_host::store::open(&location).await?,
        location,
    };
    match command {
        SessionsCommand::List { here, all } => {
            let scope = if here {
                Scope::Directory(current_dir()?.display().to_string())
            } else {
                Scope::All
            };
            list(&stored, scope, all, redactor()?).await
        }
        SessionsCommand::Show { id } => {
            let id = stored.resolve(&id).await?;
            show(&stored, &id, redactor()?).await
        }
        SessionsCommand::Export { id } => {
            let redactor = redactor()?;
            let id = stored.resolve(&id).await?;
            transfer::export(stored.store.as_ref(), &stored.location, &id, redactor).await
        }
        SessionsCommand::Import { file } => {
            let id = transfer::import(stored.store.as_ref(), &stored.location, file).await?;
            write_stdout(move |out| writeln!(out, "{id}")).await
        }
        SessionsCommand::Delete { id } => delete(&stored, &stored.resolve(&id).await?).await,
        SessionsCommand::Replay { id } => {
            history::replay(&stored, &stored.resolve(&id).await?).await
        }
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
            let id = stored.resolve(&id).await?;
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

/// `subagents`: also the sessions subagents ran in (marked as such), which
/// are otherwise left out as steps of their parents' runs.
async fn list(
    stored: &Stored,
    scope: Scope,
    subagents: bool,
    redactor: Redactor,
) -> Result<(), Exit> {
    let sessions = stored
        .store
        .list_sessions()
        .await
        .map_err(|e| Exit::failure(format!("cannot list the sessions: {e}")))?;
    let lines: Vec<String> = sessions
        .iter()
        .filter(|meta| subagents || meta.parent_id.is_none())
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
    let children = stored.store.list_children(id).await.map_err(read_error)?;
    // The loop state holds what the session's runs spent; a state that does
    // not read (another version's) leaves the line out.
    let state = stored
        .store
        .load_state(id)
        .await
        .map_err(read_error)?
        .and_then(|value| serde_json::from_value::<gyre_core::QueryState>(value).ok());
    let pricing = gyre_llm::catalog::lookup(&meta.model).and_then(|info| info.pricing);
    let turns = render::Turns {
        usage: state
            .iter()
            .flat_map(|s| &s.turn_usage)
            .map(|turn| (turn.message.clone(), turn.usage))
            .collect(),
        pricing,
    };
    let spent = state
        .filter(gyre_core::QueryState::has_run)
        .map(|state| state.run_totals());
    let mut text = render::show(&meta, &children, &messages, &redactor, &turns);
    if let Some((usage, cost)) = spent {
        text = render::with_spent(text, &usage, cost, pricing.as_ref());
    }
    write_stdout(move |out| out.write_all(text.as_bytes())).await
}

/// Deletes the session and its subagents' sessions, recursively, each
/// before its parent: the store deletes one session at a time and leaves the
/// children, so the tree is walked here. Children first, so that a delete
/// cut short leaves no session whose parent is gone, and running it again
/// finishes it. One `deleted ID` line per session, in that order.
async fn delete(stored: &Stored, id: &str) -> Result<(), Exit> {
    let fail = |e: StoreError| Exit::failure(format!("cannot delete session {id}: {e}"));
    if stored.store.get_session(id).await.map_err(fail)?.is_none() {
        return Err(not_found(id, &stored.location));
    }
    let tree = with_descendants(stored.store.as_ref(), id)
        .await
        .map_err(fail)?;
    let mut lines = Vec::new();
    for session in tree.iter().rev() {
        // False only when another process deleted it meanwhile: gone either way.
        if stored.store.delete_session(session).await.map_err(fail)? {
            lines.push(format!("deleted {}", gyre_core::short_id(session)));
        }
    }
    write_stdout(move |out| {
        for line in &lines {
            writeln!(out, "{line}")?;
        }
        Ok(())
    })
    .await
}

/// `id` and every session below it, breadth first, so each comes after its
/// parent. Each session is taken once: a cycle of parent links (which an
/// import can make) must not loop.
async fn with_descendants(store: &dyn SessionStore, id: &str) -> Result<Vec<String>, StoreError> {
    let mut tree = vec![id.to_owned()];
    let mut seen: HashSet<String> = tree.iter().cloned().collect();
    let mut next = 0;
    while let Some(parent) = tree.get(next).cloned() {
        next += 1;
        for child in store.list_children(&parent).await? {
            if seen.insert(child.id.clone()) {
                tree.push(child.id);
            }
        }
    }
    Ok(tree)
}

/// The redactor of the current directory's config.
fn redactor() -> Result<Redactor, Exit> {
    let cwd = current_dir()?;
    let config =
        Config::load(user_config_dir().as_deref(), &cwd).map_err(|e| Exit::usage(e.to_string()))?;
    gyre_host::redactor(&config)
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
