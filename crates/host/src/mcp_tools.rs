//! MCP servers for a session: which are configured (`--mcp-config`,
//! `[mcp_servers.NAME]` in the config files, `mcpServers` in the
//! workspace's `.mcp.json`; only the first with `--strict-mcp-config`), and
//! their start in the background.
//!
//! Invariants:
//! - On a name clash a `--mcp-config` entry wins, then the config.toml
//!   entry (the user's own file over one written for any agent); the
//!   `.mcp.json` entry is left out.
//! - A config.toml entry that makes no sense (neither or both of `command`
//!   and `url`, a timeout that is not a positive number of seconds) is a
//!   usage error naming the file and the server, as any bad config key.
//!   A `.mcp.json` that does not parse stops a run only in `gyre mcp
//!   list`; a run says so on stderr and goes on without its servers (the
//!   file may be another agent's).
//! - [`start`] returns at once; servers start on the current runtime.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use gyre_mcp::{HttpServer, McpConfig, ServerConfig, ServerEntry, StdioServer, Timeouts};
use gyre_tools::LateTools;

use crate::config::{Config, McpServerSection};
use crate::exit::Exit;
use crate::flags::Flags;
use crate::prompt_tool::PromptTool;

/// Starts the enabled servers of `servers` in the background; their tools
/// join the returned set as each is ready. `None` when none is enabled.
pub fn start(servers: &[ServerEntry]) -> Option<Arc<LateTools>> {
    if !servers.iter().any(|s| s.enabled) {
        return None;
    }
    let late = LateTools::new();
    gyre_mcp::start_in_background(servers.to_vec(), &late);
    Some(late)
}

/// The servers of a run: `--mcp-config`'s (`flagged`), then config.toml's
/// and `.mcp.json`'s (none of those with `strict`, as
/// `--strict-mcp-config`). Err: a bad config.toml entry.
pub fn for_run(
    config: &Config,
    workspace: &Path,
    flagged: Vec<ServerEntry>,
    strict: bool,
) -> Result<Vec<ServerEntry>, String> {
    if strict {
        return Ok(flagged);
    }
    let from_json = from_mcp_json(workspace).unwrap_or_else(|problem| {
        eprintln!("gyre: warning: {problem}; its MCP servers are not started");
        Vec::new()
    });
    Ok(merge(
        flagged,
        merge(from_config(config, workspace)?, from_json),
    ))
}

/// The MCP side of a run's flags, resolved ([`run_servers`]).
#[derive(Debug)]
pub struct RunServers {
    /// The servers whose tools the run offers.
    pub servers: Vec<ServerEntry>,
    /// `--permission-prompt-tool mcp__SERVER__TOOL` (its server is asked,
    /// never offered to the model, so it is not in `servers`).
    pub prompt: Option<PromptTool>,
    /// `--permission-prompt-tool stdio`: the Agent SDK answers.
    pub stdio_prompt: bool,
    /// The Agent SDK's in-process servers of `--mcp-config`.
    pub sdk: Vec<String>,
}

/// Where `--permission-prompt-tool` looks for its server, in errors.
const PROMPT_TOOL_SOURCES: &str = "--mcp-config, [mcp_servers] or .mcp.json";

/// The servers of a run ([`for_run`] over `--mcp-config`) and its
/// permission-prompt tool, which may name a tool of any of them.
/// `--permission-prompts none` leaves the prompt tool out: nobody is asked.
pub fn run_servers(config: &Config, workspace: &Path, args: &Flags) -> Result<RunServers, Exit> {
    let (flagged, sdk) = crate::claude_compat::mcp_configs(&args.mcp_config, workspace)?;
    let mut servers =
        for_run(config, workspace, flagged, args.strict_mcp_config).map_err(Exit::usage)?;
    let nobody = args.permission_prompts.as_deref() == Some("none");
    let name = args.permission_prompt_tool.as_deref().filter(|_| !nobody);
    let stdio_prompt = name == Some(crate::claude_compat::STDIO_PROMPT_TOOL);
    let prompt = match name {
        None => None,
        Some(_) if stdio_prompt => None,
        Some(name) => Some(
            PromptTool::among_entries(name, &servers, PROMPT_TOOL_SOURCES).map_err(Exit::usage)?,
        ),
    };
    if let Some(prompt) = &prompt {
        servers.retain(|s| s.name != prompt.server);
    }
    Ok(RunServers {
        servers,
        prompt,
        stdio_prompt,
        sdk,
    })
}

