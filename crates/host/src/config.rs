//! Configuration files: `~/.config/gyre/config.toml`, then the project's
//! `.gyre/config.toml`, then the project's local `.gyre/config.local.toml`
//! (the same keys; meant to be git-ignored, for one person's settings); a
//! later file overrides an earlier one key by key, and flags override all.
//! Permission rule lists (`allowed_tools`, `ask_tools`, `disallowed_tools`)
//! are the exception: they are concatenated across the files, so that a deny
//! rule of any layer applies (a later layer can add rules, never remove
//! them). Unknown keys are errors (a typo must not be ignored silently); the
//! error names the file, the line and the problem.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub max_turns: Option<u32>,
    /// Reasoning effort: `low`, `medium`, `high` or `max`.
    pub effort: Option<gyre_llm::Effort>,
    pub permission_mode: Option<String>,
    pub allowed_tools: Option<Vec<String>>,
    pub disallowed_tools: Option<Vec<String>>,
    /// Rules that ask even when the mode or an allow rule would allow.
    pub ask_tools: Option<Vec<String>>,
    pub append_system_prompt: Option<String>,
    /// Snapshot the workspace's files before each mutating call, so that
    /// `gyre sessions rewind` can restore them (default true).
    pub checkpoints: Option<bool>,
    /// The terminal UI in the alternate screen (full-screen, its own
    /// scrolling) instead of inline (default false).
    pub alt_screen: Option<bool>,
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
    #[serde(default)]
    pub retry: RetryConfig,
    #[serde(default)]
    pub timeouts: TimeoutsConfig,
    #[serde(default)]
    pub tools: ToolsConfig,
    #[serde(default)]
    pub context: ContextSection,
    #[serde(default)]
    pub redact: RedactSection,
    #[serde(default)]
    pub subagents: SubagentsSection,
    /// `[loop_guard]`: when repeated calls trip the loop guard.
    #[serde(default)]
    pub loop_guard: LoopGuardSection,
    /// `[[hooks.EVENT]]` tables, as Claude Code writes them; every file's
    /// hooks run (later files add to earlier ones).
    #[serde(default)]
    pub hooks: gyre_core::hooks::HooksConfig,
    /// Continuations a Stop hook may force in one run (default 3).
    pub max_stop_continuations: Option<u32>,
    /// `[sandbox]`: the sandbox of `bash` commands.
    #[serde(default)]
    pub sandbox: SandboxSection,
    /// `[mcp_servers.NAME]`: MCP servers, with Codex's keys; a later file's
    /// entry replaces an earlier one of the same name.
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerSection>,
    /// `[lsp.NAME]`: language servers (over the built-in defaults); a
    /// later file's entry replaces an earlier one of the same name.
    #[serde(default)]
    pub lsp: BTreeMap<String, gyre_lsp::ServerConfig>,
    /// `[diagnostics]`: the wait for a changed file's diagnostics.
    #[serde(default)]
    pub diagnostics: gyre_lsp::DiagnosticsConfig,
    /// `[web_search]`: the provider's server-side web search.
    #[serde(default)]
    pub web_search: WebSearchSection,
}

/// `[web_search]`: the provider's own web search (Anthropic, OpenAI
/// Responses, Gemini), offered to the model as a server-side tool.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSearchSection {
    /// Offer it (default true; APIs without one never get it).
    pub enabled: Option<bool>,
    /// The most searches per request (Anthropic only; default: the
    /// provider's).
    pub max_uses: Option<u32>,
}

impl WebSearchSection {
    /// The setting the requests carry (`None`: off).
    pub fn setting(&self) -> Option<gyre_llm::WebSearch> {
        self.enabled.unwrap_or(true).then_some(gyre_llm::WebSearch {
            max_uses: self.max_uses,
        })
    }
}

