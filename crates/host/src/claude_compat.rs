//! Claude Code's flags that have no gyre spelling of their own, resolved
//! for [`crate::Settings::resolve`]: `--settings` (its `permissions` and
//! `model`), `--setting-sources`, `--mcp-config`, `--system-prompt[-file]`,
//! its permission-mode names, and the notes a run says once on stderr for
//! what it accepts without honouring (README "Coming from Claude Code").
//!
//! Invariants: a value that cannot be used (a file that does not exist, JSON
//! that does not parse, an unknown setting source) is bad usage, one line
//! naming the flag; a flag whose feature gyre lacks is never an error, only
//! a note. Trade-off: of Claude Code's settings only what maps onto gyre's
//! own (permission rules and mode, extra directories, the model) is read;
//! every other key is named in one note rather than silently dropped.

use std::path::{Path, PathBuf};

use gyre_core::Permissions;
use gyre_core::permissions::gyre_tool_name;
use gyre_mcp::{McpConfig, ServerEntry};
use gyre_tools::Registry;
use serde::Deserialize;

use crate::exit::Exit;
use crate::flags::Flags;

/// `--permission-prompt-tool stdio`: the Agent SDK answers.
pub const STDIO_PROMPT_TOOL: &str = "stdio";

/// Tools of a run that are not in the built-in registry.
const AGENT_TOOLS: [&str; 3] = ["task", "task_output", "attempt_completion"];

/// `--tools`: `None` (not given, or `default`) offers every built-in tool;
/// `""` none; else the names listed (Claude Code's or gyre's), by gyre's
/// names. A name of no built-in tool is a warning.
pub fn builtin_tools(list: Option<&str>, warnings: &mut Vec<String>) -> Option<Vec<String>> {
    let list = list?;
    if list.trim() == "default" {
        return None;
    }
    let builtin = Registry::builtin().names();
    let mut keep = Vec::new();
    for name in list
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
    {
        let gyre = gyre_tool_name(name).to_ascii_lowercase();
        if builtin.contains(&gyre)
            || AGENT_TOOLS.contains(&gyre.as_str())
            || gyre == gyre_core::WEB_SEARCH_TOOL
        {
            keep.push(gyre);
        } else {
            warnings.push(format!(
                "--tools: `{name}` is no built-in tool of gyre; left out"
            ));
        }
    }
    Some(keep)
}

/// One warning per rule that names no tool of the run: no built-in tool
/// (of `builtin`, `None`: all), no agent tool, no configured MCP server
/// (`servers`). A rule copied from another agent must not quietly protect
/// nothing.
pub fn unmatched_rules(
    permissions: &Permissions,
    builtin: Option<&[String]>,
    servers: &[&str],
) -> Vec<String> {
    let all = Registry::builtin().names();
    let mut tools: Vec<String> = match builtin {
        Some(keep) => keep.to_vec(),
        None => {
            let mut all = all;
            all.push(gyre_core::WEB_SEARCH_TOOL.to_string());
            all
        }
    };
    tools.extend(AGENT_TOOLS.iter().map(|s| s.to_string()));
    let mut warnings = Vec::new();
    for (kind, rules) in [
        ("allow", &permissions.allow),
        ("deny", &permissions.deny),
        ("ask", &permissions.ask),
    ] {
        for rule in rules.iter() {
            let tool = rule.tool.to_ascii_lowercase();
            let named = match tool.strip_prefix("mcp__") {
                // An MCP tool's name is known once its server runs: the
                // server must be configured.
                Some(rest) => {
                    let server = rest.split("__").next().unwrap_or_default();
                    server.is_empty()
                        || server.ends_with('*')
                        || servers.iter().any(|s| s.eq_ignore_ascii_case(server))
                }
                None if tool.ends_with('*') => true,
                None => tools.iter().any(|name| rule.names_tool(name)),
            };
            if !named {
                warnings.push(format!(
                    "the {kind} rule `{rule}` names no tool of this run; it matches nothing"
                ));
            }
        }
    }
    warnings
}

/// Which config files a run reads (`--setting-sources`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sources {
    /// `~/.config/gyre/config.toml`.
    pub user: bool,
    /// `.gyre/config.toml`.
    pub project: bool,
    /// `.gyre/config.local.toml`.
    pub local: bool,
}

impl Default for Sources {
    fn default() -> Self {
        Sources {
            user: true,
            project: true,
            local: true,
        }
    }
}

