//! What the long-lived frontends share (the TUI, `gyre serve`, `gyre acp`,
//! `gyre mcp-server`): the session store, opened once, and one
//! [`AgentFactory`] per workspace, made on first use and kept.
//!
//! Invariants:
//! - The process's flags apply in every workspace; each workspace adds its
//!   own `.gyre/config.toml` and rule files (a workspace is resolved as
//!   `--cwd` would resolve it). A session is stored with its workspace's
//!   provider and model.
//! - A factory is made once per workspace, so what it starts (the prompt's
//!   git status, MCP servers) is shared by every session there; the git
//!   status in the prompt is the one taken when the workspace was first
//!   used.
//! - Making a factory never blocks the runtime or other workspaces: the
//!   map of workspaces is locked only to find or add a workspace's cell
//!   (never across an await); resolving the settings and building the
//!   factory (file reads, regexes) run on the blocking pool; requests for
//!   one workspace being made wait for that one build. A workspace already
//!   made costs one `canonicalize` of the directory asked for (its key).
//! - Bounded: beyond [`KEPT_WORKSPACES`] workspaces, the factories no agent
//!   uses any more (no live session there) are dropped, with their MCP
//!   servers; a later session there makes a new one. Factories in use are
//!   never dropped, so the map may exceed the bound while they all are.
//! - Who answers permission requests is the frontend's choice, made once
//!   ([`Approvals::Interactive`] for the TUI, `serve` and `acp`, which
//!   have someone to ask); so is whether the project's MCP servers need
//!   the user's trust ([`ProjectMcp::NeedsTrust`]: the TUI only).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use gyre_core::{Approvals, LiveSession, Session};
use gyre_store::{Location, SessionStore, StoreError};
use tokio::sync::OnceCell;

use crate::exit::Exit;
use crate::factory::AgentFactory;
use crate::flags::Flags;
use crate::mcp_trust::ProjectMcp;
use crate::session_choice::not_found;
use crate::settings::Settings;

/// Workspaces whose factories are kept even when no session uses them.
const KEPT_WORKSPACES: usize = 16;

/// A workspace's factory, made once by whoever asks first.
type Cell = Arc<OnceCell<Arc<AgentFactory>>>;

/// The store and the workspaces' agent factories of one process.
pub struct Host {
    home: PathBuf,
    pub location: Location,
    pub store: Arc<dyn SessionStore>,
    flags: Flags,
    /// The settings of the process's own directory (`--cwd` or the current
    /// one), resolved at start so a bad flag or key is said at once.
    pub settings: Settings,
    approvals: Approvals,
    project_mcp: ProjectMcp,
    /// Canonical workspace directory → its factory's cell.
    factories: Mutex<HashMap<PathBuf, Cell>>,
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
    pub async fn open(home: &Path, flags: Flags, approvals: Approvals) -> Result<Host, Exit> {
        let settings = Settings::resolve(&flags)?;
        let location = crate::store::location(home)?;
        let store = crate::store::open(&location).await?;
        Ok(Host {
            home: home.to_path_buf(),
            location,
            store,
            flags,
            settings,
            approvals,
            project_mcp: ProjectMcp::Start,
            factories: Mutex::new(HashMap::new()),
        })
    }

    /// This host with the project's MCP servers started only where the
    /// user trusted them (the TUI); call before the first factory.
    pub fn needing_mcp_trust(mut self) -> Host {
        self.project_mcp = ProjectMcp::NeedsTrust;
        self.settings.project_mcp = ProjectMcp::NeedsTrust;
        self
    }

