//! Agents: named configurations of the loop (seed 001's per-agent prompts,
//! permissions and step limits).
//!
//! An [`AgentProfile`] says which tools an agent gets, the prompt layer it
//! adds, its model and sampling, how its permissions are narrowed, its turn
//! limit and whether it must end with `attempt_completion`. Three are built
//! in ([`builtin_profiles`]): `build` (every tool, the default), `plan`
//! (read-only tools, ends with a plan) and `explore` (read-only, meant for
//! a cheaper model). Users add their own as Markdown files ([`file`]).
//!
//! Invariants:
//! - A profile can only narrow what the session allows: its permission mode
//!   applies only when stricter than the session's, its deny rules are added
//!   to the session's, and there is no way to add allow rules.
//! - Tool names are matched in gyre's spelling; Claude Code's spelling
//!   (`Read`, `MultiEdit`, `WebFetch`) is accepted and converted on load.
//! - A [`AgentCatalog`] is immutable once built; a later definition of a
//!   name replaces an earlier one (built-ins, then the user's, then the
//!   project's).

pub mod file;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::permissions::{PermissionMode, Permissions, Rule};

/// The agent a run uses when none is named.
pub const DEFAULT_AGENT: &str = "build";

/// Which tools an agent is offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSelection {
    /// Every tool of the session.
    All,
    /// The tools that never change the workspace (and `bash`, whose
    /// read-only commands the permission mode lets through).
    ReadOnly,
    /// Exactly these (gyre's names; a trailing `*` matches by prefix, for
    /// MCP tools such as `mcp__github__*`).
    Named(Vec<String>),
}

/// The tools [`ToolSelection::ReadOnly`] keeps.
pub const READ_ONLY_TOOLS: [&str; 11] = [
    "read",
    "grep",
    "glob",
    "ls",
    "bash",
    "bash_output",
    "todo_write",
    "web_fetch",
    "web_search",
    "task_output",
    "skill",
];

impl ToolSelection {
    /// Whether a tool named `name` is offered.
    pub fn includes(&self, name: &str) -> bool {
        match self {
            ToolSelection::All => true,
            ToolSelection::ReadOnly => READ_ONLY_TOOLS.contains(&name) || name == "task",
            ToolSelection::Named(names) => names.iter().any(|n| match n.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => n == name,
            }),
        }
    }
}

/// Whether a run must end by calling `attempt_completion` (seed 000).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Completion {
    /// A text-only answer ends the run.
    #[default]
    Off,
    /// Only `attempt_completion` ends the run; a text-only answer gets a
    /// hidden reminder (bounded) instead.
    Required,
}

/// How an agent narrows the session's permissions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Narrowing {
    /// Applied only when stricter than the session's mode.
    pub mode: Option<PermissionMode>,
    /// Added to the session's deny rules.
    pub deny: Vec<Rule>,
}

impl Narrowing {
    /// `permissions` with this narrowing applied: never wider than before.
    pub fn apply(&self, permissions: &Permissions) -> Permissions {
        let mut narrowed = permissions.clone();
        if let Some(mode) = self.mode
            && strictness(mode) > strictness(permissions.mode)
        {
            narrowed.mode = mode;
        }
        narrowed.deny.extend(self.deny.iter().cloned());
        narrowed
    }
}

/// Higher is stricter.
fn strictness(mode: PermissionMode) -> u8 {
    match mode {
        PermissionMode::BypassPermissions => 0,
        PermissionMode::AcceptEdits => 1,
        PermissionMode::Default => 2,
        PermissionMode::Plan => 3,
    }
}

/// Where a profile was defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSource {
    Builtin,
    File(PathBuf),
}

