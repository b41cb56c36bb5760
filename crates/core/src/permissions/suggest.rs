//! The rule an "always allow" answer adds: a stable prefix, not the exact
//! call, so that the next similar call runs without asking again.
//!
//! - `bash`: for each segment of the command that does not only read, the
//!   command name, and for programs with subcommands (`git`, `npm`,
//!   `cargo`, …) the words up to the first non-option one:
//!   `git commit -m "x"` gives `bash(git commit:*)`, `rm -rf build` gives
//!   `bash(rm:*)`. A command gyre cannot split gives itself, exactly (such a
//!   rule never matches, by design: see the module `shell`).
//!   An interpreter or shell running a script or code (`python3 x.py`,
//!   `node x.js`, `bash x.sh`, `python3 -c …`) gives the exact command:
//!   its prefix (`python3:*`) would allow any program; `python3 -m
//!   pytest …` gives the module's prefix (`bash(python3 -m pytest:*)`).
//! - file tools: the directory of the path as a glob, relative to the
//!   workspace when inside it (`edit(src/**)`); edits use `edit`, which
//!   also covers `write` and `multi_edit`, and searches use `read`.
//! - `web_fetch`: `web_fetch(domain:HOST)`.
//! - other tools: the tool name.
//!
//! Trade-off: a prefix is wider than the call a person approved (`rm:*`
//! allows every `rm`); that is what "always" means, and the rule is shown
//! with the request so that the person knows what they accept.

use std::path::Path;

use super::rule::{call_path, host_of, resolve};
use super::shell;
use super::{PermissionContext, Rule};

/// Programs whose first non-option word is a subcommand.
const WITH_SUBCOMMANDS: &[&str] = &[
    "git",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "npx",
    "deno",
    "cargo",
    "rustup",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "go",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "make",
    "just",
    "gh",
    "terraform",
    "systemctl",
    "apt",
    "apt-get",
    "brew",
    "dotnet",
    "mvn",
    "gradle",
    "conda",
    "aws",
    "gcloud",
    "az",
    "composer",
    "bundle",
];

/// Programs that run whatever script or code they are given: a prefix of
/// them allows every program.
const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "node",
    "nodejs",
    "bash",
    "sh",
    "zsh",
    "dash",
    "fish",
    "ksh",
    "ruby",
    "perl",
    "php",
    "lua",
    "Rscript",
    "pwsh",
    "tclsh",
    "osascript",
    "env",
    "xargs",
];

/// Options of those programs whose value is the next word.
const VALUED_OPTIONS: &[(&str, &[&str])] = &[
    ("git", &["-C", "-c", "--git-dir", "--work-tree"]),
    ("docker", &["-H", "--host", "--context", "-c"]),
    ("kubectl", &["-n", "--namespace", "--context"]),
    ("cargo", &["-Z", "--config"]),
    ("make", &["-C", "-f", "-j"]),
];

/// The first rule "always allow" adds for this call.
pub fn suggest_rule(tool: &str, args: &serde_json::Value, ctx: &PermissionContext) -> Rule {
    let mut rules = suggest_rules(tool, args, ctx);
    if rules.is_empty() {
        return whole_tool(tool);
    }
    rules.swap_remove(0)
}

/// Every rule "always allow" adds for this call (one per kind of segment of
/// a compound command; one otherwise).
pub fn suggest_rules(tool: &str, args: &serde_json::Value, ctx: &PermissionContext) -> Vec<Rule> {
    let lower = tool.to_ascii_lowercase();
    if lower == "bash"
        && let Some(command) = args.get("command").and_then(|c| c.as_str())
    {
        return command_rules(command);
    }
    if let Some(path) = call_path(&lower, args) {
        let family = match lower.as_str() {
            "edit" | "write" | "multi_edit" => "edit",
            _ => "read",
        };
        let resolved = resolve(&path, ctx);
        let dir = match lower.as_str() {
            "grep" | "glob" | "ls" => resolved.as_path(),
            _ => resolved.parent().unwrap_or(resolved.as_path()),
        };
        return vec![rule(family, Some(directory_glob(dir, ctx)))];
    }
    if lower == "web_fetch"
        && let Some(host) = args.get("url").and_then(|u| u.as_str()).and_then(host_of)
    {
        return vec![rule(tool, Some(format!("domain:{host}")))];
    }
    vec![whole_tool(tool)]
}

