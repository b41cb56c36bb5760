//! Custom slash commands: prompt files a user types as `/name args` in the
//! terminal UI, `gyre run "/name args"` headless, and that ACP lists.
//!
//! Markdown files as Claude Code writes them (optional front matter:
//! `description`, `argument-hint`, `model`, `allowed-tools`, `agent`; the
//! body is the prompt) and gemini-cli's TOML files (`prompt`,
//! `description`). Directories, lowest precedence first (a later command
//! of a name replaces an earlier one): `~/.claude/commands`,
//! `~/.gemini/commands`, `~/.config/gyre/commands`, then the project's
//! `.gemini/commands`, `.claude/commands`, `.gyre/commands`. A Markdown
//! file in a subdirectory keeps its own name (Claude Code); a TOML file
//! there is `dir:name` (gemini-cli). One command is built in: `init`
//! (write or improve AGENTS.md), which a file of that name replaces.
//!
//! The expansion is one implementation for every frontend: the pure part
//! in [`expand`] (tested without IO), the inclusions in [`render`].
//!
//! Invariants: a file that does not load is a warning naming it, never an
//! error; the list is sorted by name; nothing here asks a person (an
//! inclusion the permissions would ask about is refused with the reason).

pub mod expand;
mod init;
pub mod render;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gyre_core::Permissions;
use serde_json::Value;

pub use init::INIT_PROMPT;

/// The largest command file read.
const MAX_FILE_BYTES: u64 = 256 * 1024;
/// How deep subdirectories are searched.
const MAX_DEPTH: usize = 3;

/// One custom command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
    /// The model its run uses (`None`: the session's).
    pub model: Option<String>,
    /// The agent its run uses (`None`: the session's).
    pub agent: Option<String>,
    /// Permission rules allowing its `` !`command` `` inclusions.
    pub allowed_tools: Vec<String>,
    pub template: String,
    /// The file it comes from (`None`: built in).
    pub source: Option<PathBuf>,
}

/// A command as a frontend lists it (ACP's available commands).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    pub name: String,
    pub description: String,
    pub hint: Option<String>,
}

/// What a `/name args` line became.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub prompt: String,
    pub model: Option<String>,
    pub agent: Option<String>,
}

/// The commands of a workspace, sorted by name.
#[derive(Debug, Clone, Default)]
pub struct Commands {
    list: Vec<CustomCommand>,
}

impl Commands {
    pub fn new(commands: impl IntoIterator<Item = CustomCommand>) -> Self {
        let by_name: BTreeMap<String, CustomCommand> =
            commands.into_iter().map(|c| (c.name.clone(), c)).collect();
        Self {
            list: by_name.into_values().collect(),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &CustomCommand> {
        self.list.iter()
    }

    pub fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.list.iter().find(|c| c.name == name)
    }

    /// Name, description and argument hint of each.
    pub fn infos(&self) -> Vec<CommandInfo> {
        self.list
            .iter()
            .map(|c| CommandInfo {
                name: c.name.clone(),
                description: c.description.clone(),
                hint: c.argument_hint.clone(),
            })
            .collect()
    }

    /// The expansion of `line` when it is `/name args` of one of these
    /// commands (`None`: it is not; the line is a prompt as it is).
    /// `permissions` decide which `` !`command` `` inclusions run.
    pub async fn invoke(
        &self,
        line: &str,
        workspace: &Path,
        permissions: &Permissions,
    ) -> Option<Result<Invocation, String>> {
        let (name, args) = split_invocation(line)?;
        let command = self.get(name)?;
        let pieces = expand::expand(&command.template, args);
        Some(
            render::render(&pieces, workspace, permissions, &command.allowed_tools)
                .await
                .map(|prompt| Invocation {
                    prompt,
                    model: command.model.clone(),
                    agent: command.agent.clone(),
                })
                .map_err(|e| format!("/{name}: {e}")),
        )
    }
}

/// A headless run's prompt, expanded when it is `/name args` of a custom
/// command of the workspace; the command's `model` and `agent` replace
/// the flags' (the settings are resolved again then). Warnings of command
/// files go to stderr; an inclusion that fails ends the run (exit 1).
pub async fn apply(
    flags: &crate::Flags,
    settings: crate::Settings,
    prompt: String,
) -> Result<(crate::Settings, String), crate::Exit> {
    if split_invocation(&prompt).is_none() {
        return Ok((settings, prompt));
    }
    let (commands, warnings) = load(&settings.workspace);
    for warning in &warnings {
        eprintln!("gyre: warning: {warning}");
    }
    let invoked = commands
        .invoke(&prompt, &settings.workspace, &settings.permissions)
        .await;
    match invoked {
        None => Ok((settings, prompt)),
        Some(Err(e)) => Err(crate::Exit::failure(e)),
        Some(Ok(invocation)) if invocation.model.is_none() && invocation.agent.is_none() => {
            Ok((settings, invocation.prompt))
        }
        Some(Ok(invocation)) => {
            let mut flags = flags.clone();
            if invocation.model.is_some() {
                flags.model = invocation.model;
            }
            if invocation.agent.is_some() {
                flags.agent = invocation.agent;
            }
            Ok((crate::Settings::resolve(&flags)?, invocation.prompt))
        }
    }
}

/// `("name", "args")` of a `/name args` line.
pub fn split_invocation(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start().strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    (!name.is_empty() && !name.contains('/')).then_some((name, args.trim()))
}

/// The directories commands are read from, lowest precedence first.
pub fn command_dirs(
    user_config: Option<&Path>,
    home: Option<&Path>,
    workspace: &Path,
) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(home) = home {
        dirs.push(home.join(".claude/commands"));
        dirs.push(home.join(".gemini/commands"));
    }
    if let Some(dir) = user_config {
        dirs.push(dir.join("commands"));
    }
    for relative in [".gemini/commands", ".claude/commands", ".gyre/commands"] {
        dirs.push(workspace.join(relative));
    }
    dirs
}

