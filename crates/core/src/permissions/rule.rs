//! One permission rule: its text form, its validation, and whether it
//! matches a call.
//!
//! A rule is `tool` or `tool(specifier)`. What the specifier means depends
//! on the rule's tool (compared case-insensitively):
//!
//! - `bash`: a command, exact (`bash(git status)`) or a prefix
//!   (`bash(npm test:*)`, also `bash(npm test *)`), compared with each
//!   segment of a compound command after wrappers are looked through (see
//!   `shell`). Both sides are compared in one canonical form (words after
//!   quote removal, re-quoted by `shlex`), so quoting styles do not matter.
//! - `read`, `write`, `edit`, `multi_edit`, `grep`, `glob`, `ls`: a path glob
//!   (`globset`, `*` stays inside one directory, `**` crosses them); `~` is
//!   the home directory, a relative glob is relative to the workspace root;
//!   a glob also covers everything below what it names. `read(…)` rules
//!   cover `grep`, `glob` and `ls` too, and `edit(…)` rules cover `write` and
//!   `multi_edit`, as in Claude Code.
//! - `web_fetch(domain:example.com)`: the URL's host is that domain or one
//!   of its subdomains.
//! - anything else: the call's main argument, exactly or by a `:*`/`*`
//!   prefix (the rule language before globs; kept so old rules still work).
//!
//! A tool name ending in `*` matches by prefix (`mcp__github__*`), and
//! `mcp__server` names every tool of that MCP server. Claude Code's tool
//! names (`Bash(npm test:*)`, `WebFetch`, `MultiEdit`, `KillBash`, …) are
//! read as gyre's ([`gyre_tool_name`]) when matching, so a rule copied from
//! its settings means the same here; a rule is shown as written. A list separates rules by commas or by whitespace
//! outside parentheses (`Read Edit "Bash(git log:*)"`, as Claude Code).
//!
//! Invariants: a rule that parses has a specifier its tool can use (a glob
//! that compiles, a command that splits, a non-empty domain); matching never
//! fails, it only says yes or no. Trade-off: paths are compared after lexical
//! normalisation, not canonicalisation, so a symlink inside the workspace
//! pointing outside is judged by its name (the tools' own workspace
//! confinement still applies).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use globset::{GlobBuilder, GlobSetBuilder};

use super::PermissionContext;

/// One rule: a tool, optionally narrowed by a specifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub tool: String,
    pub specifier: Option<String>,
}

/// Which way a rule is used: an allow rule must match precisely, a deny or
/// ask rule errs on the side of matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Polarity {
    Allow,
    Restrict,
}

/// What a specifier is compared with, by the rule's tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpecKind {
    Command,
    Path,
    Url,
    MainArgument,
}

/// Claude Code's names of the tools gyre has, with gyre's names.
pub const CLAUDE_TOOL_NAMES: [(&str, &str); 16] = [
    ("Read", "read"),
    ("Write", "write"),
    ("Edit", "edit"),
    ("MultiEdit", "multi_edit"),
    ("Bash", "bash"),
    ("BashOutput", "bash_output"),
    ("KillShell", "kill_shell"),
    ("KillBash", "kill_shell"),
    ("Grep", "grep"),
    ("Glob", "glob"),
    ("LS", "ls"),
    ("TodoWrite", "todo_write"),
    ("WebFetch", "web_fetch"),
    ("WebSearch", "web_search"),
    ("Task", "task"),
    ("TaskOutput", "task_output"),
];

/// gyre's name of a tool named in Claude Code's spelling (`WebFetch` →
/// `web_fetch`, any case); every other name is returned as given.
pub fn gyre_tool_name(name: &str) -> &str {
    CLAUDE_TOOL_NAMES
        .iter()
        .find(|(claude, _)| claude.eq_ignore_ascii_case(name))
        .map_or(name, |(_, gyre)| gyre)
}

/// Tools whose calls name a path, and the argument that names it.
const PATH_TOOLS: [(&str, &str); 7] = [
    ("read", "file_path"),
    ("write", "file_path"),
    ("edit", "file_path"),
    ("multi_edit", "file_path"),
    ("grep", "path"),
    ("glob", "path"),
    ("ls", "path"),
];