/// `--setting-sources user,project,local` (any subset, `""` none).
pub fn sources(list: Option<&str>) -> Result<Sources, Exit> {
    let Some(list) = list else {
        return Ok(Sources::default());
    };
    let mut sources = Sources {
        user: false,
        project: false,
        local: false,
    };
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match name {
            "user" => sources.user = true,
            "project" => sources.project = true,
            "local" => sources.local = true,
            other => {
                return Err(Exit::usage(format!(
                    "--setting-sources: unknown source `{other}`; use user, project and/or local"
                )));
            }
        }
    }
    Ok(sources)
}

/// What gyre reads of Claude Code's settings (`--settings FILE|JSON`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaudeSettings {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    pub ask: Vec<String>,
    pub default_mode: Option<String>,
    pub additional_directories: Vec<PathBuf>,
    pub model: Option<String>,
    /// The keys gyre does not read, for the note.
    pub ignored: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SettingsFile {
    #[serde(default)]
    permissions: PermissionsSection,
    model: Option<String>,
    #[serde(flatten)]
    rest: serde_json::Map<String, serde_json::Value>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PermissionsSection {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    default_mode: Option<String>,
    #[serde(default)]
    additional_directories: Vec<PathBuf>,
}

/// `--settings`: a JSON object, or a file holding one.
pub fn claude_settings(value: &str) -> Result<ClaudeSettings, Exit> {
    let (text, source) = file_or_json(value, "--settings")?;
    let file: SettingsFile = serde_json::from_str(&text).map_err(|e| {
        Exit::usage(format!(
            "--settings {source}: not Claude Code settings: {e}"
        ))
    })?;
    Ok(ClaudeSettings {
        allow: file.permissions.allow,
        deny: file.permissions.deny,
        ask: file.permissions.ask,
        default_mode: file.permissions.default_mode,
        additional_directories: file.permissions.additional_directories,
        model: file.model,
        ignored: file.rest.keys().cloned().collect(),
    })
}

/// A flag's value that is JSON (it starts with `{`) or names a file
/// holding it: the text, and how to name it in errors.
fn file_or_json(value: &str, flag: &str) -> Result<(String, String), Exit> {
    if value.trim_start().starts_with('{') {
        return Ok((value.to_string(), "(JSON)".to_string()));
    }
    let text = std::fs::read_to_string(value)
        .map_err(|e| Exit::usage(format!("{flag} {value}: cannot read it: {e}")))?;
    Ok((text, value.to_string()))
}

/// gyre's name of a permission mode given in Claude Code's spelling, and
/// a note when the mode is gyre's nearest rather than the same.
pub fn permission_mode(name: &str) -> (&str, Option<String>) {
    match name {
        // Headless, nothing is asked: what is not allowed is refused.
        "dontAsk" | "manual" => ("default", None),
        "auto" => (
            "default",
            Some(
                "--permission-mode auto (a classifier deciding) is not honoured: \
                 gyre runs the default mode"
                    .to_string(),
            ),
        ),
        other => (other, None),
    }
}

/// The servers of the `--mcp-config` values, each `{"mcpServers": {…}}`
/// as in `.mcp.json` (a JSON string or a file), and the names of the Agent
/// SDK's in-process servers (`"type": "sdk"`), which its control protocol
/// serves rather than a process or a URL.
pub fn mcp_configs(
    values: &[String],
    workspace: &Path,
) -> Result<(Vec<ServerEntry>, Vec<String>), Exit> {
    let mut entries: Vec<ServerEntry> = Vec::new();
    let mut sdk = Vec::new();
    for value in values {
        let (text, source) = file_or_json(value, "--mcp-config")?;
        let mut json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| Exit::usage(format!("--mcp-config {source}: not JSON: {e}")))?;
        if let Some(servers) = json
            .get_mut("mcpServers")
            .and_then(serde_json::Value::as_object_mut)
        {
            let in_process: Vec<String> = servers
                .iter()
                .filter(|(_, s)| s.get("type").and_then(|t| t.as_str()) == Some("sdk"))
                .map(|(name, _)| name.clone())
                .collect();
            for name in in_process {
                servers.remove(&name);
                sdk.push(name);
            }
        }
        let label = format!("--mcp-config {source}");
        let mcp = McpConfig::parse(&json.to_string(), Path::new(&label))
            .map_err(|e| Exit::usage(e.to_string()))?;
        for entry in crate::mcp_tools::entries(mcp, workspace, &label) {
            // A later --mcp-config wins, as a later flag does.
            entries.retain(|e| e.name != entry.name);
            entries.push(entry);
        }
    }
    Ok((entries, sdk))
}

/// The system prompt's base layer of `--system-prompt[-file]`.
pub fn system_prompt(args: &Flags) -> Result<Option<String>, Exit> {
    if let Some(text) = &args.system_prompt {
        return Ok(Some(text.clone()));
    }
    args.system_prompt_file
        .as_deref()
        .map(|path| read_text(path, "--system-prompt-file"))
        .transpose()
}

