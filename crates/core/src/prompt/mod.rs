//! System prompt assembly.
//!
//! Layers, in a fixed order so that the prompt is a stable cache prefix: the
//! base prompt (with a note for the provider's models; `--system-prompt`
//! replaces both, an empty one leaves them out), the agent's prompt,
//! the environment (working directory, git branch and a short status taken
//! once, platform, today's date — the date only, so the prefix changes at
//! most once a day), the rule files ([`rules`]), then text the user
//! appended. Nothing in it changes from turn to turn; a subagent's prompt
//! is the same template with its own agent layer ([`PromptTemplate`]).

mod git;
mod notices;
mod rules;

pub use git::git_status;
pub use notices::*;

use std::path::{Path, PathBuf};

pub use rules::{
    DEFAULT_RULES_BUDGET, RULE_FILE_NAMES, RuleFile, find_rule_files, git_branch, rules_section,
};
use std::time::{SystemTime, UNIX_EPOCH};

const BASE_PROMPT: &str = "\
You are gyre, a coding agent working in the user's project through tools.

How to work:
- Understand before you change: list, search and read the relevant files first.
- Make focused changes with the edit tools; keep the project's style.
- Verify: run the project's tests or the command that shows the change works.
- When a tool fails, read its error and adjust; do not repeat the same call.
- Paths may be relative to the working directory; you cannot leave it.
- Finish with a short summary of what you changed and how you checked it.
Be concise. Do not invent file contents: read them.";

/// What the models of one wire API are told beyond the base prompt.
fn provider_note(api: &str) -> Option<&'static str> {
    match api {
        "openai" | "openai-responses" => Some(
            "Call tools through the function-calling interface, never by describing a call in \
             text. Independent read-only calls may go in one answer; they run in parallel.",
        ),
        "gemini" => Some(
            "Use each tool's argument names exactly as its schema gives them. Call a tool \
             instead of announcing that you will.",
        ),
        _ => None,
    }
}

/// The layers of a system prompt besides the base, in prompt order.
#[derive(Debug, Clone, Copy)]
pub struct PromptLayers<'a> {
    /// `--system-prompt`: replaces the base prompt and the provider's note
    /// (`None`: gyre's own).
    pub base: Option<&'a str>,
    /// The wire API (`anthropic`, `openai`, …), for the provider's note.
    pub api: &'a str,
    /// The agent's layer (empty: none).
    pub agent: &'a str,
    pub cwd: &'a Path,
    /// `git status` in short, taken once ([`git_status`]).
    pub git_status: Option<&'a str>,
    /// The user's and the project's rule files ([`find_rule_files`]).
    pub rules: &'a [RuleFile],
    /// The most bytes of rules the prompt carries.
    pub rules_budget: usize,
    /// `--append-system-prompt`.
    pub append: Option<&'a str>,
}

/// An assembled system prompt, and what the user should hear about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrompt {
    pub text: String,
    /// Rule files cut to fit the budget.
    pub warnings: Vec<String>,
}

/// Builds the system prompt: the base, the environment (with the git
/// branch read from `.git/HEAD`), the rule files, then the appended text.
pub fn assemble(layers: PromptLayers<'_>) -> SystemPrompt {
    let cwd = layers.cwd;
    let mut prompt = String::with_capacity(1024);
    match layers.base {
        Some(base) => prompt.push_str(base.trim()),
        None => {
            prompt.push_str(BASE_PROMPT);
            if let Some(note) = provider_note(layers.api) {
                prompt.push('\n');
                prompt.push_str(note);
            }
        }
    }
    if !layers.agent.trim().is_empty() {
        if !prompt.is_empty() {
            prompt.push_str("\n\n");
        }
        prompt.push_str(layers.agent.trim());
    }
    if !prompt.is_empty() {
        prompt.push_str("\n\n");
    }
    prompt.push_str("<environment>\n");
    prompt.push_str(&format!("Working directory: {}\n", cwd.display()));
    prompt.push_str(&format!(
        "Is a git repository: {}\n",
        if is_git_repo(cwd) { "yes" } else { "no" }
    ));
    if let Some(branch) = git_branch(cwd) {
        prompt.push_str(&format!("Git branch: {branch}\n"));
    }
    if let Some(status) = layers.git_status {
        let status = status.trim_end();
        if status.is_empty() {
            prompt.push_str("Git status (at start): clean\n");
        } else {
            prompt.push_str(&format!("Git status (at start):\n{status}\n"));
        }
    }
    prompt.push_str(&format!("Platform: {}\n", std::env::consts::OS));
    prompt.push_str(&format!("Today's date: {}\n", today()));
    prompt.push_str("</environment>");
    let (rules, warning) = rules_section(layers.rules, layers.rules_budget);
    if !rules.is_empty() {
        prompt.push_str("\n\n");
        prompt.push_str(&rules);
    }
    if let Some(extra) = layers.append.filter(|s| !s.trim().is_empty()) {
        prompt.push_str("\n\n");
        prompt.push_str(extra);
    }
    SystemPrompt {
        text: prompt,
        warnings: warning.into_iter().collect(),
    }
}

/// Everything of a system prompt but the agent's layer, owned: the main
/// agent's prompt and every subagent's are made from one template.
#[derive(Debug, Clone, Default)]
pub struct PromptTemplate {
    pub api: String,
    pub cwd: PathBuf,
    pub git_status: Option<String>,
    pub rules: Vec<RuleFile>,
    pub rules_budget: usize,
    pub append: Option<String>,
    /// `--system-prompt`: the base layer, replaced.
    pub base: Option<String>,
}

impl PromptTemplate {
    /// The system prompt of an agent whose layer is `agent`.
    pub fn assemble(&self, agent: &str) -> SystemPrompt {
        assemble(PromptLayers {
            base: self.base.as_deref(),
            api: &self.api,
            agent,
            cwd: &self.cwd,
            git_status: self.git_status.as_deref(),
            rules: &self.rules,
            rules_budget: self.rules_budget,
            append: self.append.as_deref(),
        })
    }
}

/// The system prompt for a run in `cwd` without rule files.
pub fn system_prompt(cwd: &Path, append: Option<&str>) -> String {
    assemble(PromptLayers {
        base: None,
        api: "",
        agent: "",
        cwd,
        git_status: None,
        rules: &[],
        rules_budget: DEFAULT_RULES_BUDGET,
        append,
    })
    .text
}

fn is_git_repo(cwd: &Path) -> bool {
    cwd.ancestors().any(|dir| dir.join(".git").exists())
}

/// Today's date (UTC) as `YYYY-MM-DD`.
pub fn today() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// algorithm), to avoid a date crate for one line of the prompt.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_779), (2026, 11, 22));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn prompt_has_layers_in_order() {
        let p = system_prompt(Path::new("/nowhere"), Some("Always answer in French."));
        let env = p.find("<environment>").unwrap();
        let extra = p.find("Always answer in French.").unwrap();
        assert!(p.starts_with("You are gyre"));
        assert!(env < extra);
        assert!(p.contains("Working directory: /nowhere\n"));
    }
}
