//! Agent files: Markdown with a YAML front matter, as Claude Code and
//! OpenCode write them.
//!
//! ```markdown
//! ---
//! name: reviewer
//! description: Reviews a change for bugs; read-only.
//! tools: Read, Grep, Glob        # or a YAML list; gyre's names or Claude Code's
//! model: claude-haiku-4-5
//! temperature: 0.2
//! top_p: 0.9
//! effort: high                   # low | medium | high | max
//! provider_options: {thinking: {type: enabled, budget_tokens: 2048}}
//! permission_mode: plan          # only applied when stricter than the session's
//! disallowed_tools: "bash(rm:*), web_fetch"
//! max_turns: 12
//! require_completion: true
//! skills: [release-notes]        # the skills it sees (default: all)
//! ---
//! You review changes. …
//! ```
//!
//! The body is the agent's prompt. A missing `name` is the file's stem.
//! Keys other agents write that gyre does not use (`color`, say) are
//! ignored with a warning, so files shared with other tools load; a file
//! that does not parse is left out with a warning naming it and the
//! problem. `allowed_tools` is refused: an agent can only narrow.
//!
//! Directories are read in order (the user's `~/.config/gyre/agents`, then
//! the project's `.gyre/agents`); within one, files load by name, so the
//! result does not depend on the directory listing's order.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{AgentProfile, AgentSource, Completion, Narrowing, ToolSelection};
use crate::permissions::{PermissionMode, Rule};

/// Keys gyre reads from a front matter.
const KNOWN_KEYS: [&str; 14] = [
    "name",
    "description",
    "tools",
    "model",
    "temperature",
    "top_p",
    "effort",
    "provider_options",
    "permission_mode",
    "disallowed_tools",
    "max_turns",
    "require_completion",
    "skills",
    "allowed_tools",
];

/// The largest agent file read (a prompt, not a data file).
const MAX_FILE_BYTES: u64 = 256 * 1024;

#[derive(Debug, Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    tools: Option<StringOrList>,
    model: Option<String>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    effort: Option<String>,
    provider_options: Option<Map<String, Value>>,
    permission_mode: Option<String>,
    disallowed_tools: Option<StringOrList>,
    max_turns: Option<u32>,
    require_completion: Option<bool>,
    skills: Option<StringOrList>,
    allowed_tools: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum StringOrList {
    One(String),
    Many(Vec<String>),
}

impl StringOrList {
    /// Items of a comma-separated string or of a list (commas inside
    /// parentheses belong to a rule's specifier).
    fn items(self) -> Vec<String> {
        match self {
            StringOrList::Many(items) => items,
            StringOrList::One(text) => {
                let mut items = Vec::new();
                let mut depth = 0usize;
                let mut current = String::new();
                for c in text.chars() {
                    match c {
                        '(' => depth += 1,
                        ')' => depth = depth.saturating_sub(1),
                        ',' if depth == 0 => {
                            items.push(std::mem::take(&mut current));
                            continue;
                        }
                        _ => {}
                    }
                    current.push(c);
                }
                items.push(current);
                items
            }
        }
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
    }
}

/// Profiles loaded from agent directories, and what went wrong on the way.
#[derive(Debug, Default)]
pub struct Loaded {
    pub profiles: Vec<AgentProfile>,
    pub warnings: Vec<String>,
}

/// Loads every `*.md` of each directory in `dirs`, in order (a missing
/// directory is skipped).
pub fn load_dirs(dirs: &[PathBuf]) -> Loaded {
    let mut loaded = Loaded::default();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|ext| ext == "md") && p.is_file())
            .collect();
        paths.sort();
        for path in paths {
            let text = match read_bounded(&path) {
                Ok(text) => text,
                Err(error) => {
                    loaded.warnings.push(format!(
                        "agent file {} is left out: {error}",
                        path.display()
                    ));
                    continue;
                }
            };
            match parse(&path, &text) {
                Ok((profile, warnings)) => {
                    loaded.profiles.push(profile);
                    loaded.warnings.extend(warnings);
                }
                Err(error) => loaded.warnings.push(format!(
                    "agent file {} is left out: {error}",
                    path.display()
                )),
            }
        }
    }
    loaded
}

pub(crate) fn read_bounded(path: &Path) -> Result<String, String> {
    let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "it is {size} bytes, over the {MAX_FILE_BYTES}-byte limit"
        ));
    }
    std::fs::read_to_string(path).map_err(|e| e.to_string())
}

