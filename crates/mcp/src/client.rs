//! A client of one MCP server, over stdio or streamable HTTP, on rmcp
//! behind gyre's own types.
//!
//! Invariants:
//! - The server is a child process owned by the [`McpClient`]: dropping the
//!   client closes the server's stdin (the MCP stdio shutdown), then rmcp
//!   signals and kills it; the child is also `kill_on_drop`, so a runtime
//!   that shuts down first still leaves no server behind. [`McpClient::close`]
//!   does the same and waits for it.
//! - Every request is bounded: the handshake by [`Timeouts::start`], each
//!   later request by [`Timeouts::call`]. A server that never answers is a
//!   [`McpError::Timeout`], one that exits is a [`McpError::Closed`] with the
//!   last lines of its stderr; nothing here panics on what a server sends.
//! - The server's stderr is kept, bounded ([`STDERR_TAIL_LINES`] lines),
//!   only to explain failures; it is not shown otherwise.
//! - An HTTP server is reached with the workspace's one reqwest (rustls):
//!   rmcp's reqwest transport adds no TLS stack of its own. Its headers and
//!   bearer token are read when it is started (a variable that is not set
//!   is an error naming it).
//!
//! Trade-offs:
//! - The handshake is MCP's `initialize` at 2025-11-25, the newest revision
//!   that has one: every stdio server in use today answers it, while the
//!   2026-07-28 `server/discover` lifecycle would cost a probe (and, in
//!   rmcp's auto mode, up to 10 s) against servers that do not know it.
//! - Only the direct child is signalled, not its process group: a server
//!   started through a wrapper (`npx`, a shell) may leave grandchildren when
//!   it is killed rather than closed. Closing stdin first lets well-behaved
//!   servers exit with their children.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ContentBlock, Implementation,
    ProtocolVersion,
};
use rmcp::service::{ClientInitializeError, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ServiceError, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::config::{HttpServer, ServerConfig, StdioServer, shown_command};

/// Lines of a server's stderr kept to explain its failures.
pub const STDERR_TAIL_LINES: usize = 20;

/// How long a server may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// From starting the process to the end of the handshake.
    pub start: Duration,
    /// One request after the handshake (`tools/list`, `tools/call`).
    pub call: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            start: Duration::from_secs(30),
            call: Duration::from_secs(60),
        }
    }
}

/// Why a server could not be used; each message is one sentence naming the
/// server.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("MCP server `{server}` could not be started (`{command}`): {source}")]
    Spawn {
        server: String,
        command: String,
        source: std::io::Error,
    },
    #[error(
        "MCP server `{server}` uses the SSE transport ({url}), which MCP deprecated and gyre does not support; use its streamable HTTP endpoint (`\"type\": \"http\"`)"
    )]
    Unsupported { server: String, url: String },
    #[error("MCP server `{server}` cannot be used: {message}")]
    Config { server: String, message: String },
    #[error("MCP server `{server}` did not answer {what} within {} s{}", after.as_secs_f64(), stderr_note(.stderr))]
    Timeout {
        server: String,
        what: String,
        after: Duration,
        /// The tail of its stderr, when it was waited for at its start.
        stderr: String,
    },
    #[error("MCP server `{server}` exited or closed its connection{}", stderr_note(.stderr))]
    Closed { server: String, stderr: String },
    #[error("MCP server `{server}` failed the handshake: {message}")]
    Handshake { server: String, message: String },
    #[error("MCP server `{server}` answered {what} with an error: {message}")]
    Server {
        server: String,
        what: String,
        message: String,
    },
}

impl McpError {
    /// Whether the server is gone (exited, or its connection closed): a
    /// later call needs a new start.
    pub fn is_closed(&self) -> bool {
        matches!(self, McpError::Closed { .. })
    }
}

fn stderr_note(stderr: &str) -> String {
    match stderr.trim() {
        "" => String::new(),
        tail => format!(" (its stderr ends with: {})", tail.replace('\n', " | ")),
    }
}

/// A tool a server offers.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    pub name: String,
    pub description: Option<String>,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
    /// Its `readOnlyHint` annotation: the server says it changes nothing.
    pub read_only: bool,
}

/// One part of a tool's result.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    Image {
        data: String,
        mime_type: String,
    },
    /// Audio, resources, links: as the server sent them.
    Other(Value),
}

/// What a `tools/call` returned.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    pub content: Vec<Content>,
    /// The tool itself reported a failure (`isError`).
    pub is_error: bool,
    pub structured: Option<Value>,
}

impl CallResult {
    /// The text parts, joined by newlines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| match c {
                Content::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A running server and the session with it.
pub struct McpClient {
    name: String,
    service: RunningService<RoleClient, ClientConfig>,
    timeouts: Timeouts,
    stderr: StderrTail,
    pid: Option<u32>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("name", &self.name)
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// Starts server `name` and completes the handshake.
    pub async fn start(
        name: &str,
        config: &ServerConfig,
        timeouts: Timeouts,
    ) -> Result<Self, McpError> {
        match config {
            ServerConfig::Stdio(server) => Self::start_stdio(name, server, timeouts).await,
            ServerConfig::Http(server) => Self::start_http(name, server, timeouts).await,
            ServerConfig::Sse { url } => Err(McpError::Unsupported {
                server: name.to_string(),
                url: url.clone(),
            }),
        }
    }

