//! Command-line arguments (CONTRACT.md "Commands" and "Flags of `run`").
//!
//! Claude Code's own spellings of the run flags are in `claude`.

mod claude;

use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

pub use claude::{ClaudeArgs, InputFormat};

#[derive(Debug, Parser)]
#[command(
    name = "gyre",
    version,
    about = "A coding agent: give it a task, it reads, edits and runs your project.",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// Run one task headless and exit (`-`, or no prompt at all, reads
    /// the prompt from stdin).
    #[arg(short = 'p', long = "print", value_name = "PROMPT", num_args = 0..=1, default_missing_value = "")]
    pub print: Option<String>,

    /// The prompt, as Claude Code takes it: `gyre -p [FLAGS] PROMPT`.
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,

    #[command(flatten)]
    pub run: RunArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one task headless, then exit (`-` reads the prompt from stdin).
    Run {
        /// The task.
        prompt: String,
        #[command(flatten)]
        args: Box<RunArgs>,
    },
    /// A headless run whose model studies the project and writes or
    /// improves AGENTS.md (build, test and lint commands, layout,
    /// conventions): `gyre run /init`.
    Init {
        /// What to pay attention to, added to the prompt.
        focus: Option<String>,
        #[command(flatten)]
        args: Box<RunArgs>,
    },
    /// The agents a run here can use (`--agent NAME`, the `task` tool):
    /// name, source (built-in or file), description.
    Agents,
    /// The Agent Skills a run here sees (`SKILL.md` folders of
    /// `.gyre/skills`, `.claude/skills`, `~/.config/gyre/skills`, …): name,
    /// where it comes from, its file, description.
    Skills,
    /// A real run, with real tools, on a generated sample project, driven by a
    /// built-in scripted model: no key, no network.
    Demo {
        /// Where to create the sample project (default: a new temporary directory).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Stored sessions: list, show, export, import, delete.
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// Tools for looking into what gyre does.
    Debug {
        #[command(subcommand)]
        command: DebugCommand,
    },
    /// MCP servers: `gyre mcp list`, `gyre mcp trust`.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// The Agent Client Protocol over stdio, for editors (Zed, avante.nvim):
    /// the run flags apply to every session the editor opens.
    Acp {
        #[command(flatten)]
        args: Box<RunArgs>,
    },
    /// gyre as an MCP server over stdio: tools `gyre` (run a prompt in a
    /// directory) and `gyre_reply` (continue that session).
    McpServer {
        #[command(flatten)]
        args: Box<RunArgs>,
    },
    /// The HTTP + SSE API: create, list and read sessions, post prompts,
    /// follow a session's events, answer permission requests, abort runs
    /// (the README lists the endpoints; `GET /openapi.json` describes them).
    Serve {
        /// The port (0: any free one; the address is said on stderr).
        #[arg(long, default_value_t = 4096)]
        port: u16,
        /// The address to listen on; anything but a loopback address needs
        /// a bearer token.
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
        host: std::net::IpAddr,
        /// The variable holding the bearer token every request must send
        /// (default: GYRE_SERVER_TOKEN, when set).
        #[arg(long, value_name = "VAR")]
        token_env: Option<String>,
        /// The flags of the runs (provider, model, permission mode, …);
        /// `--cwd` is the workspace of sessions created without one.
        #[command(flatten)]
        args: Box<RunArgs>,
    },
    /// The scripted model server, for testing integrations.
    MockServer {
        #[arg(long, default_value_t = 8765)]
        port: u16,
        /// A JSON script (see the README); default: the demo's script.
        #[arg(long, value_name = "FILE")]
        script: Option<PathBuf>,
    },
}

/// `gyre sessions …`: one variant per subcommand.
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Every session a person started, newest first: id, last update
    /// (UTC), model, title.
    List {
        /// Only the sessions of the current directory.
        #[arg(long)]
        here: bool,
        /// Subagents' sessions too, each marked with the session that
        /// spawned it.
        #[arg(long)]
        all: bool,
    },
    /// A session's details and its conversation.
    Show {
        #[arg(value_name = "ID")]
        id: String,
    },
    /// A session as JSON Lines on stdout, secrets redacted.
    Export {
        #[arg(value_name = "ID")]
        id: String,
    },
    /// Creates a session from an export (`-` reads stdin); prints its id.
    Import {
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Removes a session and everything of it, its subagents' sessions too.
    Delete {
        #[arg(value_name = "ID")]
        id: String,
    },
    /// Prints a stored session's runs as stream-json, without a model.
    Replay {
        #[arg(value_name = "ID")]
        id: String,
    },
    /// Puts the files and/or the conversation back to how they were when
    /// MESSAGE (an id from `sessions show`) was the last message.
    Rewind {
        #[arg(value_name = "ID")]
        id: String,
        #[arg(long, value_name = "MESSAGE")]
        to: String,
        /// Only the files; the conversation stays.
        #[arg(long, conflicts_with = "conversation_only")]
        files_only: bool,
        /// Only the conversation; the files stay.
        #[arg(long)]
        conversation_only: bool,
    },
}