/// Parses one agent file; the warnings name keys that were ignored.
pub fn parse(path: &Path, text: &str) -> Result<(AgentProfile, Vec<String>), String> {
    let (front, body) = split_front_matter(text)
        .ok_or("it does not start with a `---` front matter block closed by another `---`")?;
    let value: Value = if front.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_saphyr::from_str(front)
            .map_err(|e| format!("its front matter is not valid YAML: {e}"))?
    };
    let Value::Object(map) = &value else {
        return Err("its front matter is not a mapping of keys to values".into());
    };
    let mut warnings = Vec::new();
    let unknown: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| !KNOWN_KEYS.contains(k))
        .collect();
    if !unknown.is_empty() {
        warnings.push(format!(
            "agent file {}: ignored the keys {} (gyre reads: {})",
            path.display(),
            unknown.join(", "),
            KNOWN_KEYS[..12].join(", ")
        ));
    }
    let mut known = map.clone();
    known.retain(|k, _| KNOWN_KEYS.contains(&k.as_str()));
    let front: FrontMatter = serde_json::from_value(Value::Object(known.clone()))
        .map_err(|error| describe_front_matter_error(&known, error))?;
    if front.allowed_tools.is_some() {
        return Err(
            "`allowed_tools` would widen the session's permissions, and an agent can only narrow \
             them: use `disallowed_tools` or `permission_mode`"
                .into(),
        );
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = front.name.unwrap_or(stem).trim().to_string();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
    {
        return Err(format!(
            "its name `{name}` must be lowercase letters, digits, `-` and `_`"
        ));
    }
    let tools = match front.tools {
        None => ToolSelection::All,
        Some(list) => {
            let names: Vec<String> = list.items().iter().map(|n| gyre_tool_name(n)).collect();
            if names.iter().any(|n| n == "*") {
                ToolSelection::All
            } else {
                ToolSelection::Named(names)
            }
        }
    };
    let mode = front
        .permission_mode
        .as_deref()
        .map(str::parse::<PermissionMode>)
        .transpose()?;
    let mut deny = Vec::new();
    for item in front
        .disallowed_tools
        .map(StringOrList::items)
        .unwrap_or_default()
    {
        deny.push(item.parse::<Rule>()?);
    }
    if let Some(t) = front.temperature
        && !(0.0..=2.0).contains(&t)
    {
        return Err(format!("temperature {t} is not between 0 and 2"));
    }
    if let Some(p) = front.top_p
        && !(0.0..=1.0).contains(&p)
    {
        return Err(format!("top_p {p} is not between 0 and 1"));
    }
    let effort = front
        .effort
        .as_deref()
        .map(str::parse::<gyre_llm::Effort>)
        .transpose()?;
    if front.max_turns == Some(0) {
        return Err("max_turns must be at least 1".into());
    }
    let profile = AgentProfile {
        description: front
            .description
            .unwrap_or_else(|| format!("The `{name}` agent.")),
        name,
        prompt: body.trim().to_string(),
        tools,
        model: front.model.filter(|m| !m.trim().is_empty()),
        temperature: front.temperature,
        top_p: front.top_p,
        effort,
        provider_options: front.provider_options,
        narrowing: Narrowing { mode, deny },
        max_turns: front.max_turns,
        completion: if front.require_completion == Some(true) {
            Completion::Required
        } else {
            Completion::Off
        },
        skills: front.skills.map(StringOrList::items),
        source: AgentSource::File(path.to_path_buf()),
    };
    Ok((profile, warnings))
}

/// An error naming the key whose value does not fit (serde's own message
/// names only the expected type): each key is tried alone.
fn describe_front_matter_error(known: &Map<String, Value>, error: serde_json::Error) -> String {
    for (key, value) in known {
        let alone = Map::from_iter([(key.clone(), value.clone())]);
        if let Err(e) = serde_json::from_value::<FrontMatter>(Value::Object(alone)) {
            return format!("in its front matter, `{key}`: {e}");
        }
    }
    format!("in its front matter: {error}")
}

