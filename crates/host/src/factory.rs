//! From [`Settings`] to the agents of one workspace: the [`AgentFactory`]
//! holds what every agent there shares (the model client, the store, the
//! workspace with its extra directories, the prompt template, the agent
//! catalogue, the skills, the MCP servers, the sandbox, the checkpointer),
//! made once.
//!
//! Invariants: a misspelt `--agent` is said before any session is stored
//! for it; warnings of an agent file that does not load, or of a prompt's
//! assembly, go to stderr as `gyre: warning: …`. The factory holds no
//! frontend state: a frontend keeps it (per workspace, in [`crate::Host`])
//! and asks it for agents.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gyre_core::agents::DEFAULT_AGENT;
use gyre_core::checkpoint::Checkpointer;
use gyre_core::hooks::Hooks;
use gyre_core::prompt::{self, PromptTemplate};
use gyre_core::{Agent, AgentCatalog, AgentConfig, Approvals, Completion, Session, SubagentSetup};
use gyre_llm::ModelClient;
use gyre_store::SessionStore;
use gyre_tools::{OutputLimits, Registry, Workspace};

use crate::config::user_config_dir;
use crate::exit::Exit;
use crate::settings::Settings;

impl Settings {
    /// What builds this workspace's agents over `store`: the workspace, the
    /// prompt template, the agent catalogue and the configuration, made
    /// once (long-lived frontends keep it for every session of the
    /// workspace). `git_status` is the repository's state for the prompt.
    pub fn factory(
        &self,
        home: &Path,
        store: Arc<dyn SessionStore>,
        git_status: Option<String>,
        approvals: Approvals,
    ) -> Result<AgentFactory, Exit> {
        // Whole outputs of cut tool results go to the spill directory; the
        // model may read them there, so it joins the configured extra dirs.
        let spill_dir = home.join("spill");
        std::fs::create_dir_all(&spill_dir)
            .map_err(|e| Exit::failure(format!("cannot create {}: {e}", spill_dir.display())))?;
        let mut extra_dirs: Vec<PathBuf> = self
            .tools
            .extra_dirs
            .iter()
            .flatten()
            .map(|dir| self.workspace.join(dir))
            .collect();
        extra_dirs.push(spill_dir.clone());
        let workspace = Workspace::with_extra_dirs(&self.workspace, extra_dirs).map_err(|e| {
            Exit::usage(format!(
                "cannot use {} as the workspace (with its extra directories from [tools] extra_dirs): {e}",
                self.workspace.display()
            ))
        })?;
        // The skills' folders are readable by the tools (their scripts and
        // references), not writable.
        let skills = crate::skills::load(workspace.root());
        for warning in &skills.warnings {
            eprintln!("gyre: warning: {warning}");
        }
        let skills = skills.skills;
        let workspace = workspace.with_read_only_dirs(skills.dirs());
        let user_dir = user_config_dir();
        let client = self.provider.client(&self.timeouts);
        // The user's and the project's rule files (AGENTS.md and the like),
        // and the repository's state, once for every agent of the session.
        let rules = prompt::find_rule_files(workspace.root(), user_dir.as_deref());
        let template = PromptTemplate {
            api: client.api().to_string(),
            cwd: workspace.root().to_path_buf(),
            git_status,
            rules,
            rules_budget: prompt::DEFAULT_RULES_BUDGET,
            // `--json-schema`'s instruction closes the prompt.
            append: match (&self.append_system_prompt, &self.output_schema) {
                (Some(text), Some(schema)) => Some(format!("{text}\n\n{}", schema.instruction())),
                (text, schema) => text
                    .clone()
                    .or_else(|| schema.as_ref().map(|s| s.instruction())),
            },
            base: self.system_prompt.clone(),
        };
        let mut catalog = agent_catalog(user_dir.as_deref(), workspace.root());
        if !self.sdk_agents.is_empty() {
            let profiles = catalog.iter().cloned();
            catalog = gyre_core::agents::AgentCatalog::new(
                profiles.chain(self.sdk_agents.iter().cloned()).collect(),
            );
        }
        if let Some(model) = &self.small_model {
            catalog.use_small_model(model);
        }
        let catalog = Arc::new(catalog);
        // A misspelt `--agent` is said before a session is stored for it.
        if let Some(name) = &self.agent {
            catalog.require(name).map_err(Exit::usage)?;
        }
        let mut config = AgentConfig::new(self.provider.model.clone(), String::new());
        config.max_output_tokens = self.max_output_tokens;
        if !gyre_llm::catalog::takes_images(&self.provider.model) {
            config.images = gyre_tools::ImageSupport::NotAccepted;
        }
        config.max_turns = self.max_turns;
        config.permissions = self.permissions.clone();
        config.approvals = approvals;
        config.retry = self.retry;
        config.pricing = self.pricing;
        config.context = self.context.clone();
        config.limits = self.limits;
        config.redactor = self.redactor.clone();
        if self.checkpoints {
            let root = crate::home::checkpoints_root(home);
            config.checkpoints = Some(Arc::new(Checkpointer::new(
                Checkpointer::dir_for(&root, workspace.root()),
                workspace.root(),
            )));
        }
        if let Some(limit) = self.tools.read_only_concurrency {
            config.read_only_concurrency = limit.max(1);
        }
        if let Some(policy) = self.tools.sibling_abort {
            config.sibling_abort = policy;
        }
        config.tool_output = Arc::new(OutputLimits {
            max_result_tokens: self
                .tools
                .max_result_tokens
                .unwrap_or(OutputLimits::default().max_result_tokens),
            spill_dir: Some(spill_dir),
        });

        config.dual_model = self.dual_model.clone();
        config.loop_guard = self.loop_guard;
        config.max_stop_continuations = self.max_stop_continuations;
        config.output_schema = self.output_schema.clone();
        config.effort = self.effort;
        config.web_search = self.web_search;
        if !self.hooks.is_empty() {
            let hooks = Hooks::new(&self.hooks, workspace.root())
                .map_err(Exit::usage)?
                .with_callbacks(self.hook_callbacks.clone());
            config.hooks = Some(Arc::new(hooks));
        }
        config.sandbox = crate::sandbox::sandbox(self.sandbox.clone());
        let servers =
            crate::mcp_trust::gate(&self.mcp_servers, workspace.root(), home, self.project_mcp);
        config.late_tools = crate::mcp_tools::start(&servers);
        if config.late_tools.is_none() && !self.sdk_mcp_servers.is_empty() {
            // The Agent SDK's in-process servers' tools join here (gyre-exec).
            config.late_tools = Some(gyre_tools::LateTools::new());
        }
        // The language servers' `diagnostics` tool joins the late tools
        // when a server has started.
        let late = config.late_tools.clone().unwrap_or_default();
        config.diagnostics = crate::lsp::start(&self.lsp, workspace.root(), &late);
        if config.diagnostics.is_some() {
            config.late_tools = Some(late);
        }
        let mut builtin = Registry::builtin();
        if let Some(keep) = &self.builtin_tools {
            builtin.retain(|name| keep.iter().any(|k| k == name));
        }
        let setup =
            SubagentSetup::with_skills(catalog.clone(), template, builtin, self.subagents, skills);
        Ok(AgentFactory {
            client,
            store,
            workspace: Arc::new(workspace),
            config,
            catalog,
            setup,
            default_agent: self.default_agent.clone(),
            require_completion: self.require_completion,
            provider_name: self.provider.name.clone(),
            model: self.provider.model.clone(),
            mcp_servers: servers,
            model_overrides: self.model_overrides.clone(),
        })
    }
}

