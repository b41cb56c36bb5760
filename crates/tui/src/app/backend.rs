//! What the app needs from the program that hosts it: sessions (new, stored,
//! listed, rewound) and agents (by name, model and permission mode).
//!
//! The app never builds an agent or opens a store itself, so this crate does
//! not depend on the command line's configuration code; the `gyre` binary
//! implements [`Backend`] over its `Host`, and tests implement it over
//! gyre-core with the mock model server.
//!
//! Errors are one sentence for the user ([`BackendError`]); the app shows
//! them as notices and goes on.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gyre_core::{Agent, LiveSession, PermissionMode};
use gyre_protocol::Message;

/// A failure the user is told about in one sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BackendError(pub String);

impl BackendError {
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

pub type BackendResult<T> = Result<T, BackendError>;

/// Which agent runs the next prompts: each `None` is the configured one
/// (`--agent`, `--model`, `--permission-mode`, the config files).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentChoice {
    /// An agent of the catalogue (`build`, `plan`, …); `None`: the
    /// session's own, else the configured default.
    pub agent: Option<String>,
    pub model: Option<String>,
    pub mode: Option<PermissionMode>,
    /// `/effort`: the session's reasoning effort (an agent file's own wins).
    pub effort: Option<gyre_llm::Effort>,
}

/// A stored session, opened.
pub struct Opened {
    pub live: Arc<LiveSession>,
    /// Every stored message (compacted ones too), for the transcript.
    pub messages: Vec<Arc<Message>>,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened")
            .field("live", &self.live)
            .field("messages", &self.messages.len())
            .finish()
    }
}

/// One stored session, for `/resume` and `/sessions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    pub id: String,
    pub title: String,
    /// Last update, milliseconds since the epoch.
    pub updated_at_ms: i64,
    pub model: String,
}

/// One agent of the catalogue, for `/agents`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentInfo {
    pub name: String,
    pub description: String,
}

/// A custom command (a prompt file, or the built-in `/init`), for
/// completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommandInfo {
    pub name: String,
    pub description: String,
}

/// What a custom command's `/name args` became: the prompt to send, and
/// the model and agent the command asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpandedCommand {
    pub prompt: String,
    pub model: Option<String>,
    pub agent: Option<String>,
}

/// The program around the app.
pub trait Backend {
    /// The workspace root (where `@` completes and `!` commands run).
    fn workspace(&self) -> &Path;

    /// Where typed prompts are remembered across runs (`None`: nowhere).
    fn history_file(&self) -> Option<PathBuf>;

    /// A new session titled `title` (the first prompt), run by `choice`.
    fn new_session(
        &self,
        title: &str,
        choice: &AgentChoice,
    ) -> impl Future<Output = BackendResult<Arc<LiveSession>>>;

    /// The stored session `id`, run by `choice`, with its messages.
    fn open_session(
        &self,
        id: &str,
        choice: &AgentChoice,
    ) -> impl Future<Output = BackendResult<Opened>>;

    /// The sessions of this workspace a person started, newest first.
    fn list_sessions(&self) -> impl Future<Output = BackendResult<Vec<SessionInfo>>>;

    /// Every stored message of session `id` (for `/rewind`).
    fn messages(&self, id: &str) -> impl Future<Output = BackendResult<Vec<Arc<Message>>>>;

    /// Puts session `id`'s files and conversation back to how they were
    /// before the user message `message` (which goes, with all after it).
    /// The session must be idle; the caller opens it again afterwards. Says
    /// what was done, in one line.
    fn rewind(&self, id: &str, message: &str) -> impl Future<Output = BackendResult<String>>;

    /// The agent `choice` names.
    fn agent(&self, choice: &AgentChoice) -> BackendResult<Arc<Agent>>;

    /// The agents a prompt here may run.
    fn agents(&self) -> Vec<AgentInfo>;

    /// Models the user may switch to (those the catalogue knows for the
    /// provider; any other name is accepted too).
    fn models(&self) -> Vec<String>;

    /// The MCP servers of the workspace and what is known of them, one
    /// line each (empty: none configured).
    fn mcp_servers(&self) -> Vec<String>;

    /// The workspace's custom commands, by name (empty: none).
    fn custom_commands(&self) -> Vec<CustomCommandInfo> {
        Vec::new()
    }

    /// The expansion of `line` (`/name args`) when `name` is a custom
    /// command (`None`: it is not); `permissions` decide which of its
    /// `` !`command` `` inclusions run.
    fn expand_command(
        &self,
        line: &str,
        permissions: gyre_core::Permissions,
    ) -> impl Future<Output = Option<BackendResult<ExpandedCommand>>> {
        let _ = (line, permissions);
        std::future::ready(None)
    }

    /// The workspace's MCP servers that are still starting (empty: none).
    fn mcp_starting(&self) -> Vec<String> {
        Vec::new()
    }

    /// Resolves once none of the workspace's MCP servers is starting, or
    /// after their start timeouts.
    fn mcp_started(&self) -> impl Future<Output = ()> + Send + 'static {
        std::future::ready(())
    }
}
