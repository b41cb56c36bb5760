//! Claude Code's flags of `claude -p` and of the Agent SDKs, flattened
//! into [`RunArgs`](super::RunArgs) under their own help heading, and the
//! list of those gyre accepts without having their feature (warned about
//! once per run, never an error). Field order is help order.

use std::path::PathBuf;

use clap::{ArgAction, Args, ValueEnum};

/// Claude Code's flags of `claude -p` and of the Agent SDKs (README "Coming
/// from Claude Code"), beside gyre's own spellings above.
#[derive(Debug, Args)]
#[command(next_help_heading = "Claude Code compatibility")]
#[group(skip)]
pub struct ClaudeArgs {
    /// text | stream-json (one JSON message a line on stdin).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub input_format: Option<InputFormat>,
    /// With --input-format stream-json: echo each user message on stdout.
    #[arg(long)]
    pub replay_user_messages: bool,
    /// With stream-json output: also print hook events.
    #[arg(long)]
    pub include_hook_events: bool,
    /// Accepted: gyre's stream-json output is always complete.
    #[arg(long)]
    pub verbose: bool,
    /// The system prompt's base layer (the environment, rule files and
    /// appended text stay).
    #[arg(long, value_name = "TEXT", conflicts_with = "system_prompt_file")]
    pub system_prompt: Option<String>,
    /// Like --system-prompt, read from a file.
    #[arg(long, value_name = "FILE")]
    pub system_prompt_file: Option<PathBuf>,
    /// Like --append-system-prompt, read from a file.
    #[arg(long, value_name = "FILE")]
    pub append_system_prompt_file: Option<PathBuf>,
    /// The bypassPermissions mode.
    #[arg(long)]
    pub dangerously_skip_permissions: bool,
    /// Let bypassPermissions be switched to later, without starting in it.
    #[arg(long)]
    pub allow_dangerously_skip_permissions: bool,
    /// MCP servers from JSON files or strings (`{"mcpServers": {…}}`, as
    /// .mcp.json); repeatable.
    #[arg(long, value_name = "FILE|JSON", num_args = 1.., action = ArgAction::Append)]
    pub mcp_config: Vec<String>,
    /// Only the --mcp-config servers (no .mcp.json, no [mcp_servers]).
    #[arg(long)]
    pub strict_mcp_config: bool,
    /// More directories the tools may use; repeatable.
    #[arg(long = "add-dir", value_name = "DIR", num_args = 1.., action = ArgAction::Append)]
    pub add_dirs: Vec<PathBuf>,
    /// The built-in tools offered: `""` none, `default` all, or names
    /// (`Bash,Edit,Read` or gyre's `bash,edit,read`).
    #[arg(long, value_name = "LIST", num_args = 1.., action = ArgAction::Append, allow_hyphen_values = false)]
    pub tools: Vec<String>,
    /// The config files read: user (~/.config/gyre/config.toml), project
    /// (.gyre/config.toml), local (.gyre/config.local.toml).
    #[arg(long, value_name = "LIST")]
    pub setting_sources: Option<String>,
    /// Claude Code settings, a JSON file or string: its `permissions`
    /// (allow, deny, ask, defaultMode, additionalDirectories) and `model`.
    #[arg(long, value_name = "FILE|JSON")]
    pub settings: Option<String>,
    /// The id of the new session (a UUID).
    #[arg(long, value_name = "UUID")]
    pub session_id: Option<String>,
    /// The final answer must be a JSON value valid against this JSON Schema
    /// (JSON text or a file); the result carries it as `structured_output`.
    #[arg(long, visible_alias = "output-schema", value_name = "SCHEMA|FILE")]
    pub json_schema: Option<String>,
    /// Accepted, not honoured: models to fall back to.
    #[arg(long, value_name = "MODEL")]
    pub fallback_model: Option<String>,
    /// A thinking budget, read as the nearest --effort (0: no thinking).
    #[arg(long, value_name = "N")]
    pub max_thinking_tokens: Option<u32>,
    /// Accepted, not honoured: adaptive | enabled | disabled.
    #[arg(long, value_name = "MODE")]
    pub thinking: Option<String>,
    /// Accepted, not honoured: how thinking is shown.
    #[arg(long, value_name = "MODE")]
    pub thinking_display: Option<String>,
    /// Reasoning effort: low | medium | high | max (xhigh reads as max),
    /// mapped per API (Anthropic thinking budget, OpenAI reasoning effort,
    /// Gemini thinking config).
    #[arg(long, value_name = "LEVEL")]
    pub effort: Option<String>,
    /// Accepted, not honoured: beta headers.
    #[arg(long, value_name = "BETAS", num_args = 1.., action = ArgAction::Append)]
    pub betas: Vec<String>,
    /// Accepted, not honoured: a task token budget.
    #[arg(long, value_name = "N")]
    pub task_budget: Option<String>,
    /// Accepted, not honoured: resume up to this message.
    #[arg(long, value_name = "MESSAGE")]
    pub resume_session_at: Option<String>,
    /// Accepted, not honoured.
    #[arg(long, value_name = "TURN")]
    pub resume_drops_turn: Option<String>,
    /// Accepted, not honoured: sessions go to gyre's own store.
    #[arg(long)]
    pub session_mirror: bool,
    /// Accepted, not honoured: Claude Code plugins.
    #[arg(long, value_name = "DIR", action = ArgAction::Append)]
    pub plugin_dir: Vec<String>,
    /// Accepted, not honoured: agents as JSON (use .gyre/agents/*.md).
    #[arg(long, value_name = "JSON")]
    pub agents: Option<String>,
    /// Accepted, not honoured: debug output (gyre logs to its home).
    #[arg(short = 'd', long, value_name = "FILTER", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub debug: Option<String>,
    /// Accepted, not honoured: debug output to a file.
    #[arg(long, value_name = "PATH")]
    pub debug_file: Option<String>,
    /// Accepted, not honoured.
    #[arg(long)]
    pub debug_to_stderr: bool,
    /// With --input-format stream-json: start only after the SDK's
    /// `initialize` control request.
    #[arg(long)]
    pub await_initialize: bool,
    /// With --input-format stream-json: the options that arrive in the
    /// `initialize` control request instead of as flags.
    #[arg(long, value_name = "LIST")]
    pub initialize_fields: Option<String>,
    /// host (the Agent SDK or --permission-prompt-tool) | none (refused).
    #[arg(long, value_name = "TARGET", value_parser = ["host", "none"])]
    pub permission_prompts: Option<String>,
    /// Accepted, not honoured: managed settings.
    #[arg(long, value_name = "FILE|JSON")]
    pub managed_settings: Option<String>,
    /// Accepted, not honoured: managed settings arrive in `initialize`.
    #[arg(long)]
    pub managed_settings_in_initialize: bool,
    /// Accepted, not honoured: where project settings are read.
    #[arg(long, value_name = "DIR")]
    pub project_config_root: Option<String>,
    /// Accepted, not honoured: Claude Code channels.
    #[arg(long, value_name = "NAME", action = ArgAction::Append)]
    pub channels: Vec<String>,
    /// Accepted, not honoured: Claude Code plugins without their MCP servers.
    #[arg(long, value_name = "DIR", action = ArgAction::Append)]
    pub plugin_dir_no_mcp: Vec<String>,
    /// Accepted, not honoured: a display name of the session.
    #[arg(short = 'n', long, value_name = "NAME")]
    pub name: Option<String>,
    /// Accepted, not honoured: every session is stored.
    #[arg(long)]
    pub no_session_persistence: bool,
    /// Accepted, not honoured.
    #[arg(long)]
    pub bare: bool,
    /// Accepted, not honoured.
    #[arg(long)]
    pub exclude_dynamic_system_prompt_sections: bool,
    /// Accepted, not honoured.
    #[arg(long)]
    pub disable_slash_commands: bool,
}