    async fn start_http(
        name: &str,
        server: &HttpServer,
        timeouts: Timeouts,
    ) -> Result<Self, McpError> {
        let config_error = |message: String| McpError::Config {
            server: name.to_string(),
            message,
        };
        let mut config = StreamableHttpClientTransportConfig::with_uri(server.url.as_str());
        config.custom_headers = http_headers(server).map_err(config_error)?;
        if let Some(var) = &server.bearer_token_env_var {
            let token = std::env::var(var).map_err(|_| {
                config_error(format!(
                    "its bearer token variable {var} is not set; set it or remove bearer_token_env_var"
                ))
            })?;
            config = config.auth_header(token);
        }
        gyre_tools::tls::install_crypto_provider();
        let transport = StreamableHttpClientTransport::from_config(config);
        let tail = StderrTail::follow(None);
        let started = tokio::time::timeout(timeouts.start, client_info().serve(transport)).await;
        let service = match started {
            Ok(Ok(service)) => service,
            Ok(Err(error)) => {
                let why = match &error {
                    ClientInitializeError::TransportError { error, .. } => deepest(error),
                    other => other.to_string(),
                };
                return Err(McpError::Handshake {
                    server: name.to_string(),
                    message: format!("{} did not answer as an MCP server ({why})", server.url),
                });
            }
            Err(_) => {
                return Err(McpError::Timeout {
                    server: name.to_string(),
                    what: "the initialize handshake".into(),
                    after: timeouts.start,
                    stderr: String::new(),
                });
            }
        };
        Ok(Self {
            name: name.to_string(),
            service,
            timeouts,
            stderr: tail,
            pid: None,
        })
    }

    async fn start_stdio(
        name: &str,
        server: &StdioServer,
        timeouts: Timeouts,
    ) -> Result<Self, McpError> {
        let mut command = tokio::process::Command::new(&server.command);
        command
            .args(&server.args)
            .envs(&server.env)
            .kill_on_drop(true);
        if let Some(dir) = &server.cwd {
            command.current_dir(dir);
        }
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| McpError::Spawn {
                server: name.to_string(),
                command: shown_command(server),
                source,
            })?;
        let pid = transport.id();
        let tail = StderrTail::follow(stderr);
        let started = tokio::time::timeout(timeouts.start, client_info().serve(transport)).await;
        let service = match started {
            Ok(Ok(service)) => service,
            Ok(Err(error)) => return Err(handshake_error(name, error, &tail).await),
            Err(_) => {
                return Err(McpError::Timeout {
                    server: name.to_string(),
                    what: "the initialize handshake".into(),
                    after: timeouts.start,
                    // A server that hangs still has its stderr open: what
                    // it wrote so far, without waiting for more.
                    stderr: tail.now(),
                });
            }
        };
        Ok(Self {
            name: name.to_string(),
            service,
            timeouts,
            stderr: tail,
            pid,
        })
    }

    /// The server's name in the configuration.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server process's id (while it runs).
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Whether the connection is still up (a server that exited, or whose
    /// connection closed, is not).
    pub fn is_alive(&self) -> bool {
        !self.service.is_closed() && !self.service.peer().is_transport_closed()
    }

    /// The last lines of the server's stderr (waiting briefly for a server
    /// that is exiting to finish writing).
    pub async fn stderr_tail(&self) -> String {
        self.stderr.text().await
    }

    /// Every tool the server offers (all pages).
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, McpError> {
        let listed = self
            .bounded("tools/list", self.service.list_all_tools())
            .await?;
        Ok(listed
            .into_iter()
            .map(|tool| ToolInfo {
                read_only: tool
                    .annotations
                    .as_ref()
                    .and_then(|a| a.read_only_hint)
                    .unwrap_or(false),
                name: tool.name.into_owned(),
                description: tool.description.map(|d| d.into_owned()),
                input_schema: Value::Object((*tool.input_schema).clone()),
            })
            .collect())
    }

    /// Calls tool `name` with `arguments`. A tool that reports a failure is
    /// an `Ok` with `is_error`; `Err` is for the server itself failing.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallResult, McpError> {
        let params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments);
        let what = format!("the call of its tool `{name}`");
        let result = self.bounded(&what, self.service.call_tool(params)).await?;
        Ok(CallResult {
            content: result.content.into_iter().map(content).collect(),
            is_error: result.is_error.unwrap_or(false),
            structured: result.structured_content,
        })
    }

    /// Ends the session and waits for the server to be gone.
    pub async fn close(self) {
        if let Err(error) = self.service.cancel().await {
            tracing::debug!(server = %self.name, %error, "closing the MCP session");
        }
    }

    /// `request` bounded by the call timeout, its failure as an
    /// [`McpError`] about `what`.
    async fn bounded<T>(
        &self,
        what: &str,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, McpError> {
        let server = self.name.clone();
        match tokio::time::timeout(self.timeouts.call, request).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(ServiceError::McpError(error))) => Err(McpError::Server {
                server,
                what: what.to_string(),
                message: error.message.into_owned(),
            }),
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                Err(McpError::Closed {
                    server,
                    stderr: self.stderr.text().await,
                })
            }
            Ok(Err(ServiceError::Timeout { timeout })) => Err(McpError::Timeout {
                server,
                what: what.to_string(),
                after: timeout,
                stderr: String::new(),
            }),
            Ok(Err(other)) => Err(McpError::Server {
                server,
                what: what.to_string(),
                message: other.to_string(),
            }),
            Err(_) => Err(McpError::Timeout {
                server,
                what: what.to_string(),
                after: self.timeouts.call,
                stderr: String::new(),
            }),
        }
    }
}

