//! `.mcp.json`: the MCP servers of a project, as Claude Code and Cursor
//! write them.
//!
//! ```json
//! {"mcpServers": {"perm": {"command": "python3", "args": ["server.py"], "env": {"K": "v"}}}}
//! ```
//!
//! Invariants and trade-offs:
//! - A file that does not parse is an error naming the file; a server whose
//!   entry does not make sense (neither `command` nor `url`) is an error
//!   naming the server, so a typo is said at once rather than when the
//!   server is first needed.
//! - HTTP servers (`"type": "http"` or `"sse"`, or a `url`) are read, so
//!   that a file written for another agent loads, but are
//!   [`ServerConfig::Http`]: gyre cannot start them yet and says so when one
//!   is used.
//! - Unknown fields are ignored (other agents add their own). Servers are
//!   kept sorted by name, so anything listing them is stable whatever the
//!   file's order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The file name, at the workspace's root.
pub const FILE_NAME: &str = ".mcp.json";

/// A server that gyre starts as a child process and talks to over stdio.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StdioServer {
    pub command: String,
    pub args: Vec<String>,
    /// Added to gyre's own environment.
    pub env: BTreeMap<String, String>,
    /// The working directory (default: gyre's).
    pub cwd: Option<PathBuf>,
}

/// One entry of `mcpServers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerConfig {
    Stdio(StdioServer),
    /// A streamable-HTTP (or SSE) server: read, not yet supported.
    Http {
        url: String,
    },
}

/// The servers of one `.mcp.json`, by name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct McpConfig {
    pub servers: BTreeMap<String, ServerConfig>,
}

/// Why a `.mcp.json` could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a valid .mcp.json: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: MCP server `{server}` has neither a `command` nor a `url`")]
    Incomplete { path: PathBuf, server: String },
}

#[derive(Deserialize)]
struct File {
    #[serde(default, rename = "mcpServers")]
    mcp_servers: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
}

impl McpConfig {
    /// The workspace's `.mcp.json`; no file is no servers.
    pub fn load(workspace: &Path) -> Result<Self, ConfigError> {
        let path = workspace.join(FILE_NAME);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        let mut config = Self::parse(&text, &path)?;
        // Relative working directories are the workspace's, as the file's
        // other paths are for the agents that write it.
        for server in config.servers.values_mut() {
            if let ServerConfig::Stdio(stdio) = server {
                stdio.cwd = Some(match stdio.cwd.take() {
                    Some(dir) => workspace.join(dir),
                    None => workspace.to_path_buf(),
                });
            }
        }
        Ok(config)
    }

    /// `text` as a `.mcp.json`; `path` only names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let file: File = serde_json::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let mut servers = BTreeMap::new();
        for (name, entry) in file.mcp_servers {
            let http = matches!(
                entry.kind.as_deref(),
                Some("http" | "sse" | "streamable-http")
            );
            let server = match (entry.command, entry.url) {
                (Some(command), _) if !http => ServerConfig::Stdio(StdioServer {
                    command,
                    args: entry.args,
                    env: entry.env,
                    cwd: entry.cwd,
                }),
                (_, Some(url)) => ServerConfig::Http { url },
                _ => {
                    return Err(ConfigError::Incomplete {
                        path: path.to_path_buf(),
                        server: name,
                    });
                }
            };
            servers.insert(name, server);
        }
        Ok(Self { servers })
    }

    pub fn get(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.get(name)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn parse(text: &str) -> Result<McpConfig, ConfigError> {
        McpConfig::parse(text, Path::new(".mcp.json"))
    }

    #[test]
    fn reads_stdio_servers_as_claude_code_writes_them() {
        let config = parse(
            r#"{"mcpServers": {
                "perm": {"command": "python3", "args": ["s.py", "-v"], "env": {"K": "v"}},
                "bare": {"type": "stdio", "command": "srv"}
            }}"#,
        )
        .unwrap();
        assert_eq!(
            config.get("perm"),
            Some(&ServerConfig::Stdio(StdioServer {
                command: "python3".into(),
                args: vec!["s.py".into(), "-v".into()],
                env: BTreeMap::from([("K".into(), "v".into())]),
                cwd: None,
            }))
        );
        assert!(matches!(config.get("bare"), Some(ServerConfig::Stdio(s)) if s.args.is_empty()));
    }

    #[test]
    fn http_servers_are_read_but_kept_apart() {
        let config = parse(
            r#"{"mcpServers": {
                "a": {"type": "http", "url": "https://example.com/mcp"},
                "b": {"url": "https://example.com/sse"}
            }}"#,
        )
        .unwrap();
        assert_eq!(
            config.get("a"),
            Some(&ServerConfig::Http {
                url: "https://example.com/mcp".into()
            })
        );
        assert!(matches!(config.get("b"), Some(ServerConfig::Http { .. })));
    }

    #[test]
    fn unknown_fields_and_a_missing_section_are_fine() {
        let config = parse(r#"{"other": 1}"#).unwrap();
        assert!(config.servers.is_empty());
        let config = parse(r#"{"mcpServers": {"x": {"command": "c", "disabled": false}}}"#);
        assert!(config.unwrap().get("x").is_some());
    }

    #[test]
    fn bad_files_and_entries_are_named() {
        let err = parse("{not json").unwrap_err().to_string();
        assert!(
            err.starts_with(".mcp.json is not a valid .mcp.json"),
            "{err}"
        );
        let err = parse(r#"{"mcpServers": {"x": {"args": []}}}"#)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            ".mcp.json: MCP server `x` has neither a `command` nor a `url`"
        );
    }

    #[test]
    fn load_finds_the_workspace_file_and_runs_servers_there() {
        let dir = tempfile::tempdir().unwrap();
        assert!(McpConfig::load(dir.path()).unwrap().servers.is_empty());
        std::fs::write(
            dir.path().join(FILE_NAME),
            r#"{"mcpServers": {"a": {"command": "c"}, "b": {"command": "c", "cwd": "sub"}}}"#,
        )
        .unwrap();
        let config = McpConfig::load(dir.path()).unwrap();
        let cwd = |name: &str| match config.get(name) {
            Some(ServerConfig::Stdio(s)) => s.cwd.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(cwd("a"), Some(dir.path().to_path_buf()));
        assert_eq!(cwd("b"), Some(dir.path().join("sub")));
    }
}