/// The front matter and the body, when `text` starts with `---` (the
/// form of agent files, skills and custom commands alike).
pub fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// gyre's name for a tool named in Claude Code's spelling (`MultiEdit` →
/// `multi_edit`, `LS` → `ls`); MCP names and gyre's own pass unchanged.
pub fn gyre_tool_name(name: &str) -> String {
    let name = name.trim();
    let known = crate::permissions::gyre_tool_name(name);
    if known != name {
        return known.to_string();
    }
    if name.contains("__") || name == "*" {
        return name.to_string();
    }
    let mut out = String::with_capacity(name.len() + 2);
    let mut previous_lower = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() && previous_lower {
            out.push('_');
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        out.push(c.to_ascii_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(text: &str) -> (AgentProfile, Vec<String>) {
        parse(Path::new("/agents/reviewer.md"), text).unwrap()
    }

    #[test]
    fn a_full_front_matter_is_read() {
        let (profile, warnings) = parse_ok(
            "---\nname: reviewer\ndescription: Reviews code.\ntools: Read, Grep, MultiEdit, mcp__gh__*\n\
             model: small-model\ntemperature: 0.2\ntop_p: 0.9\n\
             provider_options: {thinking: {type: enabled, budget_tokens: 2048}}\n\
             permission_mode: plan\ndisallowed_tools: \"bash(rm:*), web_fetch\"\nmax_turns: 12\n\
             require_completion: true\ncolor: blue\n---\n\nYou review.\n",
        );
        assert_eq!(profile.name, "reviewer");
        assert_eq!(
            profile.tools,
            ToolSelection::Named(vec![
                "read".into(),
                "grep".into(),
                "multi_edit".into(),
                "mcp__gh__*".into()
            ])
        );
        assert_eq!(profile.model.as_deref(), Some("small-model"));
        assert_eq!(profile.temperature, Some(0.2));
        assert_eq!(profile.top_p, Some(0.9));
        assert_eq!(
            profile.provider_options.unwrap()["thinking"]["budget_tokens"],
            2048
        );
        assert_eq!(profile.narrowing.mode, Some(PermissionMode::Plan));
        assert_eq!(profile.narrowing.deny.len(), 2);
        assert_eq!(profile.narrowing.deny[0].to_string(), "bash(rm:*)");
        assert_eq!(profile.max_turns, Some(12));
        assert_eq!(profile.completion, Completion::Required);
        assert_eq!(profile.prompt, "You review.");
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("color"), "{warnings:?}");
    }

    #[test]
    fn defaults_come_from_the_file() {
        let (profile, warnings) = parse_ok("---\ntools: [read, glob]\n---\nLook around.");
        assert_eq!(profile.name, "reviewer");
        assert!(profile.description.contains("reviewer"));
        assert!(warnings.is_empty());
        assert!(profile.is_read_only());
        let (all, _) = parse_ok("---\n---\nbody");
        assert_eq!(all.tools, ToolSelection::All);
        assert_eq!(all.skills, None, "every skill");
        let (some, _) = parse_ok("---\nskills: pdf, release-notes\n---\nbody");
        assert_eq!(
            some.skills.as_deref(),
            Some(&["pdf".to_string(), "release-notes".to_string()][..])
        );
        let (none, _) = parse_ok("---\nskills: []\n---\nbody");
        assert_eq!(none.skills.as_deref(), Some(&[][..]));
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let err = |text: &str| parse(Path::new("/a/x.md"), text).unwrap_err();
        assert!(err("no front matter").contains("front matter"));
        assert!(err("---\nname: [unclosed\n---\n").contains("YAML"));
        assert!(err("---\nallowed_tools: bash\n---\n").contains("only narrow"));
        assert!(err("---\nname: Bad Name\n---\n").contains("lowercase"));
        assert!(err("---\npermission_mode: yolo\n---\n").contains("yolo"));
        assert!(err("---\ntemperature: 7\n---\n").contains("temperature"));
        assert!(err("---\nmax_turns: many\n---\n").contains("max_turns"));
    }

    #[test]
    fn claude_code_tool_names_convert() {
        for (theirs, ours) in [
            ("Read", "read"),
            ("MultiEdit", "multi_edit"),
            ("WebFetch", "web_fetch"),
            ("TodoWrite", "todo_write"),
            ("LS", "ls"),
            ("BashOutput", "bash_output"),
            ("KillBash", "kill_shell"),
            ("KillShell", "kill_shell"),
            ("Task", "task"),
            ("bash_output", "bash_output"),
            ("mcp__github__CreateIssue", "mcp__github__CreateIssue"),
        ] {
            assert_eq!(gyre_tool_name(theirs), ours);
        }
    }

    #[test]
    fn directories_load_in_order_and_bad_files_warn() {
        let user = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(user.path().join("a.md"), "---\ndescription: user's\n---\nU").unwrap();
        std::fs::write(user.path().join("broken.md"), "nothing").unwrap();
        std::fs::write(user.path().join("notes.txt"), "ignored").unwrap();
        std::fs::write(
            project.path().join("a.md"),
            "---\ndescription: project's\n---\nP",
        )
        .unwrap();
        let loaded = load_dirs(&[
            user.path().to_path_buf(),
            project.path().join("missing"),
            project.path().to_path_buf(),
        ]);
        let descriptions: Vec<&str> = loaded
            .profiles
            .iter()
            .map(|p| p.description.as_str())
            .collect();
        assert_eq!(descriptions, ["user's", "project's"]);
        assert_eq!(loaded.warnings.len(), 1);
        assert!(loaded.warnings[0].contains("broken.md"));
        let catalog = super::super::AgentCatalog::new(loaded.profiles);
        assert_eq!(catalog.get("a").unwrap().description, "project's");
    }
}
