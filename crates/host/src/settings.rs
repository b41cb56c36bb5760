//! [`Settings`]: everything a run was asked for, resolved from
//! [`Flags`](crate::Flags), the config files and the environment (the
//! second stage; see the crate doc), and [`Settings::default`], the one
//! place every default of a run is written.
//!
//! Invariants: flags win over the project's config, which wins over the
//! user's, which wins over [`Settings::default`]; defaults that core
//! defines (the output limit, stop-hook continuations, the retry and
//! context policies) are read from core, never restated. Anything wrong
//! (an unknown provider, a missing key, a bad rule, a share out of range)
//! is bad usage, said in one line before any session is stored.
//!
//! The resolution itself (flags over config over defaults, and the checks
//! of each section) is in `resolve`; this module holds the type, its
//! defaults, and starting a run from it.

mod resolve;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gyre_core::agents::DEFAULT_AGENT;
use gyre_core::hooks::HooksConfig;
use gyre_core::prompt;
use gyre_core::{
    Agent, AgentConfig, Approvals, ContextConfig, LoopGuardConfig, Permissions, Redactor,
    RetryPolicy, RunLimits, Session, SubagentLimits,
};
use gyre_llm::catalog::Pricing;
use gyre_tools::SandboxPolicy;

use crate::AgentFactory;
use crate::config::{Config, SandboxSection, TimeoutsConfig, ToolsConfig};
use crate::exit::Exit;
use crate::flags::{InputFormat, OutputFormat};
use crate::mcp_trust::ProjectMcp;
use crate::prompt_tool::{McpPrompt, PromptTool};
use crate::provider::Provider;
use crate::session_choice::{NewSession, SessionChoice, open_session};

/// The output limit asked of a catalogued model at most: enough for any
/// single answer an agent needs, without reserving a whole 128k window.
pub const CATALOGUED_OUTPUT_CAP: u32 = 32_000;

