//! How hooks are configured, in Claude Code's shape: for each event, a list
//! of matchers, each with the commands to run.
//!
//! ```toml
//! [[hooks.PreToolUse]]
//! matcher = "bash|edit"        # a regular expression on the tool name; absent or "*": every tool
//! hooks = [{ type = "command", command = "./scripts/check.sh", timeout = 10 }]
//! ```
//!
//! The JSON form of `.claude/settings.json` (`{"PreToolUse": [{"matcher": …,
//! "hooks": [{"type": "command", …}]}]}`) deserialises into the same types.

use std::collections::BTreeMap;

use serde::Deserialize;

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
pub enum HookEvent {
    /// Before a tool call runs: may allow, deny, ask, or change its input.
    PreToolUse,
    /// After a tool call ran: its output may reach the model.
    PostToolUse,
    /// Before a prompt is recorded: may block it or add context.
    UserPromptSubmit,
    /// When the main agent would end its run: may make it go on.
    Stop,
    /// When a subagent would end its run: may make it go on.
    SubagentStop,
    /// Before the history is compacted.
    PreCompact,
    /// When a run of the session starts in this process.
    SessionStart,
    /// When the run that started the session in this process ends.
    SessionEnd,
}

impl HookEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
        }
    }
}

/// Every configured hook, by event.
pub type HooksConfig = BTreeMap<HookEvent, Vec<HookMatcher>>;

/// The hooks of one matcher.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookMatcher {
    /// A regular expression matched against the whole tool name (tool
    /// events only; case-insensitive, so Claude Code's `Bash|Edit` works);
    /// absent, empty or `*`: everything.
    #[serde(default)]
    pub matcher: Option<String>,
    pub hooks: Vec<HookCommand>,
}

/// One hook: a shell command.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookCommand {
    /// Only `command` exists.
    #[serde(rename = "type")]
    pub kind: HookKind,
    /// Run with `sh -c` in the workspace.
    pub command: String,
    /// Seconds before the command is killed (default 60).
    #[serde(default)]
    pub timeout: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookKind {
    Command,
    /// A frontend's callback (an Agent SDK's hook, over the control
    /// protocol): `command` is the callback's id. Never read from a
    /// config file.
    #[serde(skip)]
    Callback,
}
