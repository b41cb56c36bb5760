//! The flags of a run as plain data: the first of the two stages from the
//! command line to a run (ripgrep's low-level args).
//!
//! The binary parses its command line with clap and converts what it got
//! into [`Flags`]; [`crate::Settings::resolve`] then reads the config files
//! and the environment over them. Nothing here knows clap, so the
//! frontends and tests build `Flags { what differs, ..Flags::default() }`.
//!
//! Invariants: every field is what the user wrote, unchecked beyond its
//! type (clap already refused what it could: `--max-turns 0`, `--at`
//! without `--fork`, a negative budget). `None` or `false` means "not
//! given", so that a config file or a default may decide.

use std::path::PathBuf;

use gyre_tools::SandboxMode;

/// How a headless run prints (`--output-format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// The final text only.
    #[default]
    Text,
    /// The final result object only.
    Json,
    /// One JSON event per line.
    StreamJson,
}

/// What a headless run reads on stdin (`--input-format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum InputFormat {
    /// The prompt as text (`-p PROMPT`, or stdin with `-`).
    #[default]
    Text,
    /// One JSON message a line, for as long as stdin is open (Claude
    /// Code's streaming input, spoken by the Agent SDKs).
    StreamJson,
}

/// The flags of a run, as given (CONTRACT.md "Flags of `run`").
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Flags {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// The workspace (`None`: the current directory).
    pub cwd: Option<PathBuf>,
    pub max_turns: Option<u32>,
    /// `--effort low|medium|high|max`.
    pub effort: Option<String>,
    /// `--max-thinking-tokens N` (Claude Code's): read as the nearest effort.
    pub max_thinking_tokens: Option<u32>,
    pub permission_mode: Option<String>,
    pub output_format: Option<OutputFormat>,
    pub include_partial_messages: bool,
    pub allowed_tools: Option<String>,
    pub disallowed_tools: Option<String>,
    pub ask_tools: Option<String>,
    pub permission_prompt_tool: Option<String>,
    pub append_system_prompt: Option<String>,
    pub resume: Option<String>,
    /// `--continue`.
    pub continue_session: bool,
    pub fork: bool,
    pub at: Option<String>,
    pub compact_first: bool,
    pub max_budget_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    pub agent: Option<String>,
    pub require_completion: bool,
    pub sandbox: Option<SandboxMode>,
    pub dual_model: Option<String>,
    /// `--alt-screen`: the terminal UI in the alternate screen.
    pub alt_screen: bool,

    // Claude Code's flags (README "Coming from Claude Code").
    /// `--input-format`.
    pub input_format: Option<InputFormat>,
    /// `--verbose`: gyre's stream-json is always complete, so a no-op.
    pub verbose: bool,
    /// `--replay-user-messages` (with `--input-format stream-json`).
    pub replay_user_messages: bool,
    /// `--include-hook-events` (with stream-json output).
    pub include_hook_events: bool,
    /// `--system-prompt`: replaces the base layer of the system prompt.
    pub system_prompt: Option<String>,
    /// `--system-prompt-file`.
    pub system_prompt_file: Option<PathBuf>,
    /// `--append-system-prompt-file`.
    pub append_system_prompt_file: Option<PathBuf>,
    /// `--dangerously-skip-permissions`: the bypassPermissions mode.
    pub dangerously_skip_permissions: bool,
    /// `--allow-dangerously-skip-permissions`: bypassPermissions may be
    /// switched to later (a control request), without starting in it.
    pub allow_dangerously_skip_permissions: bool,
    /// `--mcp-config FILE|JSON`, each `{"mcpServers": {…}}` as `.mcp.json`.
    pub mcp_config: Vec<String>,
    /// `--strict-mcp-config`: only the `--mcp-config` servers.
    pub strict_mcp_config: bool,
    /// `--add-dir`: more directories the tools may use.
    pub add_dirs: Vec<PathBuf>,
    /// `--tools`: the built-in tools offered (`""` none, `default` all).
    pub tools: Option<String>,
    /// `--setting-sources user,project,local`: the config files read.
    pub setting_sources: Option<String>,
    /// `--settings FILE|JSON`: Claude Code settings (permissions, model).
    pub settings: Option<String>,
    /// `--session-id UUID`.
    pub session_id: Option<String>,
    /// `--json-schema` / `--output-schema`: the schema (JSON or a file) the
    /// final answer must match.
    pub json_schema: Option<String>,
    /// `--await-initialize` (with `--input-format stream-json`).
    pub await_initialize: bool,
    /// `--initialize-fields`: options the SDK sends in `initialize`.
    pub initialize_fields: Option<String>,
    /// `--permission-prompts host|none`.
    pub permission_prompts: Option<String>,
    /// Flags accepted for compatibility whose feature gyre does not have
    /// (`--fallback-model`, `--effort`, `--betas`, …), each with its value:
    /// a run says once on stderr that each is not honoured.
    pub unhonoured: Vec<(&'static str, String)>,
}

impl Flags {
    /// The first flag given that only makes sense for one run (which
    /// session, how to print it), for the long-lived frontends (`acp`,
    /// `mcp-server`, `serve`), whose clients choose sessions and read
    /// protocol messages.
    pub fn one_run_flag(&self) -> Option<&'static str> {
        [
            (self.resume.is_some(), "--resume"),
            (self.continue_session, "--continue"),
            (self.fork, "--fork"),
            (self.at.is_some(), "--at"),
            (self.compact_first, "--compact-first"),
            (self.output_format.is_some(), "--output-format"),
            (self.include_partial_messages, "--include-partial-messages"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }
}
