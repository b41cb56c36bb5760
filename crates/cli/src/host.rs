//! What the long-lived frontends share (the TUI, `gyre serve`, `gyre acp`,
//! `gyre mcp-server`): the session store, opened once, and one
//! [`AgentFactory`] per workspace, made on first use and kept.
//!
//! Invariants:
//! - The process's flags apply in every workspace; each workspace adds its
//!   own `.gyre/config.toml` and rule files (a workspace is resolved as
//!   `--cwd` would resolve it).
//! - A factory is made once per workspace, so what it starts (the prompt's
//!   git status, MCP servers) is shared by every session there; the git
//!   status in the prompt is the one taken when the workspace was first
//!   used.
//! - Who answers permission requests is the frontend's choice, made once
//!   ([`Approvals::Interactive`] for the TUI, `serve` and `acp`, which
//!   have someone to ask).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gyre_core::{Approvals, LiveSession, Session};
use gyre_store::{Location, SessionStore, StoreError};

use crate::args::RunArgs;
use crate::exit::Exit;
use crate::launch::{AgentFactory, Settings};
use crate::sessions::not_found;

/// The store and the workspaces' agent factories of one process.
pub struct Host {
    home: PathBuf,
    pub location: Location,
    pub store: Arc<dyn SessionStore>,
    args: RunArgs,
    /// The settings of the process's own directory (`--cwd` or the current
    /// one), resolved at start so a bad flag or key is said at once.
    pub settings: Settings,
    approvals: Approvals,
    factories: tokio::sync::Mutex<HashMap<PathBuf, Arc<AgentFactory>>>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("home", &self.home)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Host {
    /// Resolves the flags in the process's directory and opens the store.
    pub async fn open(home: &Path, args: RunArgs, approvals: Approvals) -> Result<Host, Exit> {
        let settings = Settings::resolve(&args)?;
        let location = crate::store::location(home)?;
        let store = crate::store::open(&location).await?;
        Ok(Host {
            home: home.to_path_buf(),
            location,
            store,
            args,
            settings,
            approvals,
            factories: tokio::sync::Mutex::new(HashMap::new()),
        })
    }

    // Not used by `acp` and `mcp-server`; kept for the other frontends.
    #[allow(dead_code)]
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The settings of a run in `cwd` (`None`: the process's directory).
    pub fn settings_in(&self, cwd: Option<&Path>) -> Result<Settings, Exit> {
        match cwd {
            None => Ok(self.settings.clone()),
            Some(dir) => {
                let mut args = self.args.clone();
                args.cwd = Some(dir.to_path_buf());
                Settings::resolve(&args)
            }
        }
    }

    /// The agent factory of the workspace of `cwd` (made on first use).
    pub async fn factory(&self, cwd: Option<&Path>) -> Result<Arc<AgentFactory>, Exit> {
        let settings = self.settings_in(cwd)?;
        let mut factories = self.factories.lock().await;
        if let Some(found) = factories.get(&settings.workspace) {
            return Ok(found.clone());
        }
        let git_status = gyre_core::prompt::git_status(&settings.workspace).await;
        let factory = Arc::new(settings.factory(
            &self.home,
            self.store.clone(),
            git_status,
            self.approvals.clone(),
        )?);
        factories.insert(settings.workspace.clone(), factory.clone());
        Ok(factory)
    }

    /// A new session in `cwd` (`None`: the process's directory), titled by
    /// `title`, run by agent `agent` (else the configured default).
    pub async fn create(
        &self,
        cwd: Option<&Path>,
        title: &str,
        agent: Option<&str>,
    ) -> Result<Arc<LiveSession>, Exit> {
        let factory = self.factory(cwd).await?;
        let settings = &self.settings;
        // A misspelt agent is said before a session is stored for it.
        if let Some(name) = agent.or(settings.agent.as_deref()) {
            factory.catalog.require(name).map_err(Exit::usage)?;
        }
        let dir = factory.workspace.root().display().to_string();
        let mut session = Session::create(
            self.store.as_ref(),
            &dir,
            &settings.provider.name,
            &settings.provider.model,
            title,
        )
        .await
        .map_err(|e| Exit::failure(format!("cannot create a session: {e}")))?;
        let agent = factory.agent_for(&mut session, agent.or(settings.agent.as_deref()))?;
        Ok(LiveSession::new(agent, session))
    }

    /// The stored session `id`, opened in the workspace it was stored with.
    pub async fn open_session(
        &self,
        id: &str,
        agent: Option<&str>,
    ) -> Result<Arc<LiveSession>, Exit> {
        let mut session = Session::load(self.store.as_ref(), id)
            .await
            .map_err(|e| match e {
                StoreError::SessionNotFound { .. } => not_found(id, &self.location),
                other => Exit::failure(format!("cannot load session {id}: {other}")),
            })?;
        let cwd = PathBuf::from(&session.meta.cwd);
        let factory = self.factory(Some(&cwd)).await?;
        let agent = factory.agent_for(&mut session, agent)?;
        Ok(LiveSession::new(agent, session))
    }
}