/// One agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentProfile {
    /// Lowercase letters, digits, `-` and `_`.
    pub name: String,
    /// When to use it: what the `task` tool's description lists.
    pub description: String,
    /// The agent's layer of the system prompt (may be empty).
    pub prompt: String,
    pub tools: ToolSelection,
    /// Another model of the same provider; `None`: the session's.
    pub model: Option<String>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    /// Reasoning effort; `None`: the session's (`--effort`, config `effort`).
    pub effort: Option<gyre_llm::Effort>,
    /// Merged into the provider's request body as it is.
    pub provider_options: Option<Map<String, Value>>,
    pub narrowing: Narrowing,
    /// Model requests allowed per run, at most the session's; `None`: the session's limit.
    pub max_turns: Option<u32>,
    pub completion: Completion,
    /// The skills it sees (names); `None`: every skill of the session.
    pub skills: Option<Vec<String>>,
    pub source: AgentSource,
}

impl AgentProfile {
    fn builtin(name: &str, description: &str, prompt: &str, tools: ToolSelection) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            prompt: prompt.into(),
            tools,
            model: None,
            temperature: None,
            top_p: None,
            effort: None,
            provider_options: None,
            narrowing: Narrowing::default(),
            max_turns: None,
            completion: Completion::Off,
            skills: None,
            source: AgentSource::Builtin,
        }
    }

    /// Whether every call a subagent of this profile can make leaves the
    /// workspace as it is (so its `task` call may run beside other
    /// read-only calls, and run again after a crash): its permissions are
    /// narrowed to plan mode, or it has only read-only tools (not `bash`,
    /// not `task`).
    pub fn is_read_only(&self) -> bool {
        if self.narrowing.mode == Some(PermissionMode::Plan) {
            return true;
        }
        match &self.tools {
            ToolSelection::Named(names) => names
                .iter()
                .all(|n| READ_ONLY_TOOLS.contains(&n.as_str()) && n != "bash"),
            ToolSelection::All | ToolSelection::ReadOnly => false,
        }
    }
}

const PLAN_PROMPT: &str = "\
<agent name=\"plan\">
You are planning, not changing: investigate with the read-only tools (you cannot edit files or run \
commands that change anything), then end with a plan the user can approve: the goal, the files to \
change and how, the order of the steps, how to verify each, and the risks or open questions. \
Number the steps. Do not claim to have changed anything.
</agent>";

const EXPLORE_PROMPT: &str = "\
<agent name=\"explore\">
You explore a codebase quickly for another agent, who will act on what you report. Use the search \
and read tools; change nothing. Answer with the facts asked for: exact file paths with line \
numbers, names, and short quotes of the code that matters. Be brief: no plans, no advice unless \
asked.
</agent>";

/// Built-in agents that run on the provider's small model when it has one.
const SMALL_MODEL_AGENTS: [&str; 1] = ["explore"];

/// The built-in agents, in listing order.
pub fn builtin_profiles() -> Vec<AgentProfile> {
    let mut plan = AgentProfile::builtin(
        "plan",
        "Read-only: investigates and ends with a step-by-step plan; changes nothing.",
        PLAN_PROMPT,
        ToolSelection::ReadOnly,
    );
    plan.narrowing.mode = Some(PermissionMode::Plan);
    let mut explore = AgentProfile::builtin(
        "explore",
        "Read-only and fast: finds files, definitions and usages and reports them with paths and \
         line numbers. Use it for searches that would take several steps.",
        EXPLORE_PROMPT,
        ToolSelection::ReadOnly,
    );
    explore.narrowing.mode = Some(PermissionMode::Plan);
    vec![
        AgentProfile::builtin(
            "build",
            "General-purpose: reads, edits and runs the project to complete a task.",
            "",
            ToolSelection::All,
        ),
        plan,
        explore,
    ]
}

/// Every agent known to a session, by name.
#[derive(Debug, Clone)]
pub struct AgentCatalog {
    profiles: BTreeMap<String, AgentProfile>,
    /// Names in listing order: built-ins first, then the others by name.
    order: Vec<String>,
}

impl Default for AgentCatalog {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl AgentCatalog {
    /// The built-ins, then `extra` (a later profile replaces one of the
    /// same name).
    pub fn new(extra: Vec<AgentProfile>) -> Self {
        let mut profiles = BTreeMap::new();
        let mut order: Vec<String> = Vec::new();
        for profile in builtin_profiles().into_iter().chain(extra) {
            if !order.contains(&profile.name) {
                order.push(profile.name.clone());
            }
            profiles.insert(profile.name.clone(), profile);
        }
        Self { profiles, order }
    }