/// The output limit of `model`: the config's, else the catalogue's (capped
/// at [`CATALOGUED_OUTPUT_CAP`]), else `fallback`.
pub fn max_output_tokens(configured: Option<u32>, model: &str, fallback: u32) -> u32 {
    configured
        .or_else(|| {
            gyre_llm::catalog::lookup(model)
                .map(|info| info.max_output_tokens.min(u64::from(CATALOGUED_OUTPUT_CAP)) as u32)
        })
        .unwrap_or(fallback)
}
/// Everything a run was asked for, resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    pub provider: Provider,
    pub workspace: PathBuf,
    pub max_turns: Option<u32>,
    pub permissions: Permissions,
    pub append_system_prompt: Option<String>,
    pub max_output_tokens: u32,
    pub output_format: OutputFormat,
    pub include_partial_messages: bool,
    pub retry: RetryPolicy,
    pub tools: ToolsConfig,
    pub timeouts: TimeoutsConfig,
    pub pricing: Option<Pricing>,
    pub context: ContextConfig,
    pub limits: RunLimits,
    /// The stored session to go on with, or a copy of it.
    pub session: SessionChoice,
    pub compact_first: bool,
    /// Secrets kept out of stored outputs (`[redact] patterns` and keys).
    pub redactor: Arc<Redactor>,
    /// Whether the files are checkpointed before each mutating call.
    pub checkpoints: bool,
    /// `--alt-screen` or `alt_screen = true`: the terminal UI takes the
    /// alternate screen instead of drawing inline.
    pub alt_screen: bool,
    /// `--agent`: the agent to run (else the session's, else the default).
    pub agent: Option<String>,
    /// `[subagents] default_agent`, else `build`.
    pub default_agent: String,
    pub require_completion: bool,
    pub dual_model: Option<String>,
    /// The `explore` agent's model: `[subagents] small_model`, else the
    /// provider's small model on the vendor's own endpoint; `None`: the
    /// session's model.
    pub small_model: Option<String>,
    /// The models the config describes (`[models."NAME"]`), for the TUI's
    /// `/model` completion.
    pub configured_models: Vec<String>,
    /// What the config says of each of them (window, output limit,
    /// prices), which a switch to that model applies
    /// ([`crate::models::adjust`]).
    pub model_overrides: Arc<BTreeMap<String, crate::models::ModelOverride>>,
    pub subagents: SubagentLimits,
    pub loop_guard: LoopGuardConfig,
    pub hooks: HooksConfig,
    /// Runs the `HookKind::Callback` hooks of `hooks` (an Agent SDK's
    /// hooks, over the control protocol).
    pub hook_callbacks: Option<Arc<dyn gyre_core::hooks::HookCallbacks>>,
    /// Agents an Agent SDK defined in its `initialize` request; they join
    /// the agent files' (a same-named one replaces a file's).
    pub sdk_agents: Vec<gyre_core::agents::AgentProfile>,
    pub max_stop_continuations: u32,
    /// The sandbox of `bash` commands (`--sandbox`, `[sandbox]`).
    pub sandbox: SandboxPolicy,
    /// `--permission-prompt-tool`: the MCP tool asked instead of refusing.
    pub permission_prompt: Option<PromptTool>,
    /// The MCP servers whose tools the session offers (`mcp_tools`).
    pub mcp_servers: Vec<gyre_mcp::ServerEntry>,
    /// `[lsp.NAME]` and `[diagnostics]`: the language servers.
    pub lsp: crate::lsp::LspSection,
    /// Whether the project's own MCP servers start without the user's
    /// trust ([`ProjectMcp::Start`], every frontend but the TUI).
    pub project_mcp: ProjectMcp,
    /// `--system-prompt[-file]`: the base layer of the system prompt,
    /// replaced (`None`: gyre's own).
    pub system_prompt: Option<String>,
    /// `--tools`: the built-in tools offered, by gyre's names (`None`:
    /// all of them).
    pub builtin_tools: Option<Vec<String>>,
    /// `--input-format`.
    pub input_format: InputFormat,
    pub replay_user_messages: bool,
    pub include_hook_events: bool,
    /// `--permission-prompt-tool stdio`: asks go to the Agent SDK
    /// (`can_use_tool` control requests) in a `--input-format stream-json`
    /// session.
    pub permission_prompt_stdio: bool,
    /// The Agent SDK's in-process MCP servers of `--mcp-config` (`"type":
    /// "sdk"`), served over the control protocol.
    pub sdk_mcp_servers: Vec<String>,
    /// `--dangerously-skip-permissions` or `--allow-dangerously-skip-permissions`:
    /// bypassPermissions may be switched to during the run.
    pub allow_bypass: bool,
    /// `--session-id`: the id of the new session.
    pub session_id: Option<String>,
    /// `--json-schema`: what the final answer must match.
    pub output_schema: Option<gyre_core::OutputSchema>,
    /// `--effort` (or config `effort`): how hard the model thinks.
    pub effort: Option<gyre_llm::Effort>,
    /// `[web_search]`: the provider's server-side search (`None`: off).
    pub web_search: Option<gyre_llm::WebSearch>,
    /// What the run said on stderr about its flags and rules (accepted but
    /// not honoured, rules that name no tool), for `system/init`.
    pub warnings: Vec<String>,
}