    /// Where gyre keeps its data (`$GYRE_HOME`).
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The agent factory of the workspace of `cwd` (`None`: the process's
    /// directory), made on first use.
    pub async fn factory(&self, cwd: Option<&Path>) -> Result<Arc<AgentFactory>, Exit> {
        let key = match cwd {
            None => self.settings.workspace.clone(),
            Some(dir) => tokio::fs::canonicalize(dir).await.map_err(|e| {
                Exit::usage(format!(
                    "cannot use {} as the workspace: {e}",
                    dir.display()
                ))
            })?,
        };
        let cell = self.cell(&key);
        let factory = cell.get_or_try_init(|| self.build(key)).await?;
        Ok(factory.clone())
    }

    /// The cell of workspace `key`, added (and the unused ones beyond the
    /// bound dropped) when it is new.
    fn cell(&self, key: &Path) -> Cell {
        let mut factories = self
            .factories
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(cell) = factories.get(key) {
            return cell.clone();
        }
        if factories.len() >= KEPT_WORKSPACES {
            // Unused: no request holds the cell, and no agent the factory
            // (a cell whose build failed is empty, and unused too).
            factories.retain(|_, cell| {
                Arc::strong_count(cell) > 1
                    || cell
                        .get()
                        .is_some_and(|f| Arc::strong_count(f) > 1 || f.in_use())
            });
        }
        let cell = Cell::default();
        factories.insert(key.to_path_buf(), cell.clone());
        cell
    }

    /// Resolves the settings of workspace `key` and makes its factory, the
    /// synchronous parts on the blocking pool.
    async fn build(&self, key: PathBuf) -> Result<Arc<AgentFactory>, Exit> {
        let mut settings = if key == self.settings.workspace {
            self.settings.clone()
        } else {
            let mut flags = self.flags.clone();
            flags.cwd = Some(key);
            blocking(move || Settings::resolve(&flags)).await?
        };
        settings.project_mcp = self.project_mcp;
        let git_status = gyre_core::prompt::git_status(&settings.workspace).await;
        let (home, store, approvals) = (
            self.home.clone(),
            self.store.clone(),
            self.approvals.clone(),
        );
        // Also starts the MCP servers, on this runtime (the blocking pool
        // runs inside it).
        let factory =
            blocking(move || settings.factory(&home, store, git_status, approvals)).await?;
        Ok(Arc::new(factory))
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
        let agent = agent.or(self.settings.agent.as_deref());
        // A misspelt agent is said before a session is stored for it.
        if let Some(name) = agent {
            factory.catalog.require(name).map_err(Exit::usage)?;
        }
        let dir = factory.workspace.root().display().to_string();
        // The workspace's provider and model (its config may name others
        // than the process's directory).
        let mut session = Session::create(
            self.store.as_ref(),
            &dir,
            &factory.provider_name,
            &factory.model,
            title,
        )
        .await
        .map_err(|e| Exit::failure(format!("cannot create a session: {e}")))?;
        let agent = factory.agent_for(&mut session, agent)?;
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

/// `work`'s result, run on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Exit> + Send + 'static,
) -> Result<T, Exit> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Exit::failure(format!("the workspace's setup failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use gyre_protocol::{McpServerState, McpServerStatus};
    use tempfile::TempDir;

    use super::*;

    /// A host over a SQLite store in a temp home, in `dir`, whose model
    /// comes from the workspaces' configs (the `ollama` preset needs no
    /// key, and nothing here asks the model).
    async fn host(home: &Path, dir: &Path) -> Host {
        let flags = Flags {
            provider: Some("ollama".into()),
            base_url: Some("http://127.0.0.1:9/v1".into()),
            cwd: Some(dir.to_path_buf()),
            ..Flags::default()
        };
        Host::open(home, flags, Approvals::Headless).await.unwrap()
    }

    fn workspace(config: &str) -> TempDir {
        let dir = TempDir::new().unwrap();
        std::fs::create_dir(dir.path().join(".gyre")).unwrap();
        std::fs::write(dir.path().join(".gyre/config.toml"), config).unwrap();
        dir
    }

    #[tokio::test]
    async fn a_session_is_stored_with_its_workspace_s_model() {
        let home = TempDir::new().unwrap();
        let main = workspace("model = \"main-model\"\n");
        let other = workspace("model = \"other-model\"\n");
        let host = host(home.path(), main.path()).await;

        let live = host.create(Some(other.path()), "t", None).await.unwrap();
        let stored = Session::load(host.store.as_ref(), live.id()).await.unwrap();
        assert_eq!(stored.meta.model, "other-model");
        assert_eq!(stored.meta.provider, "ollama");
        let live = host.create(None, "t", None).await.unwrap();
        let stored = Session::load(host.store.as_ref(), live.id()).await.unwrap();
        assert_eq!(stored.meta.model, "main-model");

        // Made once per workspace, however its directory is named.
        let first = host.factory(Some(other.path())).await.unwrap();
        let dotted = other.path().join(".gyre").join("..");
        let again = host.factory(Some(&dotted)).await.unwrap();
        assert!(Arc::ptr_eq(&first, &again));
    }

    #[tokio::test]
    async fn unused_factories_are_dropped_beyond_the_bound() {
        let home = TempDir::new().unwrap();
        let main = workspace("model = \"m\"\n");
        let host = host(home.path(), main.path()).await;
        let kept = workspace("model = \"m\"\n");
        let held = host.create(Some(kept.path()), "t", None).await.unwrap();
        let others: Vec<TempDir> = (0..KEPT_WORKSPACES)
            .map(|_| workspace("model = \"m\"\n"))
            .collect();
        for dir in &others {
            host.factory(Some(dir.path())).await.unwrap();
        }
        let cached = host.factories.lock().unwrap().len();
        // The one a session uses stays, with the last one made.
        assert_eq!(cached, 2);
        let before = host.factory(Some(kept.path())).await.unwrap();
        drop(held);
        let after = host.factory(Some(kept.path())).await.unwrap();
        assert!(Arc::ptr_eq(&before, &after));
    }

    fn status_of(factory: &AgentFactory, server: &str) -> McpServerStatus {
        let late = factory.config.late_tools.as_ref().expect("servers start");
        late.statuses()
            .into_iter()
            .find(|s| s.server == server)
            .expect("the server reports")
    }

    #[tokio::test]
    async fn the_tui_starts_project_servers_only_once_trusted() {
        let home = TempDir::new().unwrap();
        let dir =
            workspace("model = \"m\"\n[mcp_servers.toml-srv]\ncommand = \"/nonexistent/a\"\n");
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {"json-srv": {"command": "/nonexistent/b"}}}"#,
        )
        .unwrap();

        // Headless (run, acp, serve, mcp-server): started as configured.
        let headless = host(home.path(), dir.path()).await;
        let factory = headless.factory(None).await.unwrap();
        for server in ["toml-srv", "json-srv"] {
            let status = status_of(&factory, server);
            assert_ne!(status.message, crate::mcp_trust::NOT_TRUSTED, "{status:?}");
        }

        let tui = host(home.path(), dir.path()).await.needing_mcp_trust();
        let factory = tui.factory(None).await.unwrap();
        for server in ["toml-srv", "json-srv"] {
            let status = status_of(&factory, server);
            assert_eq!(status.status, McpServerState::Failed);
            assert_eq!(status.message, crate::mcp_trust::NOT_TRUSTED);
        }

        let canonical = dir.path().canonicalize().unwrap();
        crate::mcp_trust::trust(home.path(), &canonical).unwrap();
        let tui = host(home.path(), dir.path()).await.needing_mcp_trust();
        let factory = tui.factory(None).await.unwrap();
        for server in ["toml-srv", "json-srv"] {
            let status = status_of(&factory, server);
            assert_ne!(status.message, crate::mcp_trust::NOT_TRUSTED, "{status:?}");
        }
    }
}
