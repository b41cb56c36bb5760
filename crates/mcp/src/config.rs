//! `.mcp.json`: the MCP servers of a project, as Claude Code and Cursor
//! write them.
//!
//! ```json
//! {"mcpServers": {
//!   "perm": {"command": "python3", "args": ["server.py"], "env": {"K": "${HOME}/k"}},
//!   "docs": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
//! }}
//! ```
//!
//! Invariants and trade-offs:
//! - A file that does not parse is an error naming the file; a server whose
//!   entry does not make sense (neither `command` nor `url`) is an error
//!   naming the server, so a typo is said at once rather than when the
//!   server is first needed.
//! - `${VAR}` and `${VAR:-default}` are expanded in `command`, `args`,
//!   `env`, `url` and `headers`, as Claude Code does. A variable that is
//!   not set and has no default makes that one server unusable
//!   ([`McpConfig::broken`], saying which variable), not the whole file.
//! - `"type": "http"`, or a `url` without a type, is a streamable-HTTP
//!   server; `"type": "sse"` (the transport MCP deprecated) is read, so
//!   that a file written for another agent loads, but is
//!   [`ServerConfig::Sse`]: gyre says it cannot use it when it is started.
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

/// A server gyre reaches over streamable HTTP.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpServer {
    pub url: String,
    /// Sent with every request.
    pub headers: BTreeMap<String, String>,
    /// Headers whose values are read from environment variables when the
    /// server is started: header name → variable name.
    pub env_headers: BTreeMap<String, String>,
    /// The variable holding a bearer token, sent as `Authorization: Bearer
    /// TOKEN` (read when the server is started).
    pub bearer_token_env_var: Option<String>,
}

/// How to reach one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerConfig {
    Stdio(StdioServer),
    Http(HttpServer),
    /// A server of MCP's deprecated HTTP+SSE transport: read, not
    /// supported.
    Sse {
        url: String,
    },
}

impl ServerConfig {
    /// `stdio`, `http` or `sse`.
    pub fn transport(&self) -> &'static str {
        match self {
            ServerConfig::Stdio(_) => "stdio",
            ServerConfig::Http(_) => "http",
            ServerConfig::Sse { .. } => "sse",
        }
    }

    /// The command line or the URL, for people.
    pub fn target(&self) -> String {
        match self {
            ServerConfig::Stdio(server) => shown_command(server),
            ServerConfig::Http(server) => server.url.clone(),
            ServerConfig::Sse { url } => url.clone(),
        }
    }
}

/// The command line as a person would type it, for messages.
pub(crate) fn shown_command(server: &StdioServer) -> String {
    std::iter::once(&server.command)
        .chain(&server.args)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The servers of one `.mcp.json`, by name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct McpConfig {
    pub servers: BTreeMap<String, ServerConfig>,
    /// Servers that cannot be used as written, by name: one sentence why
    /// (a variable their entry needs is not set).
    pub broken: BTreeMap<String, String>,
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
    #[serde(default)]
    headers: BTreeMap<String, String>,
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

    /// `text` as a `.mcp.json`, variables taken from the environment;
    /// `path` only names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        Self::parse_with(text, path, &|name| std::env::var(name).ok())
    }

    /// [`McpConfig::parse`] with `env` giving the variables.
    pub fn parse_with(
        text: &str,
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let file: File = serde_json::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let mut config = Self::default();
        for (name, entry) in file.mcp_servers {
            let kind = entry.kind.as_deref();
            let over_http = matches!(kind, Some("http" | "sse" | "streamable-http"));
            let server = match (entry.command, entry.url) {
                (Some(command), _) if !over_http => ServerConfig::Stdio(StdioServer {
                    command,
                    args: entry.args,
                    env: entry.env,
                    cwd: entry.cwd,
                }),
                (_, Some(url)) if kind == Some("sse") => ServerConfig::Sse { url },
                (_, Some(url)) => ServerConfig::Http(HttpServer {
                    url,
                    headers: entry.headers,
                    ..HttpServer::default()
                }),
                _ => {
                    return Err(ConfigError::Incomplete {
                        path: path.to_path_buf(),
                        server: name,
                    });
                }
            };
            match expand_server(server, env) {
                Ok(server) => {
                    config.servers.insert(name, server);
                }
                Err(missing) => {
                    let why = format!(
                        "MCP server `{name}` in {} needs the environment variable {missing}, which is not set; set it or give a default with ${{{missing}:-default}}",
                        path.display()
                    );
                    config.broken.insert(name, why);
                }
            }
        }
        Ok(config)
    }

    pub fn get(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.get(name)
    }
}

