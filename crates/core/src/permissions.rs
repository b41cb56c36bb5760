//! Permission decisions: may this call run now, must it be refused, or must a
//! person be asked?
//!
//! Order of precedence (the same in every mode): a matching deny rule refuses;
//! then a matching allow rule allows; then the mode decides. Deny rules apply in
//! `bypassPermissions` too (CONTRACT.md "Permissions (always)").
//!
//! Rules are `tool` or `tool(specifier)`. Tool names compare case-insensitively
//! (so Claude Code's `Bash(git status)` works). A specifier ending in `:*` or
//! `*` matches by prefix, otherwise exactly; it is matched against the call's
//! main argument: `command` for `bash`, `file_path`/`path` for file tools,
//! `url` for `web_fetch`, `pattern` for search tools. The full rule language
//! (compound shell commands, path globs, layers) belongs to the safety issue;
//! this module is where it grows.

use std::fmt;
use std::str::FromStr;

use gyre_tools::ToolKind;
use serde::{Deserialize, Serialize};

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

/// One rule: a tool, optionally narrowed by a specifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub tool: String,
    pub specifier: Option<String>,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.specifier {
            Some(s) => write!(f, "{}({s})", self.tool),
            None => f.write_str(&self.tool),
        }
    }
}

impl FromStr for Rule {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (tool, specifier) = match s.find('(') {
            Some(open) => {
                let Some(inner) = s[open + 1..].strip_suffix(')') else {
                    return Err(format!("rule `{s}` has `(` without a closing `)`"));
                };
                (&s[..open], Some(inner.trim().to_string()))
            }
            None => (s, None),
        };
        let tool = tool.trim();
        if tool.is_empty()
            || !tool
                .chars()
                .all(|c| c.is_alphanumeric() || "_-*".contains(c))
        {
            return Err(format!("rule `{s}` does not start with a tool name"));
        }
        Ok(Rule {
            tool: tool.to_string(),
            specifier,
        })
    }
}

impl Rule {
    /// Parses a comma-separated list such as `bash(rm:*),web_fetch`. Commas
    /// inside parentheses belong to the specifier.
    pub fn parse_list(list: &str) -> Result<Vec<Rule>, String> {
        let mut rules = Vec::new();
        let mut depth = 0usize;
        let mut start = 0;
        for (i, c) in list.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    push_rule(&list[start..i], &mut rules)?;
                    start = i + 1;
                }
                _ => {}
            }
        }
        push_rule(&list[start..], &mut rules)?;
        Ok(rules)
    }

    fn matches_tool(&self, tool: &str) -> bool {
        match self.tool.strip_suffix('*') {
            Some(prefix) => tool.to_lowercase().starts_with(&prefix.to_lowercase()),
            None => self.tool.eq_ignore_ascii_case(tool),
        }
    }

    fn matches(&self, tool: &str, args: &serde_json::Value) -> bool {
        if !self.matches_tool(tool) {
            return false;
        }
        let Some(spec) = &self.specifier else {
            return true;
        };
        let Some(subject) = main_argument(args) else {
            return false;
        };
        match spec.strip_suffix(":*").or_else(|| spec.strip_suffix('*')) {
            Some(prefix) => subject.starts_with(prefix),
            None => subject == spec,
        }
    }

    /// Whether this rule names all of `tool` (no specifier): a deny rule of that
    /// kind removes the tool from what the model is offered.
    pub fn covers_whole_tool(&self, tool: &str) -> bool {
        self.specifier.is_none() && self.matches_tool(tool)
    }
}

fn push_rule(text: &str, rules: &mut Vec<Rule>) -> Result<(), String> {
    if !text.trim().is_empty() {
        rules.push(text.parse()?);
    }
    Ok(())
}

