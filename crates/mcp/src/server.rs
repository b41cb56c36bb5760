//! Configured servers in a session: started in the background, their tools
//! joining a [`LateTools`] when ready, restarted after a crash.
//!
//! Invariants:
//! - [`start_in_background`] returns at once: each server starts in a task
//!   of its own, bounded by its start timeout, so a slow or broken server
//!   never delays a turn. A server that fails to start is reported (with
//!   its error and the tail of its stderr) and its tools never join.
//! - Every change is reported to the [`LateTools`] as a status:
//!   `starting` (synchronously, before `start_in_background` returns),
//!   then `ready` or `failed`; `crashed` when a call finds the server gone,
//!   then `starting` again when the next call starts it.
//! - A server that crashed is started again lazily, by the next call of one
//!   of its tools (once per call: a call that cannot start it fails with a
//!   sentence saying why). Its tools stay offered meanwhile; calls that
//!   come during a restart wait for it rather than start their own.
//! - The connection is behind an async lock held only to take or replace
//!   the client; calls run side by side on the shared client.
//! - A server holds its [`LateTools`] weakly: the tools hold the server,
//!   so a strong reference would keep the whole set (and the server
//!   processes) alive after the session is gone.

use std::sync::{Arc, Weak};

use gyre_protocol::{McpServerState, McpServerStatus};
use gyre_tools::{LateTools, Tool};
use serde_json::{Map, Value};
use tokio::sync::Mutex;

use crate::client::{CallResult, McpClient, McpError, Timeouts, ToolInfo};
use crate::config::ServerConfig;
use crate::tool::{CallError, McpTool, tool_names};

/// One configured server, as the frontend resolved it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerEntry {
    pub name: String,
    /// How to reach it; Err: why its configuration cannot be used (one
    /// sentence naming the server).
    pub config: Result<ServerConfig, String>,
    pub timeouts: Timeouts,
    /// Where it is configured (a file), for people.
    pub source: String,
    /// `enabled = false` in the configuration: listed, never started.
    pub enabled: bool,
}

/// A server of a session: its configuration and its live connection.
pub struct Server {
    name: String,
    config: ServerConfig,
    timeouts: Timeouts,
    late: Weak<LateTools>,
    client: Mutex<Option<Arc<McpClient>>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Starts the enabled servers of `entries` in the background, on the
/// current tokio runtime; their tools join `late` as each is ready.
/// Returns at once, every server reported `starting` (or `failed`, for an
/// entry that cannot be used).
pub fn start_in_background(entries: Vec<ServerEntry>, late: &Arc<LateTools>) {
    for entry in entries.into_iter().filter(|e| e.enabled) {
        let config = match entry.config {
            Ok(config) => config,
            Err(why) => {
                late.report(status(&entry.name, McpServerState::Failed, why));
                continue;
            }
        };
        let server = Arc::new(Server {
            name: entry.name,
            config,
            timeouts: entry.timeouts,
            late: Arc::downgrade(late),
            client: Mutex::new(None),
        });
        server.report(McpServerState::Starting, server.starting_note());
        // Held by the task only while it starts the server; after that by
        // its tools.
        let starting = server.clone();
        tokio::spawn(async move {
            let mut client = starting.client.lock().await;
            if let Err(error) = starting.connect(&mut client).await {
                tracing::warn!(server = %starting.name, "{error}");
            }
        });
    }
}

impl Server {
    pub fn name(&self) -> &str {
        &self.name
    }

    fn report(&self, state: McpServerState, message: String) {
        if let Some(late) = self.late.upgrade() {
            late.report(status(&self.name, state, message));
        }
    }

    fn starting_note(&self) -> String {
        format!(
            "starting MCP server `{}` ({} {})",
            self.name,
            self.config.transport(),
            self.config.target()
        )
    }

