//! A session: its stored identity, its history and its loop state.
//!
//! The history is a list of shared messages (`Arc`), as the store holds
//! them (from the last compact boundary, pruned as sent). A request borrows
//! its repaired form (`history::Validated`), which shares every message
//! that needed no repair; events share its entries; nothing copies it per
//! turn.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use gyre_protocol::Message;
use gyre_store::{SessionMeta, SessionStore, StoreError};

use crate::context::{Baseline, apply_pruning, visible_from_boundary};
use crate::history::Validated;
use crate::id::new_id;
use crate::permissions::{Rule, SessionRules};
use crate::state::QueryState;

#[derive(Debug, Clone)]
pub struct Session {
    pub meta: SessionMeta,
    pub history: Vec<Arc<Message>>,
    pub state: QueryState,
    /// What the tools keep for this session (read files, shell, todos).
    pub tools: Arc<gyre_tools::ToolSession>,
    /// The rules this session's "always allow" answers added; they last as
    /// long as the session is in memory (not stored: a resumed session
    /// asks again).
    pub(crate) always: SessionRules,
    /// The provider's count of the last request, while the history has only
    /// grown since (see `context::meter`).
    pub(crate) baseline: Option<Baseline>,
    /// The last main request's message count and its last message: the
    /// prefix the provider has cached (a cached summary request stops
    /// there, so it writes nothing but its instruction).
    pub(crate) last_request: Option<(usize, Arc<Message>)>,
    /// The cache point the last main request carried (the message before
    /// the next prune's change point, see `run::context`): after a step
    /// that changed the prompt from there, the next request marks it too,
    /// so it reads the entry written there. Reset by a compaction.
    pub(crate) cache_point: Option<usize>,
    /// How far the history is checked for valid call/result pairing, and
    /// its repaired form, which requests send (see `history`); reset
    /// whenever messages are replaced.
    pub(crate) validated: Validated,
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The first line of a prompt, shortened, as a session title.
fn title_of(prompt: &str) -> String {
    let line = prompt
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    match line.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

impl Session {
    /// Creates and stores a new, empty session.
    pub async fn create(
        store: &dyn SessionStore,
        cwd: &str,
        provider: &str,
        model: &str,
        first_prompt: &str,
    ) -> Result<Session, StoreError> {
        Self::create_linked(store, None, cwd, provider, model, first_prompt).await
    }

    /// [`Session::create`] with the id `id` (Claude Code's `--session-id`);
    /// the store refuses an id it already holds.
    pub async fn create_with_id(
        store: &dyn SessionStore,
        id: &str,
        cwd: &str,
        provider: &str,
        model: &str,
        first_prompt: &str,
    ) -> Result<Session, StoreError> {
        Self::create_inner(
            store,
            id.to_string(),
            None,
            cwd,
            provider,
            model,
            first_prompt,
        )
        .await
    }

    /// Creates and stores a subagent's session, linked to `parent_id`'s.
    pub async fn create_child(
        store: &dyn SessionStore,
        parent_id: &str,
        cwd: &str,
        provider: &str,
        model: &str,
        title: &str,
    ) -> Result<Session, StoreError> {
        Self::create_linked(store, Some(parent_id), cwd, provider, model, title).await
    }

    async fn create_linked(
        store: &dyn SessionStore,
        parent_id: Option<&str>,
        cwd: &str,
        provider: &str,
        model: &str,
        first_prompt: &str,
    ) -> Result<Session, StoreError> {
        Self::create_inner(
            store,
            new_id(),
            parent_id,
            cwd,
            provider,
            model,
            first_prompt,
        )
        .await
    }

    async fn create_inner(
        store: &dyn SessionStore,
        id: String,
        parent_id: Option<&str>,
        cwd: &str,
        provider: &str,
        model: &str,
        first_prompt: &str,
    ) -> Result<Session, StoreError> {
        let now = now_ms();
        let meta = SessionMeta {
            id,
            cwd: cwd.to_string(),
            provider: provider.to_string(),
            model: model.to_string(),
            title: title_of(first_prompt),
            created_at_ms: now,
            updated_at_ms: now,
            parent_id: parent_id.map(str::to_string),
        };
        store.create_session(&meta).await?;
        Ok(Session {
            meta,
            history: Vec::new(),
            state: QueryState::default(),
            tools: Arc::default(),
            always: SessionRules::default(),
            baseline: None,
            last_request: None,
            cache_point: None,
            validated: Validated::default(),
        })
    }

    /// Loads a stored session as the model sees it: from its last compact
    /// boundary on, with the outputs pruned before as they were sent.
    pub async fn load(store: &dyn SessionStore, id: &str) -> Result<Session, StoreError> {
        // Messages first: a missing session is the store's not-found error.
        let messages = store.load_messages(id).await?;
        let state: QueryState = store
            .load_state(id)
            .await?
            .and_then(|value| serde_json::from_value(value).ok())
            .unwrap_or_default();
        let Some(meta) = store.get_session(id).await? else {
            // Deleted between the two reads: let the store say so.
            store.load_state(id).await?;
            return Err(StoreError::MessageNotFound {
                session_id: id.to_string(),
                message_id: String::new(),
            });
        };
        let mut history = visible_from_boundary(messages);
        if let Some(through) = state.context.pruned_through.as_deref()
            && let Some(index) = history.iter().position(|m| m.id == through)
        {
            apply_pruning(&mut history, index);
        }
        // The todo list lives in the state, so it survives a restart.
        let tools = Arc::new(gyre_tools::ToolSession::default());
        if !state.todos.is_empty() {
            tools.todos.replace(state.todos.clone());
        }
        Ok(Session {
            meta,
            history,
            state,
            tools,
            always: SessionRules::default(),
            baseline: None,
            last_request: None,
            cache_point: None,
            validated: Validated::default(),
        })
    }

    pub fn id(&self) -> &str {
        &self.meta.id
    }

    /// The rules this session's "always allow" answers added so far.
    pub fn always_rules(&self) -> Vec<Rule> {
        self.always.snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_the_first_line_shortened() {
        assert_eq!(title_of("\n  fix the bug \nplease"), "fix the bug");
        let long = "x".repeat(100);
        assert_eq!(title_of(&long).chars().count(), 81);
    }
}