    pub fn get(&self, name: &str) -> Option<&AgentProfile> {
        self.profiles.get(name)
    }

    /// Gives the built-in agents meant for a cheaper model (`explore`) the
    /// provider's small model, unless a file replaced them or they name one.
    pub fn use_small_model(&mut self, model: &str) {
        for name in SMALL_MODEL_AGENTS {
            if let Some(profile) = self.profiles.get_mut(name)
                && profile.source == AgentSource::Builtin
                && profile.model.is_none()
            {
                profile.model = Some(model.to_string());
            }
        }
    }

    /// The profiles in listing order.
    pub fn iter(&self) -> impl Iterator<Item = &AgentProfile> {
        self.order.iter().filter_map(|n| self.profiles.get(n))
    }

    pub fn names(&self) -> Vec<&str> {
        self.order.iter().map(String::as_str).collect()
    }

    /// `name`'s profile, or an error listing the names there are.
    pub fn require(&self, name: &str) -> Result<&AgentProfile, String> {
        self.get(name).ok_or_else(|| {
            format!(
                "there is no agent `{name}`; the agents are: {}",
                self.names().join(", ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_never_widens() {
        let session = Permissions {
            mode: PermissionMode::Default,
            allow: Rule::parse_list("bash(ls)").unwrap(),
            deny: Rule::parse_list("web_fetch").unwrap(),
            ..Permissions::default()
        };
        let wider = Narrowing {
            mode: Some(PermissionMode::BypassPermissions),
            deny: Rule::parse_list("bash(rm:*)").unwrap(),
        };
        let narrowed = wider.apply(&session);
        assert_eq!(narrowed.mode, PermissionMode::Default);
        assert_eq!(narrowed.allow, session.allow);
        assert_eq!(narrowed.deny.len(), 2);
        let stricter = Narrowing {
            mode: Some(PermissionMode::Plan),
            deny: Vec::new(),
        };
        assert_eq!(stricter.apply(&session).mode, PermissionMode::Plan);
    }

    #[test]
    fn builtins_are_listed_first_and_can_be_replaced() {
        let mut mine = builtin_profiles().remove(2);
        mine.description = "mine".into();
        let mut other = mine.clone();
        other.name = "reviewer".into();
        let catalog = AgentCatalog::new(vec![other, mine]);
        assert_eq!(catalog.names(), ["build", "plan", "explore", "reviewer"]);
        assert_eq!(catalog.get("explore").unwrap().description, "mine");
        assert!(catalog.require("nope").unwrap_err().contains("build, plan"));
    }

    #[test]
    fn explore_takes_the_small_model_unless_replaced() {
        let mut catalog = AgentCatalog::default();
        catalog.use_small_model("small");
        assert_eq!(
            catalog.get("explore").unwrap().model.as_deref(),
            Some("small")
        );
        assert_eq!(catalog.get("build").unwrap().model, None);
        let mut mine = builtin_profiles().remove(2);
        mine.source = AgentSource::File("/a/explore.md".into());
        let mut catalog = AgentCatalog::new(vec![mine]);
        catalog.use_small_model("small");
        assert_eq!(catalog.get("explore").unwrap().model, None);
    }

    #[test]
    fn read_only_agents_are_told_apart() {
        let catalog = AgentCatalog::default();
        assert!(!catalog.get("build").unwrap().is_read_only());
        assert!(catalog.get("plan").unwrap().is_read_only());
        assert!(catalog.get("explore").unwrap().is_read_only());
        let named =
            |names: &[&str]| ToolSelection::Named(names.iter().map(|s| s.to_string()).collect());
        let mut profile = catalog.get("build").unwrap().clone();
        profile.tools = named(&["read", "grep"]);
        assert!(profile.is_read_only());
        profile.tools = named(&["read", "bash"]);
        assert!(!profile.is_read_only());
        assert!(named(&["mcp__gh__*"]).includes("mcp__gh__issues"));
        assert!(!named(&["read"]).includes("edit"));
    }
}