impl Default for Settings {
    /// A run with no flags, no config file and no key: the anthropic
    /// preset, the current directory (as given, not canonical), and every
    /// default in one place. Tests and the demo state only what differs.
    fn default() -> Self {
        // Core's own defaults of an agent, not restated here.
        let core = AgentConfig::new(String::new(), String::new());
        let workspace = PathBuf::from(".");
        Settings {
            provider: Provider::default(),
            sandbox: crate::sandbox::policy(None, &SandboxSection::default(), &workspace, None),
            workspace,
            max_turns: None,
            permissions: Permissions::default(),
            append_system_prompt: None,
            max_output_tokens: core.max_output_tokens,
            output_format: OutputFormat::default(),
            include_partial_messages: false,
            retry: core.retry,
            tools: ToolsConfig::default(),
            timeouts: TimeoutsConfig::default(),
            pricing: None,
            context: core.context,
            limits: RunLimits::default(),
            session: SessionChoice::default(),
            compact_first: false,
            redactor: Arc::default(),
            checkpoints: true,
            alt_screen: false,
            agent: None,
            default_agent: DEFAULT_AGENT.to_string(),
            require_completion: false,
            dual_model: None,
            small_model: None,
            configured_models: Vec::new(),
            model_overrides: Arc::default(),
            subagents: SubagentLimits::default(),
            loop_guard: core.loop_guard,
            hooks: HooksConfig::default(),
            hook_callbacks: None,
            sdk_agents: Vec::new(),
            max_stop_continuations: core.max_stop_continuations,
            permission_prompt: None,
            mcp_servers: Vec::new(),
            lsp: crate::lsp::LspSection::default(),
            project_mcp: ProjectMcp::Start,
            system_prompt: None,
            builtin_tools: None,
            input_format: InputFormat::default(),
            replay_user_messages: false,
            include_hook_events: false,
            permission_prompt_stdio: false,
            sdk_mcp_servers: Vec::new(),
            allow_bypass: false,
            session_id: None,
            output_schema: None,
            effort: None,
            web_search: Some(gyre_llm::WebSearch::default()),
            warnings: Vec::new(),
        }
    }
}

impl Settings {
    /// Opens the store, builds the agent and creates the session.
    pub async fn start(&self, home: &Path, prompt: &str) -> Result<(Arc<Agent>, Session), Exit> {
        let (_, agent, session) = self.start_with(home, prompt, self.approvals()).await?;
        Ok((agent, session))
    }

    /// The same with `approvals` answering asks (`--permission-prompt-tool
    /// stdio`: the Agent SDK's `can_use_tool`), and the factory, for a
    /// session whose model or mode changes later.
    pub async fn start_with(
        &self,
        home: &Path,
        prompt: &str,
        approvals: Approvals,
    ) -> Result<(AgentFactory, Arc<Agent>, Session), Exit> {
        let location = crate::store::location(home)?;
        // `git status` (a process, in a repository) runs while the store opens.
        let (store, git_status) = tokio::join!(
            crate::store::open(&location),
            prompt::git_status(&self.workspace)
        );
        let store = store?;
        let factory = self.factory(home, store.clone(), git_status, approvals)?;
        let cwd = factory.workspace.root().display().to_string();
        let mut session = open_session(
            store.as_ref(),
            &location,
            &self.session,
            NewSession {
                cwd: &cwd,
                provider: &self.provider.name,
                model: &self.provider.model,
                prompt,
            },
        )
        .await?;
        let agent = factory.agent_for(&mut session, self.agent.as_deref())?;
        // The first request offers the MCP servers' tools, as Claude Code's
        // `-p` does: each server is ready or failed by then.
        factory.wait_for_mcp(self.mcp_start_bound()).await;
        Ok((factory, agent, session))
    }

    /// How long a run waits for its MCP servers to start: the longest
    /// start timeout, plus the `tools/list` that follows (a server that
    /// hangs there is not waited for beyond it).
    pub fn mcp_start_bound(&self) -> Duration {
        self.mcp_servers
            .iter()
            .filter(|s| s.enabled)
            .map(|s| s.timeouts.start + s.timeouts.call.min(Duration::from_secs(10)))
            .max()
            .unwrap_or_default()
    }

    /// Who answers permission requests in a headless run: the
    /// `--permission-prompt-tool`, else no one.
    pub fn approvals(&self) -> Approvals {
        match &self.permission_prompt {
            // Started on the first ask, not here.
            Some(tool) => Approvals::Prompt(Arc::new(McpPrompt::new(tool.clone()))),
            None => Approvals::Headless,
        }
    }
}

/// The redactor of `config`'s `[redact] patterns` and the provider keys in
/// the environment.
pub fn redactor(config: &Config) -> Result<Redactor, Exit> {
    let patterns = config.redact.patterns.clone().unwrap_or_default();
    Redactor::from_env(&patterns).map_err(|e| Exit::usage(format!("[redact] patterns: {e}")))
}

#[cfg(test)]
mod tests;