/// `gyre mcp …`: one variant per subcommand.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// The configured MCP servers (config.toml's `[mcp_servers]`, the
    /// workspace's .mcp.json), each started to show its state and tools.
    List,
    /// Trust this project's MCP servers (.mcp.json, .gyre/config.toml's
    /// `[mcp_servers]`): the terminal UI starts them only then, until
    /// their configuration changes.
    Trust,
}

#[derive(Debug, Subcommand)]
pub enum DebugCommand {
    /// Decode one raw provider response read on stdin, as gyre's live path
    /// does, and print what it made of it, one JSON object per line.
    DecodeStream {
        /// The wire API: anthropic | openai | openai-responses | gemini
        #[arg(long, value_name = "API")]
        provider: String,
        /// `sse`: stdin is the event-stream body; `http`: a whole HTTP
        /// response (status line, headers, blank line, body).
        #[arg(long, value_enum, default_value_t = RawInput::Sse)]
        input: RawInput,
    },
}

/// What `debug decode-stream` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RawInput {
    Sse,
    Http,
}

/// Flags of a run (also accepted before `-p`).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// anthropic | openai | openai-responses | gemini | ollama | vllm | llamacpp | lmstudio | openrouter
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// The model (default: the provider's default; required for local servers).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// The provider's base URL (same convention as its environment variable).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The workspace (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Model requests allowed; the last one offers no tools and wraps up.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
    /// default | acceptEdits | plan | bypassPermissions
    #[arg(long, value_name = "MODE")]
    pub permission_mode: Option<String>,
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub output_format: Option<OutputFormat>,
    /// With stream-json: also print text and reasoning deltas as they stream.
    #[arg(long)]
    pub include_partial_messages: bool,
    /// Rules that run without asking, e.g. `bash(npm test:*),edit` (also
    /// Claude Code's `--allowedTools "Bash(npm test:*)" Edit`).
    #[arg(long, visible_alias = "allowedTools", value_name = "LIST", num_args = 1.., action = ArgAction::Append)]
    pub allowed_tools: Vec<String>,
    /// Rules that never run, in any mode, e.g. `bash(rm:*),web_fetch`.
    #[arg(long, visible_alias = "disallowedTools", value_name = "LIST", num_args = 1.., action = ArgAction::Append)]
    pub disallowed_tools: Vec<String>,
    /// Rules that always ask (refused in headless runs unless
    /// --permission-prompt-tool answers), even when the
    /// mode or an allowed rule would let them run, e.g. `bash(git push:*)`.
    #[arg(long, visible_alias = "askTools", value_name = "LIST", num_args = 1.., action = ArgAction::Append)]
    pub ask_tools: Vec<String>,
    /// In a headless run, ask this MCP tool (`mcp__SERVER__TOOL`, SERVER
    /// any configured MCP server) about calls that need approval,
    /// instead of refusing them (`stdio`: the Agent SDK answers).
    #[arg(long, value_name = "NAME")]
    pub permission_prompt_tool: Option<String>,
    /// Text added at the end of the system prompt.
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Option<String>,
    /// Go on with a stored session (from its last compact boundary).
    #[arg(short = 'r', long, value_name = "ID")]
    pub resume: Option<String>,
    /// Go on with the newest session of this directory.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    pub continue_session: bool,
    /// With --resume or --continue: go on in a copy of the session (a new
    /// id), leaving the original untouched.
    #[arg(long, visible_alias = "fork-session")]
    pub fork: bool,
    /// With --fork: copy the history through this message only.
    #[arg(long, value_name = "MESSAGE", requires = "fork")]
    pub at: Option<String>,
    /// Compact the session's history before the prompt runs.
    #[arg(long)]
    pub compact_first: bool,
    /// End the run cleanly once it has cost this many US dollars (exit 3).
    #[arg(long, value_name = "USD", value_parser = positive_usd)]
    pub max_budget_usd: Option<f64>,
    /// End the run cleanly once it has used this many tokens in and out,
    /// cached input included (exit 3).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
    /// The agent to run: build (default), plan, explore, or one from
    /// .gyre/agents/*.md or ~/.config/gyre/agents/*.md.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Only the attempt_completion tool ends the run; an answer without
    /// tools gets a hidden reminder instead (at most 3 in a row).
    #[arg(long)]
    pub require_completion: bool,
    /// Where `bash` commands may write: off | workspace-write | read-only
    /// (Linux, Landlock; default workspace-write).
    #[arg(long, value_name = "MODE", value_parser = parse_sandbox)]
    pub sandbox: Option<gyre_tools::SandboxMode>,
    /// Also ask this model (same provider) every turn, and let a third
    /// request merge both answers (costs three requests per turn).
    #[arg(long, value_name = "MODEL")]
    pub dual_model: Option<String>,
    /// The terminal UI (`gyre` alone) in the alternate screen, as a
    /// full-screen app, instead of inline with the conversation left in
    /// the terminal's scrollback.
    #[arg(long)]
    pub alt_screen: bool,
    /// An image (PNG, JPEG, GIF, WebP) that goes with the prompt;
    /// repeatable.
    #[arg(short = 'i', long = "image", value_name = "FILE", action = ArgAction::Append)]
    pub images: Vec<std::path::PathBuf>,

    #[command(flatten)]
    pub claude: ClaudeArgs,
}