/// A path rule of the first tool covers the calls of the others.
const PATH_FAMILIES: [(&str, &[&str]); 2] = [
    ("read", &["read", "grep", "glob", "ls"]),
    ("edit", &["edit", "write", "multi_edit"]),
];

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
        let star_inside = tool.trim_end_matches('*').contains('*');
        if tool.is_empty()
            || star_inside
            || !tool
                .chars()
                .all(|c| c.is_alphanumeric() || "_-*".contains(c))
        {
            return Err(format!(
                "rule `{s}` does not start with a tool name (letters, digits, `_`, `-`, and `*` only at the end)"
            ));
        }
        let rule = Rule {
            tool: tool.to_string(),
            specifier,
        };
        rule.validate().map(|()| rule)
    }
}

impl Rule {
    /// Parses a list such as `bash(rm:*),web_fetch` or `Bash(git log:*)
    /// Read`: rules separated by commas or whitespace. Both inside
    /// parentheses belong to the specifier.
    pub fn parse_list(list: &str) -> Result<Vec<Rule>, String> {
        let mut rules = Vec::new();
        let mut depth = 0usize;
        let mut start = 0;
        for (i, c) in list.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                // `bash (rm:*)`: a space before the specifier separates nothing.
                c if depth == 0
                    && (c == ','
                        || (c.is_whitespace() && !list[i..].trim_start().starts_with('('))) =>
                {
                    push_rule(&list[start..i], &mut rules)?;
                    start = i + c.len_utf8();
                }
                _ => {}
            }
        }
        push_rule(&list[start..], &mut rules)?;
        Ok(rules)
    }

    /// Whether this rule names all of `tool` (no specifier): a deny rule of that
    /// kind removes the tool from what the model is offered.
    pub fn covers_whole_tool(&self, tool: &str) -> bool {
        self.specifier.is_none() && self.matches_tool_name(tool)
    }

    fn validate(&self) -> Result<(), String> {
        let Some(spec) = &self.specifier else {
            return Ok(());
        };
        if spec.is_empty() {
            return Err(format!(
                "rule `{self}` has an empty specifier; write `{}` to name the whole tool",
                self.tool
            ));
        }
        match self.spec_kind() {
            SpecKind::Command => match command_pattern(spec) {
                Some(_) => Ok(()),
                None => Err(format!(
                    "rule `{self}` has a command with unbalanced quotes"
                )),
            },
            SpecKind::Path => {
                let pattern = glob_text(spec);
                GlobBuilder::new(&pattern)
                    .literal_separator(true)
                    .build()
                    .map(|_| ())
                    .map_err(|e| format!("rule `{self}` has an invalid path glob: {e}"))
            }
            SpecKind::Url => match spec.strip_prefix("domain:").map(str::trim) {
                Some("") => Err(format!("rule `{self}` names no domain after `domain:`")),
                _ => Ok(()),
            },
            SpecKind::MainArgument => Ok(()),
        }
    }

    /// The rule's tool by gyre's name, lowercase (`WebFetch` → `web_fetch`).
    fn gyre_tool(&self) -> String {
        gyre_tool_name(&self.tool).to_ascii_lowercase()
    }

    pub(crate) fn spec_kind(&self) -> SpecKind {
        let tool = self.gyre_tool();
        if tool == "bash" {
            SpecKind::Command
        } else if PATH_TOOLS.iter().any(|(name, _)| *name == tool) {
            SpecKind::Path
        } else if tool == "web_fetch" {
            SpecKind::Url
        } else {
            SpecKind::MainArgument
        }
    }

    /// The tool name alone: a `*` suffix is a prefix, `mcp__server` covers
    /// the server's tools, otherwise equal ignoring case.
    fn matches_tool_name(&self, tool: &str) -> bool {
        let tool = tool.to_ascii_lowercase();
        // As written (any case), or by Claude Code's name of a gyre tool.
        if self.gyre_tool() == tool {
            return true;
        }
        let own = self.tool.to_ascii_lowercase();
        if let Some(prefix) = own.strip_suffix('*') {
            return tool.starts_with(prefix);
        }
        let is_server = own
            .strip_prefix("mcp__")
            .is_some_and(|server| !server.is_empty() && !server.contains("__"));
        own == tool || (is_server && tool.starts_with(&format!("{own}__")))
    }

    /// Whether this rule applies to calls of `tool` at all (a path rule
    /// of `read` or `edit` to its family's tools too).
    pub fn names_tool(&self, tool: &str) -> bool {
        self.applies_to(tool)
    }

    /// Whether this rule applies to calls of `tool` at all.
    pub(crate) fn applies_to(&self, tool: &str) -> bool {
        if self.specifier.is_some() && self.spec_kind() == SpecKind::Path {
            let own = self.gyre_tool();
            if let Some((_, members)) = PATH_FAMILIES.iter().find(|(head, _)| *head == own) {
                return members.iter().any(|m| m.eq_ignore_ascii_case(tool));
            }
        }
        self.matches_tool_name(tool)
    }

    /// Whether this rule matches a call of a tool other than `bash` (whose
    /// commands are matched segment by segment, see [`Rule::matches_command`]).
    pub(crate) fn matches_call(
        &self,
        tool: &str,
        args: &serde_json::Value,
        ctx: &PermissionContext,
    ) -> bool {
        if !self.applies_to(tool) {
            return false;
        }
        let Some(spec) = &self.specifier else {
            return true;
        };
        match self.spec_kind() {
            SpecKind::Path => call_path(tool, args).is_some_and(|p| path_matches(spec, &p, ctx)),
            SpecKind::Url => match spec.strip_prefix("domain:") {
                Some(domain) => args
                    .get("url")
                    .and_then(|u| u.as_str())
                    .and_then(host_of)
                    .is_some_and(|host| host_in_domain(&host, domain)),
                None => main_argument(args).is_some_and(|s| text_matches(spec, s)),
            },
            // A `bash` rule against a call without a command, or any other
            // tool's specifier: the legacy main-argument comparison.
            SpecKind::Command | SpecKind::MainArgument => {
                main_argument(args).is_some_and(|s| text_matches(spec, s))
            }
        }
    }

    /// Whether this `bash` rule matches one segment's canonical command.
    pub(crate) fn matches_command(&self, canonical: &str, polarity: Polarity) -> bool {
        if !self.matches_tool_name("bash") {
            return false;
        }
        let Some(spec) = &self.specifier else {
            return true;
        };
        match command_pattern(spec) {
            Some(CommandPattern::Exact(exact)) => canonical == exact,
            Some(CommandPattern::Prefix(prefix)) => prefix_matches(&prefix, canonical, polarity),
            None => false,
        }
    }

    /// Whether this is a `bash` rule with a specifier (one that a command
    /// gyre cannot split might evade).
    pub(crate) fn is_command_rule(&self) -> bool {
        self.specifier.is_some() && self.matches_tool_name("bash")
    }
}