/// Builds the agents of one workspace (see [`Settings::factory`]).
pub struct AgentFactory {
    pub client: Arc<dyn ModelClient>,
    pub store: Arc<dyn SessionStore>,
    pub workspace: Arc<Workspace>,
    /// The session-wide configuration each agent profile narrows.
    pub config: AgentConfig,
    pub catalog: Arc<AgentCatalog>,
    setup: Arc<SubagentSetup>,
    default_agent: String,
    require_completion: bool,
    /// The workspace's provider (its name), which new sessions are stored
    /// with.
    pub provider_name: String,
    /// The workspace's model, which new sessions are stored with.
    pub model: String,
    /// The workspace's MCP servers as started (trust applied), for a
    /// session that starts its own set (`editor_mcp`).
    pub mcp_servers: Vec<gyre_mcp::ServerEntry>,
    /// What the config says of its models, for a switch
    /// ([`crate::models::adjust`]).
    pub model_overrides: Arc<BTreeMap<String, crate::models::ModelOverride>>,
}

impl std::fmt::Debug for AgentFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentFactory")
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

impl AgentFactory {
    /// The agent that runs `session`: `name` (`--agent`), else the agent
    /// the session ran, else the configured default. The session remembers
    /// it. Warnings of the prompt's assembly go to stderr.
    pub fn agent_for(&self, session: &mut Session, name: Option<&str>) -> Result<Arc<Agent>, Exit> {
        let name = name
            .map(str::to_string)
            .or_else(|| session.state.agent.clone())
            .unwrap_or_else(|| self.default_agent.clone());
        let (agent, warnings) = self.agent(&name)?;
        for warning in &warnings {
            eprintln!("gyre: warning: {warning}");
        }
        session.state.agent = (name != DEFAULT_AGENT).then_some(name);
        Ok(agent)
    }

