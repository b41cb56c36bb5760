//! MCP servers an editor passes for one session (ACP's `mcpServers` in
//! `session/new` and `session/load`), as plain data, started with the
//! workspace's own.
//!
//! Invariants:
//! - A session with editor servers gets a tool set of its own
//!   ([`LateTools`]): the workspace's configured servers and the editor's,
//!   started for that session and stopped when its agents are dropped. A
//!   session without them shares the workspace's set (nothing starts).
//! - Their tools are named as every MCP tool (`mcp__SERVER__TOOL`); on a
//!   name clash the editor's server replaces the workspace's (the editor
//!   is where the user chose it for this session).
//! - [`start`] returns at once; servers start in the background and each
//!   reports its state on the returned set (a failure never stops the
//!   session).
//!
//! Trade-off: the workspace's servers run once more for each session that
//! brings editor servers, rather than a tool set that merges a shared and
//! a private one (which `LateTools` does not do).

use std::collections::BTreeMap;
use std::sync::Arc;

use gyre_mcp::{HttpServer, ServerConfig, ServerEntry, StdioServer, Timeouts};
use gyre_tools::LateTools;

use crate::factory::AgentFactory;

/// Where editor servers are said to be configured (status messages).
const SOURCE: &str = "the editor (ACP session)";

/// One server the editor passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditorServer {
    Stdio {
        name: String,
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Http {
        name: String,
        url: String,
        headers: Vec<(String, String)>,
    },
}

impl EditorServer {
    pub fn name(&self) -> &str {
        match self {
            EditorServer::Stdio { name, .. } | EditorServer::Http { name, .. } => name,
        }
    }

    fn entry(&self) -> ServerEntry {
        let config = match self {
            EditorServer::Stdio {
                command, args, env, ..
            } => ServerConfig::Stdio(StdioServer {
                command: command.clone(),
                args: args.clone(),
                env: env.iter().cloned().collect::<BTreeMap<_, _>>(),
                cwd: None,
            }),
            EditorServer::Http { url, headers, .. } => ServerConfig::Http(HttpServer {
                url: url.clone(),
                headers: headers.iter().cloned().collect::<BTreeMap<_, _>>(),
                ..HttpServer::default()
            }),
        };
        ServerEntry {
            name: self.name().to_string(),
            config: Ok(config),
            timeouts: Timeouts::default(),
            source: SOURCE.to_string(),
            enabled: true,
        }
    }
}

/// Starts the workspace's servers of `factory` and the editor's `servers`
/// for one session; `None` when the editor passed none (the session uses
/// the workspace's set).
pub fn start(factory: &AgentFactory, servers: &[EditorServer]) -> Option<Arc<LateTools>> {
    if servers.is_empty() {
        return None;
    }
    let mut entries: Vec<ServerEntry> = factory
        .mcp_servers
        .iter()
        .filter(|own| servers.iter().all(|s| s.name() != own.name))
        .cloned()
        .collect();
    entries.extend(servers.iter().map(EditorServer::entry));
    let late = LateTools::new();
    gyre_mcp::start_in_background(entries, &late);
    Some(late)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_servers_become_entries_of_their_transport() {
        let stdio = EditorServer::Stdio {
            name: "e".into(),
            command: "srv".into(),
            args: vec!["stdio".into()],
            env: vec![("K".into(), "V".into())],
        }
        .entry();
        let Ok(ServerConfig::Stdio(config)) = &stdio.config else {
            panic!("{stdio:?}")
        };
        assert_eq!(config.env.get("K").map(String::as_str), Some("V"));
        assert_eq!(stdio.source, SOURCE);
        let http = EditorServer::Http {
            name: "h".into(),
            url: "http://127.0.0.1:1/mcp".into(),
            headers: vec![("Authorization".into(), "Bearer x".into())],
        }
        .entry();
        assert!(matches!(http.config, Ok(ServerConfig::Http(ref h)) if h.headers.len() == 1));
    }
}