/// Every configured server, for `gyre mcp list`. Err: a bad file.
pub fn all(config: &Config, workspace: &Path) -> Result<Vec<ServerEntry>, String> {
    Ok(merge(
        from_config(config, workspace)?,
        from_mcp_json(workspace)?,
    ))
}

/// config.toml's servers first (by name), then `.mcp.json`'s whose names
/// config.toml does not use.
fn merge(mut from_config: Vec<ServerEntry>, from_json: Vec<ServerEntry>) -> Vec<ServerEntry> {
    for entry in from_json {
        if !from_config.iter().any(|s| s.name == entry.name) {
            from_config.push(entry);
        }
    }
    from_config
}

/// The workspace's `.mcp.json` servers, with the default timeouts.
fn from_mcp_json(workspace: &Path) -> Result<Vec<ServerEntry>, String> {
    let mcp = McpConfig::load(workspace).map_err(|e| e.to_string())?;
    let source = workspace.join(gyre_mcp::config::FILE_NAME);
    Ok(entries(mcp, workspace, &source.display().to_string()))
}

/// The servers of one `.mcp.json`-shaped configuration read from `source`,
/// with the default timeouts, sorted by name; a relative working directory
/// of a command is the workspace's.
pub(crate) fn entries(mcp: McpConfig, workspace: &Path, source: &str) -> Vec<ServerEntry> {
    let entry = |name: String, config: Result<ServerConfig, String>| ServerEntry {
        name,
        config,
        timeouts: Timeouts::default(),
        source: source.to_string(),
        enabled: true,
    };
    let mut entries: Vec<ServerEntry> = mcp
        .servers
        .into_iter()
        .map(|(name, mut config)| {
            if let ServerConfig::Stdio(stdio) = &mut config {
                stdio.cwd = Some(match stdio.cwd.take() {
                    Some(dir) => workspace.join(dir),
                    None => workspace.to_path_buf(),
                });
            }
            entry(name, Ok(config))
        })
        .collect();
    entries.extend(
        mcp.broken
            .into_iter()
            .map(|(name, why)| entry(name, Err(why))),
    );
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries
}

/// The `[mcp_servers.NAME]` entries of the config files.
fn from_config(config: &Config, workspace: &Path) -> Result<Vec<ServerEntry>, String> {
    config
        .mcp_servers
        .iter()
        .map(|(name, section)| entry_of(name, section, workspace))
        .collect()
}