/// `server` with its variables expanded; Err: the first variable that is
/// not set and has no default.
fn expand_server(
    server: ServerConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, String> {
    let one = |text: String| expand(&text, env);
    let map = |values: BTreeMap<String, String>| -> Result<BTreeMap<String, String>, String> {
        values
            .into_iter()
            .map(|(key, value)| Ok((key, expand(&value, env)?)))
            .collect()
    };
    Ok(match server {
        ServerConfig::Stdio(s) => ServerConfig::Stdio(StdioServer {
            command: one(s.command)?,
            args: s.args.into_iter().map(one).collect::<Result<_, _>>()?,
            env: map(s.env)?,
            cwd: s.cwd,
        }),
        ServerConfig::Http(h) => ServerConfig::Http(HttpServer {
            url: one(h.url)?,
            headers: map(h.headers)?,
            ..h
        }),
        ServerConfig::Sse { url } => ServerConfig::Sse { url: one(url)? },
    })
}

/// `text` with `${VAR}` and `${VAR:-default}` replaced. Anything else,
/// `$VAR` and an unclosed `${` included, stays as written.
pub fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (env(name), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(name.to_string()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {

    use super::*;

    fn parse(text: &str) -> Result<McpConfig, ConfigError> {
        McpConfig::parse_with(text, Path::new(".mcp.json"), &|name| match name {
            "HOME" => Some("/home/u".into()),
            "TOKEN" => Some("t0k".into()),
            _ => None,
        })
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
    fn http_servers_with_headers_and_sse_servers_apart() {
        let config = parse(
            r#"{"mcpServers": {
                "a": {"type": "http", "url": "https://example.com/mcp", "headers": {"X-Key": "k"}},
                "b": {"url": "https://example.com/mcp2"},
                "c": {"type": "sse", "url": "https://example.com/sse"}
            }}"#,
        )
        .unwrap();
        assert_eq!(
            config.get("a"),
            Some(&ServerConfig::Http(HttpServer {
                url: "https://example.com/mcp".into(),
                headers: BTreeMap::from([("X-Key".into(), "k".into())]),
                ..HttpServer::default()
            }))
        );
        assert!(matches!(config.get("b"), Some(ServerConfig::Http(h)) if h.url.ends_with("mcp2")));
        assert_eq!(
            config.get("c"),
            Some(&ServerConfig::Sse {
                url: "https://example.com/sse".into()
            })
        );
        assert_eq!(config.get("c").unwrap().transport(), "sse");
    }

    #[test]
    fn variables_are_expanded_as_claude_code_does() {
        let config = parse(
            r#"{"mcpServers": {
                "s": {"command": "${HOME}/bin/srv", "args": ["--x=${UNSET:-def}", "$HOME", "${"], "env": {"T": "${TOKEN}"}},
                "h": {"url": "https://${UNSET:-example.com}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
                "bad": {"command": "srv", "args": ["${NOT_SET_HERE}"]}
            }}"#,
        )
        .unwrap();
        let Some(ServerConfig::Stdio(s)) = config.get("s") else {
            panic!("{config:?}")
        };
        assert_eq!(s.command, "/home/u/bin/srv");
        assert_eq!(s.args, ["--x=def", "$HOME", "${"]);
        assert_eq!(s.env["T"], "t0k");
        let Some(ServerConfig::Http(h)) = config.get("h") else {
            panic!("{config:?}")
        };
        assert_eq!(h.url, "https://example.com/mcp");
        assert_eq!(h.headers["Authorization"], "Bearer t0k");
        assert!(config.get("bad").is_none());
        assert_eq!(
            config.broken["bad"],
            "MCP server `bad` in .mcp.json needs the environment variable NOT_SET_HERE, which is not set; set it or give a default with ${NOT_SET_HERE:-default}"
        );
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
