//! System prompt assembly.
//!
//! Layers, in a fixed order so that the prompt is a stable cache prefix: the
//! base prompt, the environment (working directory, git branch, platform,
//! today's date — the date only, so the prefix changes at most once a day),
//! the rule files ([`rules`]), then text the user appended. Nothing in it
//! changes from turn to turn.

mod rules;

use std::path::Path;

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

/// The wrap-up notice sent with the last allowed turn.
pub const WRAP_UP_NOTICE: &str = "<system-reminder>This is the last turn allowed for this task: \
tools are disabled now. Summarise what you did, what is left, and how to continue.</system-reminder>";

/// Sent (as a user-side message) after an answer the provider marked as an
/// error, such as a malformed tool call, so the model answers again.
pub const UNUSABLE_ANSWER_NOTICE: &str = "<system-reminder>Your last answer could not be used: \
the provider reported it as an error (for example a malformed tool call). Answer again; if you \
call a tool, send its arguments as one valid JSON object.</system-reminder>";

/// Sent (as a message from gyre) after an answer cut off by the output
/// limit, so the model carries on where it stopped.
pub const MAX_TOKENS_NOTICE: &str = "<system-reminder>Your last answer was cut off at the output \
token limit. Continue exactly where it stopped, without repeating yourself or apologising. If you \
were writing a tool call, send the whole call again, and split large file contents into several \
smaller writes or edits.</system-reminder>";

/// The system prompt of a summarising request.
pub const COMPACTION_SYSTEM_PROMPT: &str = "\
You are gyre's summariser. You read the transcript of a coding session between a user and a \
coding agent, and write the summary the agent will continue from: the transcript itself will be \
gone. Write for the agent, not for the user. Be precise: exact file paths, names, commands, \
error messages and values. Never add anything the transcript does not show. Do not call tools; \
answer with the summary only.";

/// What a summarising request asks for, after the transcript.
pub const COMPACTION_INSTRUCTIONS: &str = "\
Summarise the transcript above so that the work can continue without it, in these sections:

1. Task: the user's requests (the latest one quoted verbatim) and every constraint or preference \
they stated.
2. State: what is done, what is in progress, and what the agent was doing when the transcript ends.
3. Decisions: the approaches chosen or rejected, and why.
4. Files: every file read, created or changed (paths exactly as written), with what changed and why.
5. Errors: errors and failed attempts met, how each was resolved, and what still fails.
6. Open items: the todo list and everything promised or left to do, in order.
7. Next step: the one next action, precisely.

Keep it under 1,500 words; leave out pleasantries and whatever no longer matters.";

/// Opens a summary message: the model must know it is gyre's, not the user's.
pub const SUMMARY_PREAMBLE: &str = "<system-reminder>The conversation before this point was \
compacted to fit the context window. What follows is gyre's summary of it, not the user's words; \
the messages after it are verbatim.</system-reminder>";

/// Ends a summary that nothing verbatim follows, in the middle of a run.
pub const CONTINUE_AFTER_SUMMARY: &str =
    "Continue the task from where it left off; do not ask the user to repeat anything.";

/// The layers of a system prompt besides the base, in prompt order.
#[derive(Debug, Clone, Copy)]
pub struct PromptLayers<'a> {
    pub cwd: &'a Path,
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
    prompt.push_str(BASE_PROMPT);
    prompt.push_str("\n\n<environment>\n");
    prompt.push_str(&format!("Working directory: {}\n", cwd.display()));
    prompt.push_str(&format!(
        "Is a git repository: {}\n",
        if is_git_repo(cwd) { "yes" } else { "no" }
    ));
    if let Some(branch) = git_branch(cwd) {
        prompt.push_str(&format!("Git branch: {branch}\n"));
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

/// The system prompt for a run in `cwd` without rule files.
pub fn system_prompt(cwd: &Path, append: Option<&str>) -> String {
    assemble(PromptLayers {
        cwd,
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
