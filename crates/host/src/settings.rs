//! [`Settings`]: everything a run was asked for, resolved from [`Flags`],
//! the config files and the environment (the second stage; see the crate
//! doc), and [`Settings::default`], the one place every default of a run is
//! written.
//!
//! Invariants: flags win over the project's config, which wins over the
//! user's, which wins over [`Settings::default`]; defaults that core
//! defines (the output limit, stop-hook continuations, the retry and
//! context policies) are read from core, never restated. Anything wrong
//! (an unknown provider, a missing key, a bad rule, a share out of range)
//! is bad usage, said in one line before any session is stored.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gyre_core::agents::DEFAULT_AGENT;
use gyre_core::hooks::HooksConfig;
use gyre_core::prompt;
use gyre_core::{
    Agent, AgentConfig, Approvals, ContextConfig, LoopGuardConfig, PermissionContext,
    PermissionMode, Permissions, Redactor, RetryPolicy, Rule, RunLimits, Session, SubagentLimits,
    Tokenizer,
};
use gyre_llm::catalog::Pricing;
use gyre_tools::SandboxPolicy;

use crate::AgentFactory;
use crate::claude_compat;
use crate::config::{
    Config, ContextSection, ModelConfig, RetryConfig, SandboxSection, TimeoutsConfig,
    TokenizerChoice, ToolsConfig, user_config_dir,
};
use crate::exit::Exit;
use crate::flags::{Flags, InputFormat, OutputFormat};
use crate::mcp_tools::RunServers;
use crate::mcp_trust::ProjectMcp;
use crate::prompt_tool::{McpPrompt, PromptTool};
use crate::provider::{Provider, ProviderChoice};
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
    /// Flags win over the project's config, which wins over the user's,
    /// which wins over [`Settings::default`].
    pub fn resolve(args: &Flags) -> Result<Settings, Exit> {
        let defaults = Settings::default();
        let cwd = match &args.cwd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir()
                .map_err(|e| Exit::usage(format!("cannot read the current directory: {e}")))?,
        };
        let workspace = workspace_dir(&cwd)?;
        let sources = claude_compat::sources(args.setting_sources.as_deref())?;
        let config = Config::load_sources(user_config_dir().as_deref(), &workspace, sources)
            .map_err(|e| Exit::usage(e.to_string()))?;
        let claude = args
            .settings
            .as_deref()
            .map(claude_compat::claude_settings)
            .transpose()?
            .unwrap_or_default();
        let mut warnings = claude_compat::notes(args);
        if !claude.ignored.is_empty() {
            warnings.push(format!(
                "--settings: gyre reads only `permissions` and `model`; {} not honoured",
                claude.ignored.join(", ")
            ));
        }

        let provider = Provider::resolve(
            ProviderChoice {
                provider: args.provider.as_deref().or(config.provider.as_deref()),
                model: args
                    .model
                    .as_deref()
                    .or(claude.model.as_deref())
                    .or(config.model.as_deref()),
                base_url: args.base_url.as_deref().or(config.base_url.as_deref()),
            },
            |var| std::env::var(var).ok(),
        )?;

        let mode_name = match args.dangerously_skip_permissions {
            true => Some("bypassPermissions"),
            false => args
                .permission_mode
                .as_deref()
                .or(claude.default_mode.as_deref())
                .or(config.permission_mode.as_deref()),
        };
        let mode: PermissionMode = match mode_name.map(claude_compat::permission_mode) {
            Some((name, note)) => {
                warnings.extend(note);
                name.parse().map_err(Exit::usage)?
            }
            None => PermissionMode::default(),
        };
        let builtin_tools = claude_compat::builtin_tools(args.tools.as_deref(), &mut warnings);
        // `--tools` without `web_search` leaves the provider's search out too.
        let web_search = config.web_search.setting().filter(|_| {
            (builtin_tools.as_ref())
                .is_none_or(|keep| keep.iter().any(|n| n == gyre_core::WEB_SEARCH_TOOL))
        });
        let mut deny = rules(
            args.disallowed_tools.as_deref(),
            config.disallowed_tools.as_deref(),
            &claude.deny,
        )?;
        // `task` is no registry tool: `--tools` without it denies it.
        if builtin_tools
            .as_ref()
            .is_some_and(|keep| !keep.iter().any(|name| name == "task"))
        {
            deny.push(Rule {
                tool: "task".to_string(),
                specifier: None,
            });
        }
        let permissions = Permissions {
            mode,
            allow: rules(
                args.allowed_tools.as_deref(),
                config.allowed_tools.as_deref(),
                &claude.allow,
            )?,
            deny,
            ask: rules(
                args.ask_tools.as_deref(),
                config.ask_tools.as_deref(),
                &claude.ask,
            )?,
            context: PermissionContext::new(&workspace),
        };
        let model_config = config
            .models
            .get(&provider.model)
            .copied()
            .unwrap_or_default();
        let catalogued = gyre_llm::catalog::lookup(&provider.model);
        let max_output_tokens = max_output_tokens(
            model_config.max_output_tokens,
            &provider.model,
            defaults.max_output_tokens,
        );
        let pricing =
            configured_pricing(&model_config).or_else(|| catalogued.and_then(|info| info.pricing));
        if args.max_budget_usd.is_some() && pricing.is_none() {
            return Err(Exit::usage(format!(
                "--max-budget-usd needs the prices of {}: set input_price and output_price under [models.\"{}\"] in the config",
                provider.model, provider.model
            )));
        }
        let window = model_config
            .context_window
            .or_else(|| catalogued.map(|info| info.context_window));
        let context = context_config(&config.context, window, &provider, &defaults.context)?;
        let redactor = redactor(&config)?;
        let home_dir = std::env::var_os("HOME").map(PathBuf::from);
        let sandbox = crate::sandbox::policy(
            args.sandbox,
            &config.sandbox,
            &workspace,
            home_dir.as_deref(),
        );

        let guard_defaults = defaults.loop_guard;
        let loop_guard = LoopGuardConfig {
            repeat: config.loop_guard.repeat.unwrap_or(guard_defaults.repeat),
            cycle_repeats: config
                .loop_guard
                .cycle_repeats
                .unwrap_or(guard_defaults.cycle_repeats),
            max_cycle: config
                .loop_guard
                .max_cycle
                .unwrap_or(guard_defaults.max_cycle),
        };
        let RunServers {
            servers: mcp_servers,
            prompt: permission_prompt,
            stdio_prompt: permission_prompt_stdio,
            sdk: sdk_mcp_servers,
        } = crate::mcp_tools::run_servers(&config, &workspace, args)?;
        let mut server_names: Vec<&str> = mcp_servers.iter().map(|s| s.name.as_str()).collect();
        server_names.extend(sdk_mcp_servers.iter().map(String::as_str));
        warnings.extend(claude_compat::unmatched_rules(
            &permissions,
            builtin_tools.as_deref(),
            &server_names,
        ));
        let mut tools = config.tools.clone();
        let extra_dirs = args
            .add_dirs
            .iter()
            .chain(&claude.additional_directories)
            .map(|dir| std::path::absolute(dir).unwrap_or_else(|_| dir.clone()));
        if args.add_dirs.len() + claude.additional_directories.len() > 0 {
            tools.extra_dirs.get_or_insert_default().extend(extra_dirs);
        }
        for warning in &warnings {
            eprintln!("gyre: warning: {warning}");
        }
        let small_model = match config.subagents.small_model.clone() {
            Some(model) if model.trim().is_empty() => None,
            Some(model) => Some(model),
            None => provider.small_model.clone(),
        };
        Ok(Settings {
            provider,
            workspace,
            max_turns: args.max_turns.or(config.max_turns),
            permissions,
            append_system_prompt: claude_compat::appended(args)?.or(config.append_system_prompt),
            max_output_tokens,
            output_format: args.output_format.unwrap_or(defaults.output_format),
            include_partial_messages: args.include_partial_messages,
            retry: retry_policy(&config.retry, defaults.retry),
            tools,
            timeouts: config.timeouts,
            pricing,
            context,
            limits: RunLimits {
                max_cost_usd: args.max_budget_usd,
                max_tokens: args.max_tokens,
            },
            session: SessionChoice::from_args(args)?,
            compact_first: args.compact_first,
            redactor: Arc::new(redactor),
            checkpoints: config.checkpoints.unwrap_or(defaults.checkpoints),
            alt_screen: args.alt_screen || config.alt_screen.unwrap_or(defaults.alt_screen),
            agent: args.agent.clone(),
            default_agent: config
                .subagents
                .default_agent
                .clone()
                .unwrap_or(defaults.default_agent),
            require_completion: args.require_completion,
            small_model,
            configured_models: config.models.keys().cloned().collect(),
            loop_guard,
            max_stop_continuations: config
                .max_stop_continuations
                .unwrap_or(defaults.max_stop_continuations),
            hooks: config.hooks.clone(),
            hook_callbacks: None,
            sdk_agents: Vec::new(),
            dual_model: args.dual_model.clone(),
            sandbox,
            permission_prompt,
            mcp_servers,
            lsp: crate::lsp::LspSection::of(&config.lsp, config.diagnostics),
            project_mcp: ProjectMcp::Start,
            system_prompt: claude_compat::system_prompt(args)?,
            builtin_tools,
            input_format: args.input_format.unwrap_or_default(),
            replay_user_messages: args.replay_user_messages,
            include_hook_events: args.include_hook_events,
            permission_prompt_stdio,
            sdk_mcp_servers,
            allow_bypass: args.dangerously_skip_permissions
                || args.allow_dangerously_skip_permissions,
            session_id: args.session_id.clone(),
            output_schema: claude_compat::output_schema(args)?,
            effort: claude_compat::effort(args, config.effort)?,
            web_search,
            warnings,
            subagents: SubagentLimits {
                max_depth: config
                    .subagents
                    .max_depth
                    .unwrap_or(defaults.subagents.max_depth),
                max_concurrent: config
                    .subagents
                    .max_concurrent
                    .unwrap_or(defaults.subagents.max_concurrent)
                    .max(1),
            },
        })
    }

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