/// The commands of `workspace` (the built-in `init` first, so files
/// replace it), with the warnings of files that did not load.
pub fn load(workspace: &Path) -> (Commands, Vec<String>) {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let user = crate::config::user_config_dir();
    load_dirs(&command_dirs(user.as_deref(), home.as_deref(), workspace))
}

/// The commands of `workspace` as frontends list them (ACP's
/// `available_commands_update`); warnings are left out.
pub fn list(workspace: &Path) -> Vec<CommandInfo> {
    load(workspace).0.infos()
}

/// The built-in `init`, then each of `dirs`' files in order.
pub fn load_dirs(dirs: &[PathBuf]) -> (Commands, Vec<String>) {
    let mut found = vec![init::command()];
    let mut warnings = Vec::new();
    for dir in dirs {
        let mut files = Vec::new();
        collect(dir, "", 0, &mut files);
        files.sort();
        for (path, prefix) in files {
            match load_file(&path, &prefix) {
                Ok(command) => found.push(command),
                Err(e) => {
                    warnings.push(format!("command file {} is left out: {e}", path.display()))
                }
            }
        }
    }
    (Commands::new(found), warnings)
}

/// Every `*.md` and `*.toml` under `dir`, with the `dir:` prefix of its
/// subdirectories.
fn collect(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if depth < MAX_DEPTH
                && let Some(name) = path.file_name().and_then(|n| n.to_str())
            {
                collect(&path, &format!("{prefix}{name}:"), depth + 1, out);
            }
        } else if path.extension().is_some_and(|e| e == "md" || e == "toml") {
            out.push((path, prefix.to_string()));
        }
    }
}

fn load_file(path: &Path, prefix: &str) -> Result<CustomCommand, String> {
    let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "it is {size} bytes, over the {MAX_FILE_BYTES}-byte limit"
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let is_toml = path.extension().is_some_and(|e| e == "toml");
    let name = if is_toml {
        format!("{prefix}{stem}")
    } else {
        stem.to_string()
    };
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c == '/') {
        return Err(format!("its name `{name}` has a space or a slash"));
    }
    let mut command = if is_toml {
        parse_toml(&text)?
    } else {
        parse_markdown(&text)?
    };
    command.name = name;
    command.source = Some(path.to_path_buf());
    Ok(command)
}

/// A Markdown command: an optional front matter, then the prompt.
pub fn parse_markdown(text: &str) -> Result<CustomCommand, String> {
    let (front, body) = match gyre_core::agents::file::split_front_matter(text) {
        Some((front, body)) => (front, body),
        None => ("", text),
    };
    let map = if front.trim().is_empty() {
        serde_json::Map::new()
    } else {
        match serde_saphyr::from_str::<Value>(front) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err("its front matter is not a mapping of keys to values".into()),
            // Claude Code's own examples write `argument-hint: [a] [b]`,
            // which is not YAML: lines of `key: text` are read as such.
            Err(e) => plain_keys(front)
                .ok_or_else(|| format!("its front matter is not valid YAML: {e}"))?,
        }
    };
    let text_of = |key: &str| -> Result<Option<String>, String> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_string()).filter(|s| !s.is_empty())),
            Some(Value::Array(items)) if key == "argument-hint" => Ok(Some(
                items
                    .iter()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                    .collect::<Vec<_>>()
                    .join(" "),
            )),
            Some(other) => Err(format!("`{key}` is not text: {other}")),
        }
    };
    let allowed_tools = match map.get("allowed-tools") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or("`allowed-tools` holds a non-text item")
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("`allowed-tools` is not text: {other}")),
    };
    let template = body.trim().to_string();
    let description = match text_of("description")? {
        Some(d) => d,
        // Claude Code's default: the prompt's first line.
        None => template
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim_start_matches('#')
            .trim()
            .chars()
            .take(100)
            .collect(),
    };
    Ok(CustomCommand {
        name: String::new(),
        description,
        argument_hint: text_of("argument-hint")?,
        model: text_of("model")?,
        agent: text_of("agent")?,
        allowed_tools,
        template,
        source: None,
    })
}

/// A front matter of `key: text` lines, each value taken as it is written.
fn plain_keys(front: &str) -> Option<serde_json::Map<String, Value>> {
    let mut map = serde_json::Map::new();
    for line in front.lines().filter(|l| !l.trim().is_empty()) {
        let (key, value) = line.split_once(':')?;
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) || line.starts_with(' ') {
            return None;
        }
        map.insert(key.to_string(), Value::String(value.trim().to_string()));
    }
    Some(map)
}

#[derive(serde::Deserialize)]
struct TomlCommand {
    prompt: String,
    description: Option<String>,
}

/// A gemini-cli command: `prompt` and an optional `description`.
pub fn parse_toml(text: &str) -> Result<CustomCommand, String> {
    let parsed: TomlCommand =
        toml::from_str(text).map_err(|e| format!("it is not a gemini-cli command: {e}"))?;
    let template = parsed.prompt.trim().to_string();
    Ok(CustomCommand {
        name: String::new(),
        description: parsed.description.unwrap_or_default(),
        argument_hint: None,
        model: None,
        agent: None,
        allowed_tools: Vec::new(),
        template,
        source: None,
    })
}

#[cfg(test)]
mod tests;