    /// Starts the server, offers its tools and keeps the client in `slot`
    /// (the locked connection); reports `ready` or `failed`.
    async fn connect(self: &Arc<Self>, slot: &mut Option<Arc<McpClient>>) -> Result<(), McpError> {
        match self.try_connect().await {
            Ok((client, count)) => {
                *slot = Some(Arc::new(client));
                let tools = if count == 1 { "tool" } else { "tools" };
                self.report(
                    McpServerState::Ready,
                    format!("MCP server `{}` is ready with {count} {tools}", self.name),
                );
                Ok(())
            }
            Err(error) => {
                self.report(McpServerState::Failed, error.to_string());
                Err(error)
            }
        }
    }

    async fn try_connect(self: &Arc<Self>) -> Result<(McpClient, usize), McpError> {
        let client = McpClient::start(&self.name, &self.config, self.timeouts).await?;
        let listed = client.list_tools().await?;
        let names = tool_names(&self.name, listed.iter().map(|t| t.name.as_str()));
        let tools: Vec<Arc<dyn Tool>> = names
            .into_iter()
            .zip(&listed)
            .map(|(name, info)| Arc::new(McpTool::new(self.clone(), name, info)) as Arc<dyn Tool>)
            .collect();
        let count = tools.len();
        if let Some(late) = self.late.upgrade() {
            late.add(&self.name, tools);
        }
        Ok((client, count))
    }

    /// Calls `tool` on the running server, starting it first if it is not
    /// running (it crashed, or exited while idle).
    pub(crate) async fn call(
        self: &Arc<Self>,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallResult, CallError> {
        let client = self.running().await?;
        match client.call_tool(tool, arguments).await {
            Err(error) if error.is_closed() => {
                self.lost(&client, &error).await;
                Err(CallError::Call(error))
            }
            result => result.map_err(CallError::Call),
        }
    }

    /// The live client, started again if the last one is gone.
    async fn running(self: &Arc<Self>) -> Result<Arc<McpClient>, CallError> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref() {
            if client.is_alive() {
                return Ok(client.clone());
            }
            // It went while idle: said once, here, with its stderr.
            let gone = McpError::Closed {
                server: self.name.clone(),
                stderr: client.stderr_tail().await,
            };
            self.report(McpServerState::Crashed, crash_note(&gone));
        }
        *slot = None;
        self.report(McpServerState::Starting, self.starting_note());
        match self.connect(&mut slot).await {
            Ok(()) => slot.clone().ok_or_else(|| {
                CallError::Unavailable(format!("MCP server `{}` is not running", self.name))
            }),
            Err(error) => Err(CallError::Unavailable(format!(
                "MCP server `{}` is not running and could not be started again: {error}",
                self.name
            ))),
        }
    }

    /// `client` failed with `error` (gone): forgotten, and reported, unless
    /// another call did so already.
    async fn lost(&self, client: &Arc<McpClient>, error: &McpError) {
        let mut slot = self.client.lock().await;
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, client)) {
            *slot = None;
            self.report(McpServerState::Crashed, crash_note(error));
        }
    }
}

fn crash_note(error: &McpError) -> String {
    format!("{error}; it is started again on the next call of one of its tools")
}

fn status(server: &str, state: McpServerState, message: String) -> McpServerStatus {
    McpServerStatus {
        server: server.to_string(),
        status: state,
        message,
    }
}

/// One tool of a [`probe`]: its gyre name and what the server said of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    pub name: String,
    pub info: ToolInfo,
}

/// Starts the server of `entry` (bounded by its start timeout), lists its
/// tools and closes it: what `gyre mcp list` shows. Err: one sentence.
pub async fn probe(entry: &ServerEntry) -> Result<Vec<ListedTool>, String> {
    let config = entry.config.as_ref().map_err(Clone::clone)?;
    let client = McpClient::start(&entry.name, config, entry.timeouts)
        .await
        .map_err(|e| e.to_string())?;
    let listed = client.list_tools().await;
    client.close().await;
    let listed = listed.map_err(|e| e.to_string())?;
    let names = tool_names(&entry.name, listed.iter().map(|t| t.name.as_str()));
    Ok(names
        .into_iter()
        .zip(listed)
        .map(|(name, info)| ListedTool { name, info })
        .collect())
}
