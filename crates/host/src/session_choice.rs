//! Which session a run goes on in: a new one, a stored one (`--resume ID`),
//! the newest of this directory (`--continue`), or a copy of either
//! (`--fork`, `--at MESSAGE`).
//!
//! Invariants:
//! - A fork never changes its source: the store copies the messages (through
//!   `--at`, when given), checkpoints and loop state into a session with a new
//!   id and the title `fork of <title>`, and the run goes on in the copy, so
//!   its `system/init` line names the copy.
//! - `--continue` never picks a subagent's session (one with a parent).
//! - "This directory" is the run's workspace (the canonical `--cwd`, or the
//!   current directory), compared with the `cwd` the sessions were stored
//!   with, which is the same canonical form.
//! - An id, message or directory without a session is bad usage (exit 2),
//!   one line naming it; the store failing is exit 1.
//! - `--resume` (and `gyre sessions`) take an id or a prefix of one (the
//!   short form people read, `gyre_core::short_id`): an exact id wins; a
//!   prefix that names more than one session is bad usage naming them.

use gyre_core::{Session, new_id, now_ms};
use gyre_store::{Location, SessionMeta, SessionStore, StoreError};

use crate::exit::Exit;
use crate::flags::Flags;

/// Which stored session a run starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// A new session.
    New,
    /// `--resume ID`.
    Resume(String),
    /// `--continue`: the newest session of the workspace.
    Continue,
}

/// Whether the run goes on in the picked session or in a copy of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Branch {
    InPlace,
    /// `--fork`, copying through the message `at` (all when `None`).
    Fork {
        at: Option<String>,
    },
}

/// The session flags of a run, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionChoice {
    pub pick: Pick,
    pub branch: Branch,
    /// `--session-id`: the id of a new session (or of the fork), when
    /// not gyre's own.
    pub id: Option<String>,
}

impl Default for SessionChoice {
    fn default() -> Self {
        SessionChoice {
            pick: Pick::New,
            branch: Branch::InPlace,
            id: None,
        }
    }
}

impl SessionChoice {
    /// Clap already refuses `--resume` with `--continue`, and `--at`
    /// without `--fork`.
    pub fn from_args(args: &Flags) -> Result<SessionChoice, Exit> {
        let pick = match (&args.resume, args.continue_session) {
            (Some(id), _) => Pick::Resume(id.clone()),
            (None, true) => Pick::Continue,
            (None, false) => Pick::New,
        };
        let branch = match (args.fork, &pick) {
            (false, _) => Branch::InPlace,
            (true, Pick::New) => {
                return Err(Exit::usage(
                    "--fork copies a stored session: give it --resume ID or --continue",
                ));
            }
            (true, _) => Branch::Fork {
                at: args.at.clone(),
            },
        };
        let id = args.session_id.clone();
        if let Some(id) = &id {
            let fresh = pick == Pick::New || matches!(branch, Branch::Fork { .. });
            if !fresh {
                return Err(Exit::usage(format!(
                    "--session-id {id} names a new session: give it without --resume/--continue, or with --fork-session"
                )));
            }
            if uuid_like(id).is_none() {
                return Err(Exit::usage(format!(
                    "--session-id `{id}` is not a UUID (8-4-4-4-12 hexadecimal digits)"
                )));
            }
        }
        Ok(SessionChoice { pick, branch, id })
    }
}

/// `Some` when `id` has a UUID's shape (Claude Code's session ids).
fn uuid_like(id: &str) -> Option<()> {
    let groups: Vec<&str> = id.split('-').collect();
    let lengths = [8, 4, 4, 4, 12];
    (groups.len() == lengths.len()
        && groups
            .iter()
            .zip(lengths)
            .all(|(group, len)| group.len() == len && group.chars().all(|c| c.is_ascii_hexdigit())))
    .then_some(())
}

/// What a new session (or a fork) is stored with.
#[derive(Debug, Clone, Copy)]
pub struct NewSession<'a> {
    /// The workspace, canonical.
    pub cwd: &'a str,
    pub provider: &'a str,
    pub model: &'a str,
    pub prompt: &'a str,
}