fn push_rule(text: &str, rules: &mut Vec<Rule>) -> Result<(), String> {
    if !text.trim().is_empty() {
        rules.push(text.parse()?);
    }
    Ok(())
}

/// A `bash` specifier in canonical form.
enum CommandPattern {
    Exact(String),
    Prefix(String),
}

fn command_pattern(spec: &str) -> Option<CommandPattern> {
    let (text, prefix) = match spec.strip_suffix(":*").or_else(|| spec.strip_suffix(" *")) {
        Some(head) => (head, true),
        None => match spec.strip_suffix('*') {
            Some(head) => (head, true),
            None => (spec, false),
        },
    };
    let canonical = super::shell::canonical(&shlex::split(text)?);
    Some(if prefix {
        CommandPattern::Prefix(canonical)
    } else {
        CommandPattern::Exact(canonical)
    })
}

/// A prefix match. For allow rules it must end at a word boundary
/// (`bash(ls:*)` allows `ls -l`, not `lsblk`); deny and ask rules match
/// any string prefix, erring on the side of refusing.
fn prefix_matches(prefix: &str, subject: &str, polarity: Polarity) -> bool {
    let Some(rest) = subject.strip_prefix(prefix) else {
        return false;
    };
    match polarity {
        Polarity::Restrict => true,
        Polarity::Allow => {
            prefix.is_empty()
                || prefix.ends_with(char::is_whitespace)
                || rest.is_empty()
                || rest.starts_with(char::is_whitespace)
        }
    }
}