/// `[context]` over the defaults, checked.
fn context_config(
    section: &ContextSection,
    window: Option<u64>,
    provider: &Provider,
    defaults: &ContextConfig,
) -> Result<ContextConfig, Exit> {
    let share = |name: &str, value: Option<f64>, default: f64| match value {
        None => Ok(default),
        Some(v) if v > 0.0 && v <= 1.0 => Ok(v),
        Some(v) => Err(Exit::usage(format!(
            "[context] {name} = {v} is not a share between 0 and 1 (e.g. 0.8)"
        ))),
    };
    let tokenizer = match section.tokenizer.unwrap_or(TokenizerChoice::Auto) {
        TokenizerChoice::Calibrated => Tokenizer::Calibrated,
        TokenizerChoice::O200k => Tokenizer::O200k,
        // OpenAI's own models count with o200k; other servers' models differ.
        TokenizerChoice::Auto
            if matches!(provider.name.as_str(), "openai" | "openai-responses") =>
        {
            Tokenizer::O200k
        }
        TokenizerChoice::Auto => Tokenizer::Calibrated,
    };
    Ok(ContextConfig {
        window,
        compaction: section.compaction.unwrap_or(defaults.compaction),
        pruning: section.pruning.unwrap_or(defaults.pruning),
        warn_at: share("warn_at", section.warn_at, defaults.warn_at)?,
        prune_at: share("prune_at", section.prune_at, defaults.prune_at)?,
        compact_at: share("compact_at", section.compact_at, defaults.compact_at)?,
        margin_tokens: section.margin_tokens,
        keep_recent_tokens: section.keep_recent_tokens,
        protect_recent_tokens: section.protect_recent_tokens,
        compaction_model: section.compaction_model.clone(),
        tokenizer,
        cached_compaction: defaults.cached_compaction,
        eager_pruning: defaults.eager_pruning,
    })
}

