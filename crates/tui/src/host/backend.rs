//! The TUI's [`Backend`] over the process's [`Host`]: sessions in the
//! store, agents from the workspace's factory.
//!
//! Invariants:
//! - Only sessions of this workspace that a person started (no parent) are
//!   listed for `/resume` and `/sessions`, newest first.
//! - An agent is built per choice from the one factory (its client, store,
//!   workspace and catalogue are shared); `/model` changes the model and
//!   the limits and prices the catalogue gives it (`gyre_host::models`,
//!   the list ACP offers too), `/permissions MODE` the
//!   mode. Warnings of an agent's prompt assembly go to the log.
//! - A rewind refuses while a run holds the session (the store's lock) and
//!   restores the files before it cuts the conversation (core's rewind).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gyre_core::agents::DEFAULT_AGENT;
use gyre_core::checkpoint::Checkpointer;
use gyre_core::sessions::{RewindScope, Rewound};
use gyre_core::{Agent, LiveSession, Session};
use gyre_host::{AgentFactory, Exit, Host, Settings};
use gyre_protocol::Message;
use gyre_store::{Location, SessionStore};

use crate::app::{
    AgentChoice, AgentInfo, Backend, BackendError, BackendResult, CustomCommandInfo,
    ExpandedCommand, Opened, SessionInfo,
};

/// The TUI's view of the process.
pub struct HostBackend {
    host: Host,
    factory: Arc<AgentFactory>,
    /// The workspace's custom commands, loaded once.
    commands: gyre_host::commands::Commands,
}

fn error(exit: Exit) -> BackendError {
    BackendError(exit.message)
}

impl HostBackend {
    pub fn new(host: Host, factory: Arc<AgentFactory>) -> Self {
        let (commands, warnings) = gyre_host::commands::load(factory.workspace.root());
        for warning in &warnings {
            tracing::warn!("{warning}");
        }
        Self {
            host,
            factory,
            commands,
        }
    }

    pub fn settings(&self) -> &Settings {
        &self.host.settings
    }

    pub fn store(&self) -> &dyn SessionStore {
        self.host.store.as_ref()
    }

    pub fn location(&self) -> &Location {
        &self.host.location
    }

    /// The workspace as sessions are stored with it.
    pub fn workspace_dir(&self) -> String {
        self.factory.workspace.root().display().to_string()
    }

    /// What the flags chose (`--agent`); model and mode are the factory's.
    pub fn initial_choice(&self) -> AgentChoice {
        AgentChoice {
            agent: self.host.settings.agent.clone(),
            ..AgentChoice::default()
        }
    }

    /// `session` opened for the TUI, with its messages.
    pub async fn opened(&self, mut session: Session) -> Result<Opened, Exit> {
        let messages = self
            .all_messages(session.id())
            .await
            .map_err(|e| Exit::failure(e.0))?;
        let choice = self.initial_choice();
        let agent = self
            .agent_for(&mut session, &choice)
            .map_err(|e| Exit::usage(e.0))?;
        Ok(Opened {
            live: LiveSession::new(agent, session),
            messages,
        })
    }

    async fn all_messages(&self, id: &str) -> BackendResult<Vec<Arc<Message>>> {
        let messages = self
            .store()
            .load_messages(id)
            .await
            .map_err(|e| BackendError(format!("cannot read session {id}: {e}")))?;
        Ok(messages.into_iter().map(Arc::new).collect())
    }

    /// The agent of `choice` for `session`: the chosen agent, else the
    /// session's, else the default; the session remembers it.
    fn agent_for(&self, session: &mut Session, choice: &AgentChoice) -> BackendResult<Arc<Agent>> {
        let name = choice
            .agent
            .clone()
            .or_else(|| session.state.agent.clone())
            .unwrap_or_else(|| self.factory.default_agent().to_string());
        let agent = self.agent(&AgentChoice {
            agent: Some(name.clone()),
            ..choice.clone()
        })?;
        session.state.agent = (name != DEFAULT_AGENT).then_some(name);
        Ok(agent)
    }
}