/// `[mcp_servers.NAME]`: one MCP server (Codex's keys): a `command` (stdio)
/// or a `url` (streamable HTTP).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSection {
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Added to gyre's environment for the server.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The server's working directory (relative: to the workspace; default:
    /// the workspace).
    pub cwd: Option<PathBuf>,
    pub url: Option<String>,
    /// A variable holding a bearer token for an HTTP server.
    pub bearer_token_env_var: Option<String>,
    /// Headers sent to an HTTP server.
    #[serde(default)]
    pub http_headers: BTreeMap<String, String>,
    /// Headers sent to an HTTP server, their values read from variables
    /// (header name → variable name).
    #[serde(default)]
    pub env_http_headers: BTreeMap<String, String>,
    /// `false`: listed by `gyre mcp list`, never started (default true).
    pub enabled: Option<bool>,
    /// Seconds the server may take to start and answer the handshake
    /// (default 30).
    pub startup_timeout_sec: Option<f64>,
    /// Seconds one tool call may take (default 60).
    pub tool_timeout_sec: Option<f64>,
    /// The file that defined it (set when the file is read).
    #[serde(skip)]
    pub source: PathBuf,
}

/// `[loop_guard]`: thresholds of the loop guard (see `gyre_core::guard`).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopGuardSection {
    /// Identical calls in a row that are asked about or refused (default
    /// 3; 0 turns the guard off).
    pub repeat: Option<u32>,
    /// Repetitions of a sequence of calls that make a cycle (default 3).
    pub cycle_repeats: Option<u32>,
    /// The longest sequence looked for (default 5).
    pub max_cycle: Option<u32>,
}

/// `[sandbox]`: the sandbox `bash` commands run in (Linux, Landlock).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// `off`, `workspace-write` (default) or `read-only`.
    pub mode: Option<gyre_tools::SandboxMode>,
    /// Paths commands may not read (`~/` is the home directory, a relative
    /// path is in the workspace); later files add to earlier ones.
    pub deny_read: Option<Vec<String>>,
    /// Whether commands may use the network (default true).
    pub network: Option<bool>,
    /// `warn` (default): run unsandboxed where the sandbox is not enforced;
    /// `refuse`: refuse `bash` there.
    pub fallback: Option<gyre_tools::Fallback>,
}

/// `[subagents]`: bounds on the `task` tool's subagents.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubagentsSection {
    /// How deep subagents may nest (default 2). An agent at the deepest
    /// level (every agent, with 0) is not offered the `task` tool.
    pub max_depth: Option<u32>,
    /// Subagents running at once on each nesting level (default 4).
    pub max_concurrent: Option<usize>,
    /// The agent a run uses when `--agent` names none (default `build`).
    pub default_agent: Option<String>,
    /// The model of the built-in `explore` agent (default: the provider's
    /// small model, e.g. claude-haiku-4-5, on the vendor's own endpoint, the
    /// session's model on another base URL; `""`: the session's model).
    pub small_model: Option<String>,
}

/// What gyre must know of a model its catalogue does not have (or where the
/// catalogue is wrong). Prices are US dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Tokens the model takes in one request (input and output).
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u32>,
    pub input_price: Option<f64>,
    pub output_price: Option<f64>,
    pub cache_read_price: Option<f64>,
    pub cache_write_price: Option<f64>,
}

/// `[retry]`: how failed model requests are retried.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    pub max_retries: Option<u32>,
    pub initial_delay_ms: Option<u64>,
    pub max_delay_ms: Option<u64>,
    pub budget_ms: Option<u64>,
}

/// `[timeouts]`: how long a model request may take to connect, to send its
/// first byte, and between two bytes of its stream.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutsConfig {
    pub connect_ms: Option<u64>,
    pub first_byte_ms: Option<u64>,
    pub idle_ms: Option<u64>,
}

/// `[tools]`: the tool runtime.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    /// Read-only calls that may run at once.
    pub read_only_concurrency: Option<usize>,
    /// `bash`, `any` or `none`.
    pub sibling_abort: Option<gyre_core::SiblingAbort>,
    /// The most tokens one tool result may put into the history.
    pub max_result_tokens: Option<usize>,
    /// Directories outside the workspace that tools may use too.
    pub extra_dirs: Option<Vec<PathBuf>>,
}

