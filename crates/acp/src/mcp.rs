//! The editor's MCP servers (`mcpServers` of `session/new` and
//! `session/load`) as `gyre-host`'s plain data.
//!
//! Invariant: stdio and streamable HTTP servers are started; a transport
//! gyre does not start for an editor (SSE, or one it does not know) is
//! named in a notice, never dropped silently.

use agent_client_protocol::v1::schema::McpServer;
use gyre_host::editor_mcp::EditorServer;

/// The servers gyre starts, and a notice for each one it does not.
pub fn servers(given: &[McpServer]) -> (Vec<EditorServer>, Vec<String>) {
    let mut started = Vec::new();
    let mut notices = Vec::new();
    for server in given {
        match server {
            McpServer::Stdio(stdio) => started.push(EditorServer::Stdio {
                name: stdio.name.clone(),
                command: stdio.command.display().to_string(),
                args: stdio.args.clone(),
                env: stdio
                    .env
                    .iter()
                    .map(|v| (v.name.clone(), v.value.clone()))
                    .collect(),
            }),
            McpServer::Http(http) => started.push(EditorServer::Http {
                name: http.name.clone(),
                url: http.url.clone(),
                headers: http
                    .headers
                    .iter()
                    .map(|h| (h.name.clone(), h.value.clone()))
                    .collect(),
            }),
            McpServer::Sse(sse) => notices.push(format!(
                "MCP server `{}` is not started: gyre does not start SSE servers for an editor (use streamable HTTP)",
                sse.name
            )),
            _ => notices.push("an MCP server of an unknown transport is not started".to_string()),
        }
    }
    (started, notices)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stdio_and_http_start_and_sse_is_named() {
        let given: Vec<McpServer> = serde_json::from_value(json!([
            {"name": "s", "command": "/bin/srv", "args": ["stdio"], "env": [{"name": "K", "value": "V"}]},
            {"type": "http", "name": "h", "url": "http://x/mcp", "headers": [{"name": "A", "value": "B"}]},
            {"type": "sse", "name": "old", "url": "http://x/sse", "headers": []}
        ]))
        .unwrap();
        let (started, notices) = servers(&given);
        assert_eq!(started.len(), 2);
        assert_eq!(started[0].name(), "s");
        assert!(matches!(&started[1], EditorServer::Http { headers, .. } if headers.len() == 1));
        assert_eq!(notices.len(), 1);
        assert!(notices[0].contains("`old`"), "{notices:?}");
    }
}
