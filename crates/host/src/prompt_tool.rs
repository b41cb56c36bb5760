//! `--permission-prompt-tool mcp__SERVER__TOOL`: a headless run's asks go
//! to an MCP tool, as in Claude Code, instead of being refused.
//!
//! The tool gets `{"tool_name", "input", "tool_use_id"}` and answers with
//! one text content holding JSON: `{"behavior": "allow", "updatedInput":
//! {…}}` (the call runs, with that input when given) or `{"behavior":
//! "deny", "message": "…"}` (the model sees the message).
//!
//! Invariants:
//! - The flag is checked before the run starts (a malformed name, a server
//!   that is not in the workspace's `.mcp.json`, or an SSE server is a
//!   usage error), but the server is started on the first ask only: a run
//!   that never asks starts nothing.
//! - Nothing the server does can end the run: a server that does not start,
//!   a timeout, an error, or an answer that is not the JSON above is a deny
//!   whose message says what went wrong.
//! - A server that fails to start is not started again in the same run
//!   (each later ask is denied with the same reason at once, rather than
//!   each waiting out a start timeout). One that exits or closes its
//!   connection later is started again on the next ask.
//! - Asks may come from concurrent calls: the client is shared, and calls to
//!   the tool go out side by side (the lock is held only to start it).

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use gyre_core::{PermissionPrompt, PromptDecision};
use gyre_mcp::{CallResult, McpClient, McpConfig, McpError, ServerConfig, Timeouts};
use gyre_protocol::ToolCall;
use serde_json::{Map, Value};
use tokio::sync::Mutex;

/// How long the server may take to start, and the tool to answer: long, as
/// a prompt tool may itself wait for a person.
const TIMEOUTS: Timeouts = Timeouts {
    start: Duration::from_secs(30),
    call: Duration::from_secs(600),
};

/// Answers longer than this are cut in the deny message of a malformed one.
const SHOWN_ANSWER_CHARS: usize = 200;

/// The checked flag: which tool of which configured server.
#[derive(Debug, Clone)]
pub struct PromptTool {
    /// `mcp__SERVER__TOOL`, as given.
    pub name: String,
    pub server: String,
    pub tool: String,
    pub config: ServerConfig,
}

impl PromptTool {
    /// `name` checked against the servers of `mcp` (read from `source`,
    /// named in errors). Err: the one line of a usage error.
    pub fn resolve(name: &str, mcp: &McpConfig, source: &str) -> Result<Self, String> {
        let servers: Vec<(&str, Result<&ServerConfig, &str>)> = mcp
            .servers
            .iter()
            .map(|(name, config)| (name.as_str(), Ok(config)))
            .collect();
        Self::among(name, &servers, source)
    }

    /// `name` checked against `servers` (every configured one: `.mcp.json`,
    /// `--mcp-config`, `[mcp_servers]`; `source` says which in errors).
    pub fn among_entries(
        name: &str,
        servers: &[gyre_mcp::ServerEntry],
        source: &str,
    ) -> Result<Self, String> {
        let servers: Vec<(&str, Result<&ServerConfig, &str>)> = servers
            .iter()
            .map(|s| (s.name.as_str(), s.config.as_ref().map_err(String::as_str)))
            .collect();
        Self::among(name, &servers, source)
    }

    fn among(
        name: &str,
        servers: &[(&str, Result<&ServerConfig, &str>)],
        source: &str,
    ) -> Result<Self, String> {
        let (server, tool) = split_name(name).ok_or_else(|| {
            format!(
                "--permission-prompt-tool `{name}` is not an MCP tool name; write mcp__SERVER__TOOL, with SERVER a server of {source}"
            )
        })?;
        let Some((_, config)) = servers.iter().find(|(n, _)| *n == server) else {
            let known: Vec<&str> = servers.iter().map(|(n, _)| *n).collect();
            let known = match known.as_slice() {
                [] => "it has none".to_string(),
                names => format!("its servers: {}", names.join(", ")),
            };
            return Err(format!(
                "--permission-prompt-tool {name}: no MCP server `{server}` in {source} ({known})"
            ));
        };
        let config = config.map_err(|why| format!("--permission-prompt-tool {name}: {why}"))?;
        if let ServerConfig::Sse { url } = config {
            return Err(format!(
                "--permission-prompt-tool {name}: MCP server `{server}` uses the SSE transport ({url}), which gyre does not support; use its streamable HTTP endpoint or a server with a `command`"
            ));
        }
        Ok(Self {
            name: name.to_string(),
            server: server.to_string(),
            tool: tool.to_string(),
            config: config.clone(),
        })
    }
}

