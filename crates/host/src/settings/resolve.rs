//! [`Settings::resolve`]: flags over the project's config over the user's
//! over [`Settings::default`], with Claude Code's spellings of the same
//! things (`claude_compat`) folded in, and the checks of each config
//! section. Everything wrong is bad usage ([`Exit::usage`]) in one line,
//! found before any session is stored.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gyre_core::{
    ContextConfig, LoopGuardConfig, PermissionContext, PermissionMode, Permissions, RetryPolicy,
    Rule, RunLimits, SubagentLimits, Tokenizer,
};
use gyre_llm::catalog::Pricing;

use crate::claude_compat;
use crate::config::{
    Config, ContextSection, ModelConfig, RetryConfig, TokenizerChoice, user_config_dir,
};
use crate::exit::Exit;
use crate::flags::Flags;
use crate::mcp_tools::RunServers;
use crate::mcp_trust::ProjectMcp;
use crate::provider::{Provider, ProviderChoice};
use crate::session_choice::SessionChoice;

use super::{Settings, max_output_tokens, redactor};

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
            model_overrides: Arc::new(
                config
                    .models
                    .iter()
                    .map(|(name, model)| {
                        let described = crate::models::ModelOverride {
                            context_window: model.context_window,
                            max_output_tokens: model.max_output_tokens,
                            pricing: configured_pricing(model),
                        };
                        (name.clone(), described)
                    })
                    .collect(),
            ),
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