/// The legacy comparison for other tools' arguments: exact, or any string
/// prefix with `:*`/`*` (kept as it was so that old rules mean the same).
fn text_matches(spec: &str, subject: &str) -> bool {
    match spec.strip_suffix(":*").or_else(|| spec.strip_suffix('*')) {
        Some(prefix) => subject.starts_with(prefix),
        None => subject == spec,
    }
}

pub(crate) fn main_argument(args: &serde_json::Value) -> Option<&str> {
    ["command", "file_path", "path", "url", "pattern"]
        .iter()
        .find_map(|key| args.get(key).and_then(|v| v.as_str()))
        .map(str::trim)
}

/// The path a call of a path tool works on; the search tools default to the
/// workspace root.
pub(crate) fn call_path(tool: &str, args: &serde_json::Value) -> Option<String> {
    let (name, key) = PATH_TOOLS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(tool))?;
    match args.get(key).and_then(|v| v.as_str()) {
        Some(path) => Some(path.to_string()),
        None if !matches!(*name, "grep" | "glob" | "ls") => None,
        None => Some(".".to_string()),
    }
}

/// A path specifier as a glob (the legacy `:*` suffix becomes `*`).
fn glob_text(spec: &str) -> String {
    match spec.strip_suffix(":*") {
        Some(head) => format!("{head}*"),
        None => spec.to_string(),
    }
}

/// `path` as an absolute, lexically normalised path: `~` expanded, relative
/// paths joined to the workspace root.
pub(crate) fn resolve(path: &str, ctx: &PermissionContext) -> PathBuf {
    let expanded = match (path.strip_prefix('~'), &ctx.home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(path),
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        ctx.workspace_root.join(expanded)
    };
    gyre_tools::normalise(&joined)
}

fn path_matches(spec: &str, path: &str, ctx: &PermissionContext) -> bool {
    let pattern = glob_text(spec);
    // The fixed part (home or workspace root) is escaped: a directory
    // named `a[1]` must not turn into a character class.
    let absolute = match (pattern.strip_prefix('~'), &ctx.home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            format!("{}{rest}", globset::escape(&home.to_string_lossy()))
        }
        _ if pattern.starts_with('/') => pattern.clone(),
        _ => {
            let root = globset::escape(&ctx.workspace_root.to_string_lossy());
            let rest = pattern.trim_start_matches("./");
            format!("{}/{rest}", root.trim_end_matches('/'))
        }
    };
    let mut candidates = vec![format!("{}/**", absolute.trim_end_matches('/'))];
    match absolute.strip_suffix("/**") {
        Some(base) => candidates.push(base.to_string()),
        None => candidates.push(absolute.clone()),
    }
    let mut set = GlobSetBuilder::new();
    for candidate in &candidates {
        match GlobBuilder::new(candidate).literal_separator(true).build() {
            Ok(glob) => {
                set.add(glob);
            }
            Err(_) => return false,
        }
    }
    set.build()
        .is_ok_and(|set| set.is_match(resolve(path, ctx)))
}

/// The host of an `http(s)` URL, lowercased, without user info or port.
/// `\` ends the authority as `/` does, as URL parsers treat it for web URLs
/// (so `https://evil.org\@example.com` is evil.org's).
pub(crate) fn host_of(url: &str) -> Option<String> {
    let (_, rest) = url.trim().split_once("://")?;
    let authority = rest.split(['/', '\\', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        host_port.split(':').next()?
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

fn host_in_domain(host: &str, domain: &str) -> bool {
    let domain = domain.trim().trim_end_matches('.').to_ascii_lowercase();
    host == domain || host.ends_with(&format!(".{domain}"))
}