/// `--append-system-prompt` and `--append-system-prompt-file`, in that
/// order (`None`: neither).
pub fn appended(args: &Flags) -> Result<Option<String>, Exit> {
    let file = args
        .append_system_prompt_file
        .as_deref()
        .map(|path| read_text(path, "--append-system-prompt-file"))
        .transpose()?;
    Ok(match (args.append_system_prompt.clone(), file) {
        (Some(text), Some(more)) => Some(format!("{text}\n\n{more}")),
        (text, more) => text.or(more),
    })
}

fn read_text(path: &Path, flag: &str) -> Result<String, Exit> {
    std::fs::read_to_string(path)
        .map_err(|e| Exit::usage(format!("{flag} {}: cannot read it: {e}", path.display())))
}

/// The notes of the flags a run accepts without honouring them.
pub fn notes(args: &Flags) -> Vec<String> {
    let mut notes: Vec<String> = args
        .unhonoured
        .iter()
        .map(|(flag, _)| format!("{flag} is accepted for Claude Code's sake but not honoured"))
        .collect();
    // Flags of the streaming input whose feature the session lacks yet.
    for (given, flag) in [
        (args.replay_user_messages, "--replay-user-messages"),
        (args.include_hook_events, "--include-hook-events"),
        (args.initialize_fields.is_some(), "--initialize-fields"),
    ] {
        if given {
            notes.push(format!(
                "{flag} is accepted for Claude Code's sake but not honoured"
            ));
        }
    }
    notes
}

/// The reasoning effort: `--effort`, else `--max-thinking-tokens` read as
/// the effort whose Anthropic budget is nearest above it (0: none), else
/// the config's `effort`.
pub fn effort(
    args: &Flags,
    configured: Option<gyre_llm::Effort>,
) -> Result<Option<gyre_llm::Effort>, Exit> {
    use gyre_llm::Effort;
    if let Some(given) = &args.effort {
        return given
            .parse::<Effort>()
            .map(Some)
            .map_err(|e| Exit::usage(format!("--effort: {e}")));
    }
    Ok(match args.max_thinking_tokens {
        Some(0) => None,
        Some(n) => Some(match n {
            ..=4_000 => Effort::Low,
            4_001..=10_000 => Effort::Medium,
            10_001..=20_000 => Effort::High,
            _ => Effort::Max,
        }),
        None => configured,
    })
}

/// `--json-schema SCHEMA|FILE` (`--output-schema`): the schema as JSON
/// text, else the file holding it.
pub fn output_schema(args: &Flags) -> Result<Option<gyre_core::OutputSchema>, Exit> {
    let Some(given) = args.json_schema.as_deref() else {
        return Ok(None);
    };
    let text = if given.trim_start().starts_with('{') {
        given.to_string()
    } else {
        read_text(Path::new(given), "--json-schema")?
    };
    let schema: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Exit::usage(format!("--json-schema: not JSON: {e}")))?;
    gyre_core::OutputSchema::new(schema)
        .map(Some)
        .map_err(|e| Exit::usage(format!("--json-schema: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_give_their_permissions_and_model_and_name_the_rest() {
        let settings = claude_settings(
            r#"{"permissions": {"allow": ["Bash(npm test:*)"], "deny": ["WebFetch"],
                "defaultMode": "acceptEdits"}, "model": "m", "sandbox": {"enabled": true}}"#,
        )
        .unwrap();
        assert_eq!(settings.allow, ["Bash(npm test:*)"]);
        assert_eq!(settings.deny, ["WebFetch"]);
        assert_eq!(settings.default_mode.as_deref(), Some("acceptEdits"));
        assert_eq!(settings.model.as_deref(), Some("m"));
        assert_eq!(settings.ignored, ["sandbox"]);
        let err = claude_settings("/no/such/settings.json").unwrap_err();
        assert_eq!(err.code, 2);
    }

    #[test]
    fn setting_sources_are_a_subset() {
        assert_eq!(sources(None).unwrap(), Sources::default());
        let only_user = sources(Some("user")).unwrap();
        assert!(only_user.user && !only_user.project && !only_user.local);
        assert_eq!(sources(Some("user,cloud")).unwrap_err().code, 2);
    }

    #[test]
    fn mcp_configs_keep_sdk_servers_apart() {
        let dir = tempfile::tempdir().unwrap();
        let (entries, sdk) = mcp_configs(
            &[r#"{"mcpServers": {"a": {"command": "srv"}, "calc": {"type": "sdk", "name": "calc"}}}"#
                .to_string()],
            dir.path(),
        )
        .unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].name, "a");
        assert_eq!(sdk, ["calc"]);
    }
}