fn main_argument(args: &serde_json::Value) -> Option<&str> {
    ["command", "file_path", "path", "url", "pattern"]
        .iter()
        .find_map(|key| args.get(key).and_then(|v| v.as_str()))
        .map(str::trim)
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

/// The rules in force for a run.
#[derive(Debug, Clone, Default)]
pub struct Permissions {
    pub mode: PermissionMode,
    pub allow: Vec<Rule>,
    pub deny: Vec<Rule>,
}

/// Tools that only start work whose own calls are checked (subagents).
const DELEGATING_TOOLS: [&str; 1] = ["task"];

/// Tools that only change files in the workspace (allowed by `acceptEdits`).
const EDIT_TOOLS: [&str; 3] = ["write", "edit", "multi_edit"];

impl Permissions {
    pub fn check(&self, tool: &str, kind: ToolKind, args: &serde_json::Value) -> Decision {
        if let Some(rule) = self.deny.iter().find(|r| r.matches(tool, args)) {
            return Decision::Deny(format!("`{tool}` is denied by the rule `{rule}`"));
        }
        if self.allow.iter().any(|r| r.matches(tool, args)) {
            return Decision::Allow;
        }
        // Starting a subagent changes nothing by itself: each of its calls
        // is checked against its own permissions, which are these or
        // narrower (see `agents::Narrowing`).
        if DELEGATING_TOOLS.contains(&tool) {
            return Decision::Allow;
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn perms(mode: PermissionMode, allow: &str, deny: &str) -> Permissions {
        Permissions {
            mode,
            allow: Rule::parse_list(allow).unwrap(),
            deny: Rule::parse_list(deny).unwrap(),
        }
    }

    #[test]
    fn parses_rule_lists_with_commas_inside_specifiers() {
        let rules = Rule::parse_list("bash(rm:*),web_fetch, Edit(src/a,b.rs)").unwrap();
        let shown: Vec<String> = rules.iter().map(|r| r.to_string()).collect();
        assert_eq!(shown, ["bash(rm:*)", "web_fetch", "Edit(src/a,b.rs)"]);
        assert!(Rule::parse_list("bash(rm").is_err());
        assert!(Rule::parse_list("(x)").is_err());
        assert!(Rule::parse_list("").unwrap().is_empty());
    }

    #[test]
    fn deny_beats_allow_and_bypass() {
        let p = perms(PermissionMode::BypassPermissions, "bash", "bash(rm:*)");
        let rm = json!({"command": "rm -rf /"});
        assert!(matches!(
            p.check("bash", ToolKind::Mutating, &rm),
            Decision::Deny(_)
        ));
        let ls = json!({"command": "ls"});
        assert_eq!(p.check("bash", ToolKind::Mutating, &ls), Decision::Allow);
    }

    #[test]
    fn modes_decide_when_no_rule_matches() {
        let args = json!({"file_path": "a.txt"});
        let default = perms(PermissionMode::Default, "", "");
        assert_eq!(
            default.check("read", ToolKind::ReadOnly, &args),
            Decision::Allow
        );
        assert!(matches!(
            default.check("edit", ToolKind::Mutating, &args),
            Decision::Ask(_)
        ));
        let edits = perms(PermissionMode::AcceptEdits, "", "");
        assert_eq!(
            edits.check("edit", ToolKind::Mutating, &args),
            Decision::Allow
        );
        let cmd = json!({"command": "make"});
        assert!(matches!(
            edits.check("bash", ToolKind::Mutating, &cmd),
            Decision::Ask(_)
        ));
        let plan = perms(PermissionMode::Plan, "", "");
        assert!(matches!(
            plan.check("write", ToolKind::Mutating, &args),
            Decision::Deny(_)
        ));
    }

    #[test]
    fn allow_rules_match_by_prefix_or_exactly() {
        let p = perms(
            PermissionMode::Default,
            "Bash(npm test:*),bash(git status)",
            "",
        );
        let check = |c: &str| p.check("bash", ToolKind::Mutating, &json!({ "command": c }));
        assert_eq!(check("npm test -- --watch"), Decision::Allow);
        assert_eq!(check("git status"), Decision::Allow);
        assert!(matches!(check("git status; rm x"), Decision::Ask(_)));
        assert!(matches!(check("npm install"), Decision::Ask(_)));
    }
}