/// `mcp__SERVER__TOOL` → (SERVER, TOOL); the tool may itself hold `__`.
fn split_name(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

enum State {
    NotStarted,
    Running(Arc<McpClient>),
    /// The start failed; why.
    Failed(String),
}

/// The prompt a run's approver asks: the tool, on a lazily started client.
pub struct McpPrompt {
    tool: PromptTool,
    state: Mutex<State>,
}

impl McpPrompt {
    pub fn new(tool: PromptTool) -> Self {
        Self {
            tool,
            state: Mutex::new(State::NotStarted),
        }
    }

    /// The running client, started if need be.
    async fn client(&self) -> Result<Arc<McpClient>, String> {
        let mut state = self.state.lock().await;
        match &*state {
            State::Running(client) => return Ok(client.clone()),
            State::Failed(reason) => return Err(reason.clone()),
            State::NotStarted => {}
        }
        match McpClient::start(&self.tool.server, &self.tool.config, TIMEOUTS).await {
            Ok(client) => {
                let client = Arc::new(client);
                *state = State::Running(client.clone());
                Ok(client)
            }
            Err(error) => {
                let reason = error.to_string();
                *state = State::Failed(reason.clone());
                Err(reason)
            }
        }
    }

    /// Forgets `client` after it went away, so the next ask starts the
    /// server again (unless another ask already did).
    async fn forget(&self, client: &Arc<McpClient>) {
        let mut state = self.state.lock().await;
        if matches!(&*state, State::Running(current) if Arc::ptr_eq(current, client)) {
            *state = State::NotStarted;
        }
    }

    async fn ask(&self, call: &ToolCall, input: &Value) -> PromptDecision {
        let name = &self.tool.name;
        let client = match self.client().await {
            Ok(client) => client,
            Err(reason) => {
                return PromptDecision::Deny(format!(
                    "the permission prompt tool {name} is unavailable: {reason}"
                ));
            }
        };
        let mut arguments = Map::new();
        arguments.insert("tool_name".into(), Value::String(call.name.clone()));
        arguments.insert("input".into(), input.clone());
        arguments.insert("tool_use_id".into(), Value::String(call.id.clone()));
        let answer = client.call_tool(&self.tool.tool, arguments).await;
        if let Err(McpError::Closed { .. }) = &answer {
            self.forget(&client).await;
        }
        decision(name, answer)
    }
}

impl PermissionPrompt for McpPrompt {
    fn decide<'a>(
        &'a self,
        call: &'a ToolCall,
        input: &'a Value,
        _question: &'a str,
    ) -> BoxFuture<'a, PromptDecision> {
        self.ask(call, input).boxed()
    }
}

/// The tool's answer as a decision; anything but a well-formed answer is a
/// deny that says what was wrong.
fn decision(name: &str, answer: Result<CallResult, McpError>) -> PromptDecision {
    let result = match answer {
        Ok(result) => result,
        Err(error) => {
            return PromptDecision::Deny(format!(
                "the permission prompt tool {name} failed: {error}"
            ));
        }
    };
    let text = result.text();
    if result.is_error {
        return PromptDecision::Deny(format!(
            "the permission prompt tool {name} reported an error: {}",
            shown(&text)
        ));
    }
    let malformed = || {
        PromptDecision::Deny(format!(
            "the permission prompt tool {name} did not answer with {{\"behavior\": \"allow\" or \"deny\", …}} but with: {}",
            shown(&text)
        ))
    };
    let Ok(Value::Object(answer)) = serde_json::from_str::<Value>(text.trim()) else {
        return malformed();
    };
    match answer.get("behavior").and_then(Value::as_str) {
        Some("allow") => match answer.get("updatedInput") {
            None | Some(Value::Null) => PromptDecision::Allow {
                updated_input: None,
            },
            Some(input @ Value::Object(_)) => PromptDecision::Allow {
                updated_input: Some(input.clone()),
            },
            Some(_) => malformed(),
        },
        Some("deny") => {
            let message = answer
                .get("message")
                .and_then(Value::as_str)
                .filter(|m| !m.trim().is_empty())
                .unwrap_or("no reason given");
            PromptDecision::Deny(format!("{name} denied it: {message}"))
        }
        _ => malformed(),
    }
}