/// The message of the innermost cause of `error` (a refused connection,
/// say, rather than the layers of transport around it).
fn deepest(error: &(dyn std::error::Error + 'static)) -> String {
    let mut inner = error;
    loop {
        // rmcp keeps reqwest's error out of the source chain.
        if let Some(StreamableHttpError::<reqwest::Error>::Client(client)) =
            inner.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            inner = client;
            continue;
        }
        match inner.source() {
            Some(source) => inner = source,
            None => return inner.to_string(),
        }
    }
}

/// What gyre says of itself in the handshake: MCP's `initialize` at
/// 2025-11-25 (see the module docs), no client capabilities.
fn client_info() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("gyre", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// The headers sent to an HTTP server: its own, then those read from
/// variables. Err: one sentence naming the header or variable.
fn http_headers(server: &HttpServer) -> Result<HashMap<HeaderName, HeaderValue>, String> {
    let mut headers = HashMap::new();
    let values = server.headers.iter().map(|(k, v)| (k, Ok(v.clone())));
    let from_env = server.env_headers.iter().map(|(k, var)| {
        let value = std::env::var(var).map_err(|_| {
            format!("the variable {var} of its header {k} is not set; set it or remove the header")
        });
        (k, value)
    });
    for (name, value) in values.chain(from_env) {
        let value = value?;
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
        let value = HeaderValue::from_str(&value)
            .map_err(|_| format!("the value of its header {name} is not a valid header value"))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

async fn handshake_error(
    server: &str,
    error: ClientInitializeError,
    tail: &StderrTail,
) -> McpError {
    let server = server.to_string();
    match error {
        ClientInitializeError::ConnectionClosed(_)
        | ClientInitializeError::TransportError { .. } => McpError::Closed {
            server,
            stderr: tail.text().await,
        },
        ClientInitializeError::JsonRpcError(error) => McpError::Handshake {
            server,
            message: error.message.into_owned(),
        },
        other => McpError::Handshake {
            server,
            message: other.to_string(),
        },
    }
}

fn content(block: ContentBlock) -> Content {
    match block {
        ContentBlock::Text(text) => Content::Text(text.text),
        ContentBlock::Image(image) => Content::Image {
            data: image.data,
            mime_type: image.mime_type,
        },
        other => Content::Other(serde_json::to_value(&other).unwrap_or(Value::Null)),
    }
}

/// The last lines of a server's stderr, and whether it has ended.
#[derive(Clone)]
struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    ended: tokio::sync::watch::Receiver<bool>,
}

impl StderrTail {
    /// Reads `stderr` in the background, keeping the last
    /// [`STDERR_TAIL_LINES`] lines (each cut to 500 bytes: a server may
    /// write anything there).
    fn follow(stderr: Option<tokio::process::ChildStderr>) -> Self {
        let (ended_tx, ended) = tokio::sync::watch::channel(stderr.is_none());
        let tail = Self {
            lines: Arc::default(),
            ended,
        };
        if let Some(stderr) = stderr {
            let lines = tail.lines.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(stderr).lines();
                while let Ok(Some(mut line)) = reader.next_line().await {
                    if line.len() > 500 {
                        let cut = line.floor_char_boundary(500);
                        line.truncate(cut);
                    }
                    let mut kept = lock(&lines);
                    if kept.len() == STDERR_TAIL_LINES {
                        kept.pop_front();
                    }
                    kept.push_back(line);
                }
                let _ = ended_tx.send(true);
            });
        }
        tail
    }

    /// The kept lines now, without waiting.
    fn now(&self) -> String {
        lock(&self.lines)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The kept lines, once stderr has ended (a server that exited closes
    /// it; one whose children keep it open is given [`STDERR_WAIT`]).
    async fn text(&self) -> String {
        let mut ended = self.ended.clone();
        let _ = tokio::time::timeout(STDERR_WAIT, ended.wait_for(|ended| *ended)).await;
        self.now()
    }
}

/// How long a failed server's stderr is waited for, to explain the failure.
const STDERR_WAIT: Duration = Duration::from_secs(1);

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