fn entry_of(
    name: &str,
    section: &McpServerSection,
    workspace: &Path,
) -> Result<ServerEntry, String> {
    let problem = |what: &str| {
        format!(
            "invalid config file {}: [mcp_servers.{name}] {what}; fix or remove it",
            section.source.display()
        )
    };
    let config = match (&section.command, &section.url) {
        (Some(command), None) => ServerConfig::Stdio(StdioServer {
            command: command.clone(),
            args: section.args.clone(),
            env: section.env.clone(),
            cwd: Some(match &section.cwd {
                Some(dir) => workspace.join(dir),
                None => workspace.to_path_buf(),
            }),
        }),
        (None, Some(url)) => ServerConfig::Http(HttpServer {
            url: url.clone(),
            headers: section.http_headers.clone(),
            env_headers: section.env_http_headers.clone(),
            bearer_token_env_var: section.bearer_token_env_var.clone(),
        }),
        (Some(_), Some(_)) => return Err(problem("has both `command` and `url`; keep one")),
        (None, None) => return Err(problem("has neither `command` nor `url`")),
    };
    let seconds = |key: &str, value: Option<f64>, default: Duration| match value {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(problem(&format!(
            "{key} = {s} is not a positive number of seconds"
        ))),
    };
    let defaults = Timeouts::default();
    Ok(ServerEntry {
        name: name.to_string(),
        config: Ok(config),
        timeouts: Timeouts {
            start: seconds(
                "startup_timeout_sec",
                section.startup_timeout_sec,
                defaults.start,
            )?,
            call: seconds("tool_timeout_sec", section.tool_timeout_sec, defaults.call)?,
        },
        source: section.source.display().to_string(),
        enabled: section.enabled.unwrap_or(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        let mut config = Config::parse(text, Path::new("/u/config.toml")).unwrap();
        for server in config.mcp_servers.values_mut() {
            server.source = "/u/config.toml".into();
        }
        config
    }

    #[test]
    fn config_toml_servers_take_codex_keys_and_win_a_clash() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(
            workspace.path().join(".mcp.json"),
            r#"{"mcpServers": {"docs": {"command": "json-docs"}, "other": {"url": "http://127.0.0.1:1/mcp"}}}"#,
        )
        .unwrap();
        let config = config(
            "[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\", \"docs\"]\nenv = { K = \"v\" }\n\
             startup_timeout_sec = 2.5\ntool_timeout_sec = 90\n\
             [mcp_servers.web]\nurl = \"https://example.com/mcp\"\nbearer_token_env_var = \"TOK\"\n\
             http_headers = { \"X-Region\" = \"eu\" }\nenabled = false\n",
        );
        let servers = all(&config, workspace.path()).unwrap();
        let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["docs", "web", "other"]);
        let Ok(ServerConfig::Stdio(docs)) = &servers[0].config else {
            panic!("{servers:?}")
        };
        assert_eq!(docs.command, "npx");
        assert_eq!(docs.cwd.as_deref(), Some(workspace.path()));
        assert_eq!(servers[0].timeouts.start, Duration::from_millis(2500));
        assert_eq!(servers[0].timeouts.call, Duration::from_secs(90));
        assert_eq!(servers[0].source, "/u/config.toml");
        let Ok(ServerConfig::Http(web)) = &servers[1].config else {
            panic!("{servers:?}")
        };
        assert_eq!(web.bearer_token_env_var.as_deref(), Some("TOK"));
        assert_eq!(web.headers["X-Region"], "eu");
        assert!(!servers[1].enabled);
        assert!(servers[2].source.ends_with(".mcp.json"));
        assert_eq!(servers[2].timeouts, Timeouts::default());

        // `--strict-mcp-config`: only the flagged servers.
        assert!(
            for_run(&config, workspace.path(), Vec::new(), true)
                .unwrap()
                .is_empty()
        );
        // A `--mcp-config` server wins over a configured one of its name.
        let flagged = ServerEntry {
            source: "--mcp-config (JSON)".into(),
            ..servers[2].clone()
        };
        let run = for_run(&config, workspace.path(), vec![flagged], false).unwrap();
        assert_eq!(run.len(), 3);
        assert_eq!(run[0].name, "other");
        assert_eq!(run[0].source, "--mcp-config (JSON)");
    }

    #[test]
    fn bad_entries_are_named() {
        let workspace = tempfile::tempdir().unwrap();
        for (text, needle) in [
            (
                "[mcp_servers.x]\nargs = []\n",
                "[mcp_servers.x] has neither `command` nor `url`",
            ),
            (
                "[mcp_servers.x]\ncommand = \"a\"\nurl = \"b\"\n",
                "has both `command` and `url`",
            ),
            (
                "[mcp_servers.x]\ncommand = \"a\"\nstartup_timeout_sec = 0\n",
                "startup_timeout_sec = 0 is not a positive number of seconds",
            ),
        ] {
            let err = all(&config(text), workspace.path()).unwrap_err();
            assert!(
                err.starts_with("invalid config file /u/config.toml: "),
                "{err}"
            );
            assert!(err.contains(needle), "{err}");
        }
        let err = Config::parse("[mcp_servers.x]\ncomand = \"a\"\n", Path::new("c")).unwrap_err();
        assert!(err.0.contains("comand"), "{}", err.0);
        std::fs::write(workspace.path().join(".mcp.json"), "{oops").unwrap();
        assert!(all(&Config::default(), workspace.path()).is_err());
        // A run goes on without them.
        assert!(
            for_run(&Config::default(), workspace.path(), Vec::new(), false)
                .unwrap()
                .is_empty()
        );
    }
}