/// `[context]`: the context window's budget, pruning and compaction.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextSection {
    /// `auto` or `off`.
    pub compaction: Option<gyre_core::Compaction>,
    /// `on` or `off`.
    pub pruning: Option<gyre_core::Pruning>,
    /// Shares of the usable budget (0 to 1).
    pub warn_at: Option<f64>,
    pub prune_at: Option<f64>,
    pub compact_at: Option<f64>,
    pub margin_tokens: Option<u64>,
    pub keep_recent_tokens: Option<u64>,
    pub protect_recent_tokens: Option<u64>,
    /// The model that writes summaries (default: the session's).
    pub compaction_model: Option<String>,
    /// `auto` (o200k for OpenAI's own models), `calibrated` or `o200k`.
    pub tokenizer: Option<TokenizerChoice>,
}

/// `[redact]`: secrets kept out of stored tool outputs and exports, beside
/// the provider keys and the built-in key shapes.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactSection {
    /// Regular expressions; later files add to earlier ones.
    pub patterns: Option<Vec<String>>,
}

/// How tokens are counted before the provider reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenizerChoice {
    Auto,
    Calibrated,
    O200k,
}

/// A config file that could not be used.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// The user's file, the project's, then the project's local one, merged.
    pub fn load(user_dir: Option<&Path>, workspace: &Path) -> Result<Config, ConfigError> {
        Self::load_sources(
            user_dir,
            workspace,
            crate::claude_compat::Sources::default(),
        )
    }

    /// [`Config::load`] of only the files `sources` names
    /// (`--setting-sources`).
    pub fn load_sources(
        user_dir: Option<&Path>,
        workspace: &Path,
        sources: crate::claude_compat::Sources,
    ) -> Result<Config, ConfigError> {
        let mut merged = Config::default();
        let user = user_dir
            .filter(|_| sources.user)
            .map(|d| d.join("config.toml"));
        if let Some(layer) = user.map(|path| Self::read(&path)).transpose()?.flatten() {
            merged.merge(layer);
        }
        // The project's files (its config, and the local one beside it) may
        // tighten the sandbox, never loosen it: they are not necessarily the
        // user's.
        if (sources.project || sources.local)
            && let Err(err) = std::fs::read_dir(workspace)
            && err.kind() != std::io::ErrorKind::NotFound
        {
            // Its config files cannot be read either, but the workspace
            // is what to fix.
            return Err(ConfigError(format!(
                "cannot read the workspace {}: {err}",
                workspace.display()
            )));
        }
        let dir = workspace.join(".gyre");
        let files = [
            (sources.project, dir.join("config.toml")),
            (sources.local, dir.join("config.local.toml")),
        ];
        for project in files
            .into_iter()
            .filter_map(|(read, path)| read.then_some(path))
        {
            if let Some(mut layer) = Self::read(&project)? {
                for ignored in crate::sandbox::narrow(&mut layer.sandbox, &merged.sandbox) {
                    eprintln!(
                        "gyre: warning: {}: {ignored} is ignored: a project's config may only \
                         narrow the sandbox (use --sandbox or your own config.toml)",
                        project.display()
                    );
                }
                merged.merge(layer);
            }
        }
        Ok(merged)
    }

    fn read(path: &Path) -> Result<Option<Config>, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => {
                return Err(ConfigError(format!(
                    "cannot read the config file {}: {err}",
                    path.display()
                )));
            }
        };
        let mut config = Self::parse(&text, path)?;
        for server in config.mcp_servers.values_mut() {
            server.source = path.to_path_buf();
        }
        Ok(Some(config))
    }

    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|err| {
            let location = err
                .span()
                .map(|span| {
                    let (line, column) = line_column(text, span.start);
                    format!(":{line}:{column}")
                })
                .unwrap_or_default();
            let problem = err.message().replace('\n', " ");
            ConfigError(format!(
                "invalid config file {}{location}: {}; fix or remove it",
                path.display(),
                problem.trim()
            ))
        })
    }

    fn merge(&mut self, other: Config) {
        macro_rules! take {
            ($($field:ident),*) => { $( if other.$field.is_some() { self.$field = other.$field; } )* };
        }
        take!(
            provider,
            model,
            base_url,
            max_turns,
            effort,
            permission_mode,
            append_system_prompt,
            checkpoints,
            alt_screen
        );
        for (list, more) in [
            (&mut self.allowed_tools, other.allowed_tools),
            (&mut self.ask_tools, other.ask_tools),
            (&mut self.disallowed_tools, other.disallowed_tools),
        ] {
            if let Some(more) = more {
                list.get_or_insert_with(Vec::new).extend(more);
            }
        }
        self.models.extend(other.models);
        let (retry, timeouts, tools, context) =
            (other.retry, other.timeouts, other.tools, other.context);
        macro_rules! take_in {
            ($section:ident, $from:ident: $($field:ident),*) => {
                $( if $from.$field.is_some() { self.$section.$field = $from.$field; } )*
            };
        }
        take_in!(retry, retry: max_retries, initial_delay_ms, max_delay_ms, budget_ms);
        take_in!(timeouts, timeouts: connect_ms, first_byte_ms, idle_ms);
        take_in!(tools, tools: read_only_concurrency, sibling_abort, max_result_tokens, extra_dirs);
        if let Some(patterns) = other.redact.patterns {
            self.redact
                .patterns
                .get_or_insert_with(Vec::new)
                .extend(patterns);
        }
        take_in!(context, context: compaction, pruning, warn_at, prune_at, compact_at, margin_tokens,
            keep_recent_tokens, protect_recent_tokens, compaction_model, tokenizer);
        let subagents = other.subagents;
        take_in!(subagents, subagents: max_depth, max_concurrent, default_agent, small_model);
        let loop_guard = other.loop_guard;
        take_in!(loop_guard, loop_guard: repeat, cycle_repeats, max_cycle);
        for (event, matchers) in other.hooks {
            self.hooks.entry(event).or_default().extend(matchers);
        }
        if other.max_stop_continuations.is_some() {
            self.max_stop_continuations = other.max_stop_continuations;
        }
        self.mcp_servers.extend(other.mcp_servers);
        self.lsp.extend(other.lsp);
        let diagnostics = other.diagnostics;
        take_in!(diagnostics, diagnostics: enabled, wait_ms, warnings, max_shown, max_restarts);
        let sandbox = other.sandbox;
        take_in!(sandbox, sandbox: mode, network, fallback);
        let web_search = other.web_search;
        take_in!(web_search, web_search: enabled, max_uses);
        // A later file may deny more, never less.
        if let Some(paths) = sandbox.deny_read {
            self.sandbox
                .deny_read
                .get_or_insert_with(Vec::new)
                .extend(paths);
        }
    }
}