/// Prices from the config: input and output must both be given; cache
/// prices default to the input price.
fn configured_pricing(model: &ModelConfig) -> Option<Pricing> {
    let (input, output) = (model.input_price?, model.output_price?);
    Some(Pricing {
        input,
        output,
        cache_read: model.cache_read_price.unwrap_or(input),
        cache_write: model.cache_write_price.unwrap_or(input),
    })
}

fn retry_policy(config: &RetryConfig, defaults: RetryPolicy) -> RetryPolicy {
    let ms = |value: Option<u64>, default: Duration| value.map_or(default, Duration::from_millis);
    RetryPolicy {
        max_retries: config.max_retries.unwrap_or(defaults.max_retries),
        initial_delay: ms(config.initial_delay_ms, defaults.initial_delay),
        max_delay: ms(config.max_delay_ms, defaults.max_delay),
        budget: ms(config.budget_ms, defaults.budget),
    }
}

/// The rules of the config's lists, Claude Code's `--settings` and the
/// flag, in that order.
fn rules(
    flag: Option<&str>,
    config: Option<&[String]>,
    settings: &[String],
) -> Result<Vec<Rule>, Exit> {
    let mut all = Vec::new();
    for list in config
        .unwrap_or_default()
        .iter()
        .chain(settings)
        .map(String::as_str)
        .chain(flag)
    {
        all.extend(Rule::parse_list(list).map_err(Exit::usage)?);
    }
    Ok(all)
}

fn workspace_dir(dir: &Path) -> Result<PathBuf, Exit> {
    match std::fs::canonicalize(dir) {
        Ok(path) if path.is_dir() => Ok(path),
        Ok(path) => Err(Exit::usage(format!(
            "{} is not a directory",
            path.display()
        ))),
        Err(e) => Err(Exit::usage(format!(
            "cannot use {} as the workspace: {e}",
            dir.display()
        ))),
    }
}

#[cfg(test)]
mod tests;