impl Backend for HostBackend {
    fn workspace(&self) -> &Path {
        self.factory.workspace.root()
    }

    fn history_file(&self) -> Option<PathBuf> {
        Some(self.host.home().join("history"))
    }

    async fn new_session(
        &self,
        title: &str,
        choice: &AgentChoice,
    ) -> BackendResult<Arc<LiveSession>> {
        // The workspace's provider and model, as `Host::create` stores them.
        let model = choice.model.as_deref().unwrap_or(&self.factory.model);
        let mut session = Session::create(
            self.store(),
            &self.workspace_dir(),
            &self.factory.provider_name,
            model,
            title,
        )
        .await
        .map_err(|e| BackendError(format!("cannot create a session: {e}")))?;
        let agent = self.agent_for(&mut session, choice)?;
        Ok(LiveSession::new(agent, session))
    }

    async fn open_session(&self, id: &str, choice: &AgentChoice) -> BackendResult<Opened> {
        let mut session = Session::load(self.store(), id)
            .await
            .map_err(|e| BackendError(format!("cannot open session {id}: {e}")))?;
        let messages = self.all_messages(id).await?;
        let agent = self.agent_for(&mut session, choice)?;
        Ok(Opened {
            live: LiveSession::new(agent, session),
            messages,
        })
    }

    async fn list_sessions(&self) -> BackendResult<Vec<SessionInfo>> {
        let cwd = self.workspace_dir();
        let sessions = self
            .store()
            .list_sessions()
            .await
            .map_err(|e| BackendError(format!("cannot list the sessions: {e}")))?;
        Ok(sessions
            .into_iter()
            .filter(|meta| meta.cwd == cwd && meta.parent_id.is_none())
            .map(|meta| SessionInfo {
                id: meta.id,
                title: meta.title,
                updated_at_ms: meta.updated_at_ms,
                model: meta.model,
            })
            .collect())
    }

    async fn messages(&self, id: &str) -> BackendResult<Vec<Arc<Message>>> {
        self.all_messages(id).await
    }

    async fn rewind(&self, id: &str, message: &str) -> BackendResult<String> {
        let messages = self.all_messages(id).await?;
        let at = messages
            .iter()
            .position(|m| m.id == message)
            .ok_or_else(|| BackendError(format!("there is no message {message} in the session")))?;
        let checkpointer = Checkpointer::new(
            Checkpointer::dir_for(
                &gyre_host::home::checkpoints_root(self.host.home()),
                self.workspace(),
            ),
            self.workspace(),
        );
        let fail =
            |e: gyre_core::sessions::RewindError| BackendError(format!("cannot rewind: {e}"));
        let store = self.store();
        // Files as they were before the prompt's run changed any: the
        // checkpoint before the first change after the prompt.
        let files =
            gyre_core::sessions::rewind(store, &checkpointer, id, message, RewindScope::FilesOnly)
                .await
                .map_err(fail)?;
        // The conversation up to the message before the prompt; the first
        // prompt leaves nothing, which the store cannot cut to, so its
        // messages are cut after it and then it goes too.
        let removed = match at.checked_sub(1).and_then(|before| messages.get(before)) {
            Some(before) => {
                gyre_core::sessions::rewind(
                    store,
                    &checkpointer,
                    id,
                    &before.id,
                    RewindScope::ConversationOnly,
                )
                .await
                .map_err(fail)?
                .messages_removed
            }
            None => {
                let after = gyre_core::sessions::rewind(
                    store,
                    &checkpointer,
                    id,
                    message,
                    RewindScope::ConversationOnly,
                )
                .await
                .map_err(fail)?;
                store
                    .discard_message(id, message)
                    .await
                    .map_err(|e| BackendError(format!("cannot rewind: {e}")))?;
                after.messages_removed + 1
            }
        };
        Ok(describe(removed, &files))
    }