fn rule(tool: &str, specifier: Option<String>) -> Rule {
    Rule {
        tool: tool.to_string(),
        specifier,
    }
}

fn whole_tool(tool: &str) -> Rule {
    rule(tool, None)
}

fn command_rules(command: &str) -> Vec<Rule> {
    let Ok(segments) = shell::split(command) else {
        return vec![rule("bash", Some(command.trim().to_string()))];
    };
    let mut rules: Vec<Rule> = Vec::new();
    let writers = segments
        .iter()
        .filter(|s| !gyre_tools::is_read_only_command(&s.raw));
    for segment in writers {
        let suggested = rule("bash", Some(allow_specifier(segment)));
        if !rules.contains(&suggested) {
            rules.push(suggested);
        }
    }
    if rules.is_empty()
        && let Some(first) = segments.first()
    {
        rules.push(rule("bash", Some(allow_specifier(first))));
    }
    rules
}

/// What an allow rule for `segment` names: its stable prefix (`git
/// commit:*`), or the exact command when it runs an interpreter on a
/// script or code, whose prefix would allow anything.
fn allow_specifier(segment: &shell::Segment) -> String {
    let program = segment
        .words
        .first()
        .map(|w| w.rsplit('/').next().unwrap_or_default())
        .unwrap_or_default();
    if !INTERPRETERS.contains(&program) {
        return format!("{}:*", allow_prefix(segment));
    }
    let wrapped = segment
        .allow_words
        .len()
        .saturating_sub(segment.words.len());
    // `python3 -m MODULE …`: the module is the program.
    if segment.words.get(1).is_some_and(|w| w == "-m") && segment.words.len() > 2 {
        let end = (wrapped + 3).min(segment.allow_words.len());
        return format!("{}:*", shell::canonical(&segment.allow_words[..end]));
    }
    shell::canonical(&segment.allow_words)
}

/// The stable prefix of what allow rules see of `segment`: the wrappers
/// and assignments they do not look through (`sudo`, `FOO=1`), then the
/// stable prefix of the command itself (`sudo apt install`).
fn allow_prefix(segment: &shell::Segment) -> String {
    let wrapped = segment
        .allow_words
        .len()
        .saturating_sub(segment.words.len());
    let end = wrapped + stable_prefix(&segment.words).len();
    shell::canonical(&segment.allow_words[..end.min(segment.allow_words.len())])
}

/// The command name, and for programs with subcommands the words up to and
/// including the first non-option word.
fn stable_prefix(words: &[String]) -> &[String] {
    let Some(first) = words.first() else {
        return words;
    };
    let program = first.rsplit('/').next().unwrap_or_default();
    if !WITH_SUBCOMMANDS.contains(&program) {
        return &words[..1];
    }
    let valued = VALUED_OPTIONS
        .iter()
        .find(|(name, _)| *name == program)
        .map_or(&[][..], |(_, options)| options);
    let mut i = 1;
    while let Some(word) = words.get(i) {
        if !word.starts_with('-') {
            return &words[..=i];
        }
        i += if valued.contains(&word.as_str()) {
            2
        } else {
            1
        };
    }
    &words[..1]
}

/// `dir` as a glob of everything below it: relative to the workspace root
/// when inside it, else absolute.
fn directory_glob(dir: &Path, ctx: &PermissionContext) -> String {
    match dir.strip_prefix(&ctx.workspace_root) {
        Ok(relative) if relative.as_os_str().is_empty() => "**".to_string(),
        Ok(relative) => format!("{}/**", globset::escape(&relative.to_string_lossy())),
        Err(_) => format!("{}/**", globset::escape(&dir.to_string_lossy())),
    }
}
