//! Permission decisions: may this call run now, must it be refused, or must a
//! person be asked?
//!
//! Order of precedence (the same in every mode): a matching deny rule
//! refuses; then a matching ask rule asks; then a matching allow rule (or
//! one the session's "always" answers added) allows; then the mode decides.
//! Deny rules apply in `bypassPermissions` too (CONTRACT.md "Permissions
//! (always)"), and ask rules ask there too.
//!
//! The rule language is in [`rule`]; compound `bash` commands are split by
//! [`shell`] and decided segment by segment: denied if any segment matches a
//! deny rule, asked if any matches an ask rule, allowed only if every
//! segment is allowed by a rule or only reads (`is_read_only_command`),
//! otherwise the mode decides as for any mutating call.
//!
//! Invariants:
//! - A command gyre cannot split is never allowed by a rule with a
//!   specifier; when deny or ask rules with a command specifier exist, it is
//!   asked in every mode, since it might hide what they name.
//! - The session's "always" rules are only ever allow rules: they never
//!   outrank a deny or ask rule, and an agent's narrowing still applies.
//!
//! Trade-offs: rules are parsed when loaded and their globs compiled when a
//! call is checked (once per call; cheap beside running the tool), which
//! keeps [`Rule`] a plain value that compares and prints as written.

mod rule;
mod shell;
mod suggest;
#[cfg(test)]
mod tests;
mod wrappers;

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use gyre_tools::ToolKind;
use serde::{Deserialize, Serialize};

pub use rule::{CLAUDE_TOOL_NAMES, Rule, gyre_tool_name};
pub use suggest::{suggest_rule, suggest_rules};

use rule::Polarity;

/// How much the loop may do without asking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PermissionMode {
    /// Read-only tools run; everything else asks.
    #[default]
    #[serde(rename = "default")]
    Default,
    /// Read-only tools and file edits run; commands ask.
    #[serde(rename = "acceptEdits")]
    AcceptEdits,
    /// Only read-only tools; everything else is refused.
    #[serde(rename = "plan")]
    Plan,
    /// Everything runs (deny rules still apply).
    #[serde(rename = "bypassPermissions")]
    BypassPermissions,
}

impl PermissionMode {
    pub const NAMES: [&'static str; 4] = ["default", "acceptEdits", "plan", "bypassPermissions"];

    pub fn as_str(&self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::BypassPermissions => "bypassPermissions",
        }
    }
}

impl FromStr for PermissionMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "default" => Ok(PermissionMode::Default),
            "acceptEdits" => Ok(PermissionMode::AcceptEdits),
            "plan" => Ok(PermissionMode::Plan),
            "bypassPermissions" => Ok(PermissionMode::BypassPermissions),
            other => Err(format!(
                "unknown permission mode `{other}`; use one of {}",
                PermissionMode::NAMES.join(", ")
            )),
        }
    }
}

/// What to do with a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Refuse, telling the model why.
    Deny(String),
    /// A person must decide; the text says what is being asked.
    Ask(String),
}

/// Where path rules point: relative globs and paths are under the
/// workspace root, `~` is the home directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionContext {
    pub workspace_root: PathBuf,
    /// `None`: `~` rules match nothing.
    pub home: Option<PathBuf>,
}

impl PermissionContext {
    /// The context of `workspace_root`, with the home directory of `$HOME`.
    pub fn new(workspace_root: impl Into<PathBuf>) -> Self {
        Self {
            workspace_root: workspace_root.into(),
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
        }
    }
}

/// The rules in force for a run.
#[derive(Debug, Clone, Default)]
pub struct Permissions {
    pub mode: PermissionMode,
    pub allow: Vec<Rule>,
    pub deny: Vec<Rule>,
    /// Calls that ask even when the mode or an allow rule would allow them.
    pub ask: Vec<Rule>,
    /// Where path rules point (filled from the agent's workspace when left
    /// empty).
    pub context: PermissionContext,
}

/// The allow rules a session's "always" answers added; shared by the
/// session's runs and their subagents (clones share one list).
#[derive(Debug, Clone, Default)]
pub struct SessionRules(Arc<Mutex<Vec<Rule>>>);

impl SessionRules {
    /// Adds `rules` (those already there are not repeated).
    pub fn add(&self, rules: impl IntoIterator<Item = Rule>) {
        self.with_mut(|list| {
            for rule in rules {
                if !list.contains(&rule) {
                    list.push(rule);
                }
            }
        });
    }

    pub fn snapshot(&self) -> Vec<Rule> {
        self.with_mut(|list| list.clone())
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(&[Rule]) -> R) -> R {
        self.with_mut(|list| f(list))
    }

    fn with_mut<R>(&self, f: impl FnOnce(&mut Vec<Rule>) -> R) -> R {
        // A panic elsewhere while holding the lock cannot leave the list
        // half-changed (each change is one push), so a poisoned lock is
        // still good to use.
        match self.0.lock() {
            Ok(mut list) => f(&mut list),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }
}

/// Tools that only start work whose own calls are checked (subagents).
const DELEGATING_TOOLS: [&str; 1] = ["task"];

/// Tools that only change files in the workspace (allowed by `acceptEdits`).
pub const EDIT_TOOLS: [&str; 3] = ["write", "edit", "multi_edit"];

/// How the result of a refused call begins (a rule, the mode, a headless
/// ask, a prompt's or a person's no): the headless frontend lists the
/// results that begin so as the run's `permission_denials`.
pub const DENIED_PREFIX: &str = "permission denied: ";

impl Permissions {
    pub fn check(&self, tool: &str, kind: ToolKind, args: &serde_json::Value) -> Decision {
        self.check_with(tool, kind, args, &[])
    }