    fn agent(&self, choice: &AgentChoice) -> BackendResult<Arc<Agent>> {
        let name = choice
            .agent
            .as_deref()
            .unwrap_or(self.factory.default_agent());
        let (agent, warnings) = self
            .factory
            .agent_with(name, |config| {
                if let Some(model) = &choice.model {
                    gyre_host::models::adjust(&self.factory.model_overrides, config, model);
                }
                if let Some(mode) = choice.mode {
                    config.permissions.mode = mode;
                }
                if choice.effort.is_some() {
                    config.effort = choice.effort;
                }
            })
            .map_err(error)?;
        for warning in warnings {
            tracing::warn!("{warning}");
        }
        Ok(agent)
    }

    fn agents(&self) -> Vec<AgentInfo> {
        self.factory
            .catalog
            .iter()
            .map(|profile| AgentInfo {
                name: profile.name.clone(),
                description: profile
                    .description
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
            })
            .collect()
    }

    fn models(&self) -> Vec<String> {
        let agents = self
            .factory
            .catalog
            .iter()
            .filter_map(|p| p.model.as_deref());
        gyre_host::models::known(&self.host.settings, agents)
    }

    fn mcp_starting(&self) -> Vec<String> {
        let Some(late) = &self.factory.config.late_tools else {
            return Vec::new();
        };
        late.statuses()
            .into_iter()
            .filter(|s| s.status == gyre_protocol::McpServerState::Starting)
            .map(|s| s.server)
            .collect()
    }

    fn mcp_started(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let late = self.factory.config.late_tools.clone();
        let bound = self.host.settings.mcp_start_bound();
        async move {
            if let Some(late) = late {
                let _ = tokio::time::timeout(bound, late.wait_started()).await;
            }
        }
    }

    fn custom_commands(&self) -> Vec<CustomCommandInfo> {
        self.commands.iter().map(CustomCommandInfo::from).collect()
    }

    async fn expand_command(
        &self,
        line: &str,
        permissions: gyre_core::Permissions,
    ) -> Option<BackendResult<ExpandedCommand>> {
        let root = self.factory.workspace.root();
        let invoked = self.commands.invoke(line, root, &permissions).await?;
        Some(
            invoked
                .map(|i| ExpandedCommand {
                    prompt: i.prompt,
                    model: i.model,
                    agent: i.agent,
                })
                .map_err(BackendError),
        )
    }

    fn mcp_servers(&self) -> Vec<String> {
        // The servers this workspace started (`.mcp.json`, `[mcp_servers]`),
        // each with its state and the tools of it that the model is offered.
        let Some(late) = &self.factory.config.late_tools else {
            return Vec::new();
        };
        let snapshot = late.snapshot();
        late.statuses()
            .into_iter()
            .map(|status| {
                // By source: tool names carry the sanitised server name.
                let tools: Vec<&str> = snapshot
                    .tools()
                    .filter(|(source, _)| *source == status.server)
                    .map(|(_, tool)| tool.spec().name.as_str())
                    .collect();
                let mut line = format!(
                    "{}  {}: {}",
                    status.server,
                    status.status.as_str(),
                    status.message
                );
                if !tools.is_empty() {
                    line.push_str(&format!("  tools: {}", tools.join(", ")));
                }
                line
            })
            .collect()
    }
}

fn describe(removed: u64, files: &Rewound) -> String {
    let files = match &files.files {
        Some(restored) => format!(
            "files restored ({} written, {} removed)",
            restored.written,
            restored.removed.len()
        ),
        None => "no file had changed since".to_string(),
    };
    format!("Rewound: {removed} messages removed; {files}.")
}

/// A command as the completion shows it.
impl From<&gyre_host::commands::CustomCommand> for CustomCommandInfo {
    fn from(command: &gyre_host::commands::CustomCommand) -> Self {
        Self {
            name: command.name.clone(),
            description: command.description.clone(),
        }
    }
}