/// `--input-format`, as clap reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    Text,
    StreamJson,
}

impl ClaudeArgs {
    /// The flags gyre accepts without having their feature, each with its
    /// value as given.
    pub(super) fn unhonoured(&self) -> Vec<(&'static str, String)> {
        let mut out: Vec<(&'static str, String)> = Vec::new();
        let mut add = |flag: &'static str, value: Option<String>| {
            if let Some(value) = value {
                out.push((flag, value));
            }
        };
        let flag = |given: bool| given.then(String::new);
        let list = |values: &[String]| (!values.is_empty()).then(|| values.join(","));
        add("--fallback-model", self.fallback_model.clone());
        add("--thinking", self.thinking.clone());
        add("--thinking-display", self.thinking_display.clone());
        add("--betas", list(&self.betas));
        add("--task-budget", self.task_budget.clone());
        add("--resume-session-at", self.resume_session_at.clone());
        add("--resume-drops-turn", self.resume_drops_turn.clone());
        add("--session-mirror", flag(self.session_mirror));
        add("--plugin-dir", list(&self.plugin_dir));
        add("--agents", self.agents.clone());
        add("--debug", self.debug.clone());
        add("--debug-file", self.debug_file.clone());
        add("--debug-to-stderr", flag(self.debug_to_stderr));
        add("--managed-settings", self.managed_settings.clone());
        add(
            "--managed-settings-in-initialize",
            flag(self.managed_settings_in_initialize),
        );
        add("--project-config-root", self.project_config_root.clone());
        add("--channels", list(&self.channels));
        add("--plugin-dir-no-mcp", list(&self.plugin_dir_no_mcp));
        add("--name", self.name.clone());
        add(
            "--no-session-persistence",
            flag(self.no_session_persistence),
        );
        add("--bare", flag(self.bare));
        add(
            "--exclude-dynamic-system-prompt-sections",
            flag(self.exclude_dynamic_system_prompt_sections),
        );
        add(
            "--disable-slash-commands",
            flag(self.disable_slash_commands),
        );
        out
    }
}