impl RunArgs {
    /// The flags as plain data for `gyre-host` (the first of the two
    /// stages; `gyre_host::Settings::resolve` is the second).
    pub fn to_flags(&self) -> gyre_host::Flags {
        gyre_host::Flags {
            provider: self.provider.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            cwd: self.cwd.clone(),
            max_turns: self.max_turns,
            effort: self.claude.effort.clone(),
            max_thinking_tokens: self.claude.max_thinking_tokens,
            permission_mode: self.permission_mode.clone(),
            output_format: self.output_format.map(OutputFormat::to_host),
            include_partial_messages: self.include_partial_messages,
            allowed_tools: joined(&self.allowed_tools),
            disallowed_tools: joined(&self.disallowed_tools),
            ask_tools: joined(&self.ask_tools),
            permission_prompt_tool: self.permission_prompt_tool.clone(),
            append_system_prompt: self.append_system_prompt.clone(),
            resume: self.resume.clone(),
            continue_session: self.continue_session,
            fork: self.fork,
            at: self.at.clone(),
            compact_first: self.compact_first,
            max_budget_usd: self.max_budget_usd,
            max_tokens: self.max_tokens,
            agent: self.agent.clone(),
            require_completion: self.require_completion,
            sandbox: self.sandbox,
            dual_model: self.dual_model.clone(),
            alt_screen: self.alt_screen,
            input_format: self.claude.input_format.map(|format| match format {
                InputFormat::Text => gyre_host::InputFormat::Text,
                InputFormat::StreamJson => gyre_host::InputFormat::StreamJson,
            }),
            verbose: self.claude.verbose,
            replay_user_messages: self.claude.replay_user_messages,
            include_hook_events: self.claude.include_hook_events,
            system_prompt: self.claude.system_prompt.clone(),
            system_prompt_file: self.claude.system_prompt_file.clone(),
            append_system_prompt_file: self.claude.append_system_prompt_file.clone(),
            dangerously_skip_permissions: self.claude.dangerously_skip_permissions,
            allow_dangerously_skip_permissions: self.claude.allow_dangerously_skip_permissions,
            mcp_config: self.claude.mcp_config.clone(),
            strict_mcp_config: self.claude.strict_mcp_config,
            add_dirs: self.claude.add_dirs.clone(),
            // `--tools ""` (none) is a given flag with an empty list.
            tools: (!self.claude.tools.is_empty()).then(|| self.claude.tools.join(",")),
            setting_sources: self.claude.setting_sources.clone(),
            settings: self.claude.settings.clone(),
            session_id: self.claude.session_id.clone(),
            json_schema: self.claude.json_schema.clone(),
            await_initialize: self.claude.await_initialize,
            initialize_fields: self.claude.initialize_fields.clone(),
            permission_prompts: self.claude.permission_prompts.clone(),
            unhonoured: self.claude.unhonoured(),
        }
    }
}

/// A repeatable list flag as one comma-separated list (`None`: not given).
fn joined(values: &[String]) -> Option<String> {
    (!values.is_empty()).then(|| values.join(","))
}

fn parse_sandbox(text: &str) -> Result<gyre_tools::SandboxMode, String> {
    text.parse()
}

fn positive_usd(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 => Ok(value),
        _ => Err(format!("`{text}` is not a positive amount of US dollars")),
    }
}

/// `--output-format`, as clap reads it (`gyre_host::OutputFormat` is the
/// plain one the frontends use).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The final text only.
    Text,
    /// The final result object only.
    Json,
    /// One JSON event per line.
    StreamJson,
}

impl OutputFormat {
    fn to_host(self) -> gyre_host::OutputFormat {
        match self {
            OutputFormat::Text => gyre_host::OutputFormat::Text,
            OutputFormat::Json => gyre_host::OutputFormat::Json,
            OutputFormat::StreamJson => gyre_host::OutputFormat::StreamJson,
        }
    }
}