/// 1-based line and column of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The user's config directory (`$XDG_CONFIG_HOME/gyre`, `~/.config/gyre`).
pub fn user_config_dir() -> Option<PathBuf> {
    use etcetera::BaseStrategy;
    etcetera::choose_base_strategy()
        .ok()
        .map(|s| s.config_dir().join("gyre"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_file_line_and_problem() {
        let text = "model = \"m\"\nmodle = \"x\"\n";
        let err = Config::parse(text, Path::new("/p/config.toml")).unwrap_err();
        assert!(
            err.0
                .starts_with("invalid config file /p/config.toml:2:1: "),
            "{}",
            err.0
        );
        assert!(err.0.contains("modle"), "{}", err.0);
        assert!(!err.0.contains('\n'));
    }

    #[test]
    fn hooks_of_every_layer_run() {
        let mut a = Config::parse(
            "[[hooks.PreToolUse]]\nmatcher = \"bash\"\nhooks = [{ type = \"command\", command = \"a.sh\" }]\n",
            Path::new("a"),
        )
        .unwrap();
        let b = Config::parse(
            "[[hooks.PreToolUse]]\nhooks = [{ type = \"command\", command = \"b.sh\", timeout = 5 }]\n\
             [[hooks.Stop]]\nhooks = [{ type = \"command\", command = \"c.sh\" }]\n",
            Path::new("b"),
        )
        .unwrap();
        a.merge(b);
        use gyre_core::hooks::HookEvent;
        assert_eq!(a.hooks[&HookEvent::PreToolUse].len(), 2);
        assert_eq!(a.hooks[&HookEvent::PreToolUse][1].hooks[0].timeout, Some(5));
        assert_eq!(a.hooks[&HookEvent::Stop][0].hooks[0].command, "c.sh");
        let err = Config::parse("[[hooks.BeforeTool]]\nhooks = []\n", Path::new("c")).unwrap_err();
        assert!(err.0.contains("BeforeTool"), "{}", err.0);
    }

    #[test]
    fn later_layers_override_key_by_key() {
        let mut a = Config::parse("model = \"a\"\nmax_turns = 3\n", Path::new("a")).unwrap();
        let b = Config::parse(
            "model = \"b\"\n[models.m1]\ncontext_window = 16000\nmax_output_tokens = 4096\n",
            Path::new("b"),
        )
        .unwrap();
        a.merge(b);
        assert_eq!(a.model.as_deref(), Some("b"));
        assert_eq!(a.max_turns, Some(3));
        assert_eq!(a.models["m1"].max_output_tokens, Some(4096));
    }

    #[test]
    fn user_project_and_local_files_merge_rules_and_the_last_mode() {
        let home = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let gyre = workspace.path().join(".gyre");
        std::fs::create_dir_all(&gyre).unwrap();
        let write = |path: PathBuf, text: &str| std::fs::write(path, text).unwrap();
        write(
            home.path().join("config.toml"),
            "permission_mode = \"acceptEdits\"\nallowed_tools = [\"bash(git:*)\"]\n\
             disallowed_tools = [\"read(~/.ssh/**)\"]\nmodel = \"u\"\n",
        );
        write(
            gyre.join("config.toml"),
            "permission_mode = \"plan\"\nallowed_tools = [\"bash(npm test:*)\"]\nmodel = \"p\"\n",
        );
        write(
            gyre.join("config.local.toml"),
            "disallowed_tools = [\"bash(rm:*)\"]\nask_tools = [\"bash(git push:*)\"]\n",
        );
        let config = Config::load(Some(home.path()), workspace.path()).unwrap();
        assert_eq!(config.permission_mode.as_deref(), Some("plan"));
        assert_eq!(config.model.as_deref(), Some("p"));
        assert_eq!(
            config.allowed_tools.unwrap(),
            ["bash(git:*)", "bash(npm test:*)"]
        );
        assert_eq!(
            config.disallowed_tools.unwrap(),
            ["read(~/.ssh/**)", "bash(rm:*)"]
        );
        assert_eq!(config.ask_tools.unwrap(), ["bash(git push:*)"]);

        write(
            gyre.join("config.local.toml"),
            "permission_mode = \"default\"\n",
        );
        let config = Config::load(Some(home.path()), workspace.path()).unwrap();
        assert_eq!(config.permission_mode.as_deref(), Some("default"));
        let broken = gyre.join("config.local.toml");
        write(broken, "ask_tool = []\n");
        let err = Config::load(Some(home.path()), workspace.path()).unwrap_err();
        assert!(err.0.contains("config.local.toml:1:1"), "{}", err.0);
    }

    #[test]
    fn an_unreadable_workspace_is_named_as_such_not_as_a_config_file() {
        // Tests run as root, which reads any directory: a workspace that is
        // not a directory cannot be listed either.
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("not-a-directory");
        std::fs::write(&workspace, "x").unwrap();
        let err = Config::load(None, &workspace).unwrap_err().to_string();
        assert!(err.starts_with("cannot read the workspace "), "{err}");
        assert!(err.contains("not-a-directory"), "{err}");
        assert!(!err.contains("config file"), "{err}");
    }
}