    /// [`Permissions::check`] with `session_allow` (the session's "always"
    /// rules) added to the allow rules.
    pub fn check_with(
        &self,
        tool: &str,
        kind: ToolKind,
        args: &serde_json::Value,
        session_allow: &[Rule],
    ) -> Decision {
        let command = args.get("command").and_then(|c| c.as_str());
        let ruled = match command {
            Some(command) if tool.eq_ignore_ascii_case("bash") => {
                self.check_command(command, session_allow)
            }
            _ => self.check_call(tool, args, session_allow),
        };
        if let Some(decision) = ruled {
            return decision;
        }
        // Starting a subagent changes nothing by itself: each of its calls
        // is checked against its own permissions, which are these or
        // narrower (see `agents::Narrowing`).
        if DELEGATING_TOOLS.contains(&tool) {
            return Decision::Allow;
        }
        self.by_mode(tool, kind)
    }

    /// The rules' decision on a call of a tool other than `bash`; `None`:
    /// no rule decides.
    fn check_call(
        &self,
        tool: &str,
        args: &serde_json::Value,
        session_allow: &[Rule],
    ) -> Option<Decision> {
        let ctx = &self.context;
        if let Some(rule) = self.deny.iter().find(|r| r.matches_call(tool, args, ctx)) {
            return Some(Decision::Deny(format!(
                "`{tool}` is denied by the rule `{rule}`"
            )));
        }
        if let Some(rule) = self.ask.iter().find(|r| r.matches_call(tool, args, ctx)) {
            return Some(Decision::Ask(format!(
                "`{tool}` matches the ask rule `{rule}`"
            )));
        }
        self.allow
            .iter()
            .chain(session_allow)
            .any(|r| r.matches_call(tool, args, ctx))
            .then_some(Decision::Allow)
    }

    /// The rules' decision on a `bash` command, segment by segment.
    fn check_command(&self, command: &str, session_allow: &[Rule]) -> Option<Decision> {
        let segments = match shell::split(command) {
            Ok(segments) => segments,
            Err(why) => return self.check_unsplit(command, &why, session_allow),
        };
        for segment in &segments {
            let canonical = segment.canonical();
            if let Some(rule) = find_command_rule(&self.deny, &canonical, Polarity::Restrict) {
                return Some(Decision::Deny(format!(
                    "`bash` is denied by the rule `{rule}` (it matches `{canonical}`)"
                )));
            }
        }
        for segment in &segments {
            let canonical = segment.canonical();
            if let Some(rule) = find_command_rule(&self.ask, &canonical, Polarity::Restrict) {
                return Some(Decision::Ask(format!(
                    "`bash` matches the ask rule `{rule}` (`{canonical}`)"
                )));
            }
        }
        let allowed = |segment: &shell::Segment| {
            let canonical = segment.allow_canonical();
            self.allow
                .iter()
                .chain(session_allow)
                .any(|r| r.matches_command(&canonical, Polarity::Allow))
                || gyre_tools::is_read_only_command(&segment.raw)
        };
        (!segments.is_empty() && segments.iter().all(allowed)).then_some(Decision::Allow)
    }

    /// A command that does not split: only whole-tool allow rules allow it;
    /// deny and ask rules are compared with its whole text, and when one
    /// with a command could still hide in it, a person decides.
    fn check_unsplit(&self, command: &str, why: &str, session_allow: &[Rule]) -> Option<Decision> {
        let whole = command.trim();
        if let Some(rule) = find_command_rule(&self.deny, whole, Polarity::Restrict) {
            return Some(Decision::Deny(format!(
                "`bash` is denied by the rule `{rule}`"
            )));
        }
        if let Some(rule) = find_command_rule(&self.ask, whole, Polarity::Restrict) {
            return Some(Decision::Ask(format!(
                "`bash` matches the ask rule `{rule}`"
            )));
        }
        if self.deny.iter().chain(&self.ask).any(Rule::is_command_rule) {
            return Some(Decision::Ask(format!(
                "gyre cannot check this command against the deny and ask rules ({why})"
            )));
        }
        self.allow
            .iter()
            .chain(session_allow)
            .any(|r| r.covers_whole_tool("bash"))
            .then_some(Decision::Allow)
    }

    fn by_mode(&self, tool: &str, kind: ToolKind) -> Decision {
        match (self.mode, kind) {
            (PermissionMode::BypassPermissions, _) | (_, ToolKind::ReadOnly) => Decision::Allow,
            (PermissionMode::Plan, ToolKind::Mutating) => Decision::Deny(format!(
                "`{tool}` can change files, and plan mode allows read-only tools only"
            )),
            (PermissionMode::AcceptEdits, ToolKind::Mutating) if EDIT_TOOLS.contains(&tool) => {
                Decision::Allow
            }
            (PermissionMode::AcceptEdits | PermissionMode::Default, ToolKind::Mutating) => {
                Decision::Ask(format!(
                    "`{tool}` needs approval in the `{}` permission mode",
                    self.mode.as_str()
                ))
            }
        }
    }
}

fn find_command_rule<'a>(
    rules: &'a [Rule],
    canonical: &str,
    polarity: Polarity,
) -> Option<&'a Rule> {
    rules
        .iter()
        .find(|r| r.matches_command(canonical, polarity))
}