/// `text` for a message: empty said so, long cut.
fn shown(text: &str) -> String {
    if text.trim().is_empty() {
        return "an empty text".into();
    }
    match text.char_indices().nth(SHOWN_ANSWER_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {

    use gyre_mcp::{Content, StdioServer};
    use serde_json::json;

    use super::*;

    const NAME: &str = "mcp__perm__approve";

    fn text(text: &str) -> Result<CallResult, McpError> {
        Ok(CallResult {
            content: vec![Content::Text(text.into())],
            is_error: false,
            structured: None,
        })
    }

    fn deny_text(decision: PromptDecision) -> String {
        match decision {
            PromptDecision::Deny(message) => message,
            other => panic!("not a deny: {other:?}"),
        }
    }

    #[test]
    fn names_split_into_server_and_tool() {
        assert_eq!(split_name("mcp__perm__approve"), Some(("perm", "approve")));
        assert_eq!(split_name("mcp__perm__a__b"), Some(("perm", "a__b")));
        for bad in [
            "perm__approve",
            "mcp__perm",
            "mcp____approve",
            "mcp__perm__",
            "",
        ] {
            assert_eq!(split_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn resolving_names_the_problem() {
        let mcp = McpConfig::parse(
            r#"{"mcpServers": {"perm": {"command": "srv"}, "web": {"type": "sse", "url": "https://x"}}}"#,
            std::path::Path::new(".mcp.json"),
        )
        .unwrap();
        let tool = PromptTool::resolve(NAME, &mcp, ".mcp.json").unwrap();
        assert_eq!(
            (tool.server.as_str(), tool.tool.as_str()),
            ("perm", "approve")
        );
        assert!(matches!(
            tool.config,
            ServerConfig::Stdio(StdioServer { .. })
        ));
        assert_eq!(
            PromptTool::resolve("approve", &mcp, ".mcp.json").unwrap_err(),
            "--permission-prompt-tool `approve` is not an MCP tool name; write mcp__SERVER__TOOL, with SERVER a server of .mcp.json"
        );
        assert_eq!(
            PromptTool::resolve("mcp__nope__approve", &mcp, ".mcp.json").unwrap_err(),
            "--permission-prompt-tool mcp__nope__approve: no MCP server `nope` in .mcp.json (its servers: perm, web)"
        );
        let err = PromptTool::resolve("mcp__web__approve", &mcp, ".mcp.json").unwrap_err();
        assert!(err.contains("uses the SSE transport"), "{err}");
        let err = PromptTool::resolve(NAME, &McpConfig::default(), "x/.mcp.json").unwrap_err();
        assert!(err.ends_with("in x/.mcp.json (it has none)"), "{err}");
    }

    #[test]
    fn well_formed_answers_decide() {
        assert_eq!(
            decision(
                NAME,
                text(r#"{"behavior": "allow", "updatedInput": {"command": "ls"}}"#)
            ),
            PromptDecision::Allow {
                updated_input: Some(json!({"command": "ls"}))
            }
        );
        assert_eq!(
            decision(NAME, text(r#" {"behavior": "allow"} "#)),
            PromptDecision::Allow {
                updated_input: None
            }
        );
        assert_eq!(
            deny_text(decision(
                NAME,
                text(r#"{"behavior": "deny", "message": "no"}"#)
            )),
            "mcp__perm__approve denied it: no"
        );
        assert_eq!(
            deny_text(decision(NAME, text(r#"{"behavior": "deny"}"#))),
            "mcp__perm__approve denied it: no reason given"
        );
    }

    #[test]
    fn anything_else_is_a_deny_that_says_why() {
        for bad in [
            "yes",
            "",
            r#"{"behavior": "maybe"}"#,
            r#"{"behavior": "allow", "updatedInput": "rm -rf /"}"#,
            "[1]",
        ] {
            let message = deny_text(decision(NAME, text(bad)));
            assert!(
                message.starts_with(
                    "the permission prompt tool mcp__perm__approve did not answer with"
                ),
                "{bad}: {message}"
            );
        }
        let long = "x".repeat(1000);
        let message = deny_text(decision(NAME, text(&long)));
        assert!(
            message.ends_with(&format!("{}…", "x".repeat(200))),
            "{message}"
        );

        let failed = CallResult {
            content: vec![Content::Text("boom".into())],
            is_error: true,
            structured: None,
        };
        assert_eq!(
            deny_text(decision(NAME, Ok(failed))),
            "the permission prompt tool mcp__perm__approve reported an error: boom"
        );
        let gone = McpError::Closed {
            server: "perm".into(),
            stderr: String::new(),
        };
        assert_eq!(
            deny_text(decision(NAME, Err(gone))),
            "the permission prompt tool mcp__perm__approve failed: MCP server `perm` exited or closed its connection"
        );
    }
}