    /// The agent `name` of the catalogue, with the warnings of its prompt's
    /// assembly (rule files cut).
    pub fn agent(&self, name: &str) -> Result<(Arc<Agent>, Vec<String>), Exit> {
        self.agent_with(name, |_| {})
    }

    /// The agent `name` over the session-wide configuration changed by
    /// `adjust` (the TUI's `/model` and `/permissions MODE`).
    pub fn agent_with(
        &self,
        name: &str,
        adjust: impl FnOnce(&mut AgentConfig),
    ) -> Result<(Arc<Agent>, Vec<String>), Exit> {
        let mut profile = self.catalog.require(name).map_err(Exit::usage)?.clone();
        if self.require_completion {
            profile.completion = Completion::Required;
        }
        let mut config = self.config.clone();
        adjust(&mut config);
        Ok(Agent::from_profile(
            self.client.clone(),
            self.store.clone(),
            self.workspace.clone(),
            &config,
            &self.setup,
            &profile,
        ))
    }

    /// Waits, at most `bound`, until each MCP server of the workspace is
    /// ready or failed (headless runs, before their first request).
    pub async fn wait_for_mcp(&self, bound: std::time::Duration) {
        if let Some(late) = &self.config.late_tools {
            let _ = tokio::time::timeout(bound, late.wait_started()).await;
        }
    }

    /// The agent a session runs when none is named: the configured default.
    pub fn default_agent(&self) -> &str {
        &self.default_agent
    }

    /// Whether an agent built here is still alive (each holds the
    /// workspace, and with the configuration the MCP servers).
    pub fn in_use(&self) -> bool {
        Arc::strong_count(&self.workspace) > 1
    }
}

/// The built-in agents and those of the user's and the project's agent
/// directories (a file that does not load is said once on stderr).
pub fn agent_catalog(user_dir: Option<&Path>, workspace: &Path) -> AgentCatalog {
    let mut dirs = Vec::new();
    if let Some(dir) = user_dir {
        dirs.push(dir.join("agents"));
    }
    dirs.push(workspace.join(".gyre").join("agents"));
    let loaded = gyre_core::agents::file::load_dirs(&dirs);
    for warning in &loaded.warnings {
        eprintln!("gyre: warning: {warning}");
    }
    AgentCatalog::new(loaded.profiles)
}