/// The session the run goes on in, created, found or copied as `choice`
/// says.
pub async fn open_session(
    store: &dyn SessionStore,
    location: &Location,
    choice: &SessionChoice,
    new: NewSession<'_>,
) -> Result<Session, Exit> {
    let id = match &choice.pick {
        Pick::New => {
            let created = match &choice.id {
                Some(id) => {
                    Session::create_with_id(store, id, new.cwd, new.provider, new.model, new.prompt)
                        .await
                }
                None => Session::create(store, new.cwd, new.provider, new.model, new.prompt).await,
            };
            return created.map_err(|e| Exit::failure(format!("cannot create a session: {e}")));
        }
        Pick::Resume(id) => resolve_id(store, location, id).await?,
        Pick::Continue => newest_in(store, new.cwd).await?,
    };
    let id = match &choice.branch {
        Branch::InPlace => id,
        Branch::Fork { at } => {
            let copy = choice.id.clone().unwrap_or_else(new_id);
            fork(store, location, &id, at.as_deref(), copy, new).await?
        }
    };
    Session::load(store, &id).await.map_err(|e| match e {
        StoreError::SessionNotFound { .. } => not_found(&id, location),
        other => Exit::failure(format!("cannot load session {id}: {other}")),
    })
}

/// Sessions an ambiguous prefix's error names at most.
const AMBIGUOUS_SHOWN: usize = 3;

/// The full id of the stored session `given` names: itself, else the one
/// session whose id begins with it.
pub async fn resolve_id(
    store: &dyn SessionStore,
    location: &Location,
    given: &str,
) -> Result<String, Exit> {
    let fail = |e: StoreError| Exit::failure(format!("cannot read session {given}: {e}"));
    if store.get_session(given).await.map_err(fail)?.is_some() {
        return Ok(given.to_string());
    }
    if given.is_empty() {
        return Err(not_found(given, location));
    }
    let sessions = store
        .list_sessions()
        .await
        .map_err(|e| Exit::failure(format!("cannot list the sessions: {e}")))?;
    let mut matching: Vec<String> = sessions
        .into_iter()
        .filter(|meta| meta.id.starts_with(given))
        .map(|meta| meta.id)
        .collect();
    match matching.len() {
        0 => Err(not_found(given, location)),
        1 => Ok(matching.remove(0)),
        count => {
            let mut shown = matching
                .iter()
                .take(AMBIGUOUS_SHOWN)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if count > AMBIGUOUS_SHOWN {
                shown.push_str(", …");
            }
            Err(Exit::usage(format!(
                "the id prefix {given} names {count} sessions ({shown}) in {location}: give more of the id"
            )))
        }
    }
}

/// One line for an id that names no session.
pub fn not_found(id: &str, location: &Location) -> Exit {
    Exit::usage(format!(
        "there is no session {id} in {location}; `gyre sessions list` shows the ids"
    ))
}

/// The id of the newest session stored with `cwd` that a person started:
/// a subagent's session is a step of its parent's run, not a conversation to
/// go on with.
async fn newest_in(store: &dyn SessionStore, cwd: &str) -> Result<String, Exit> {
    let sessions = store
        .list_sessions()
        .await
        .map_err(|e| Exit::failure(format!("cannot list the sessions: {e}")))?;
    // Newest first, as the store returns them.
    sessions
        .into_iter()
        .find(|meta| meta.cwd == cwd && meta.parent_id.is_none())
        .map(|meta| meta.id)
        .ok_or_else(|| {
            Exit::usage(format!(
                "--continue: no session has run in {cwd} yet; start one without --continue (`gyre sessions list` shows them all)"
            ))
        })
}

/// Copies session `from` (through message `at`) into a new session; its id.
async fn fork(
    store: &dyn SessionStore,
    location: &Location,
    from: &str,
    at: Option<&str>,
    copy: String,
    new: NewSession<'_>,
) -> Result<String, Exit> {
    let source = store
        .get_session(from)
        .await
        .map_err(|e| Exit::failure(format!("cannot read session {from}: {e}")))?
        .ok_or_else(|| not_found(from, location))?;
    let now = now_ms();
    let meta = SessionMeta {
        id: copy,
        // The copy runs here, with this run's model.
        cwd: new.cwd.to_owned(),
        provider: new.provider.to_owned(),
        model: new.model.to_owned(),
        title: format!("fork of {}", source.title),
        created_at_ms: now,
        updated_at_ms: now,
        // A copy a person asked for, not a subagent's session.
        parent_id: None,
    };
    store
        .fork_session(from, &meta, at)
        .await
        .map_err(|e| match e {
            StoreError::SessionNotFound { .. } => not_found(from, location),
            StoreError::MessageNotFound { message_id, .. } => Exit::usage(format!(
                "--at: session {from} has no message {message_id}; `gyre sessions show {from}` shows its message ids"
            )),
            other => Exit::failure(format!("cannot fork session {from}: {other}")),
        })?;
    Ok(meta.id)
}
