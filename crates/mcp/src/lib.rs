//! gyre's MCP client: the servers of a project's `.mcp.json`, started as
//! child processes and spoken to over stdio.
//!
//! rmcp (the official SDK) does the protocol, but it has had a major
//! release every month or two, so none of its types cross this crate's
//! boundary: callers see [`McpClient`], [`ToolInfo`], [`CallResult`] and
//! [`McpError`] only. This crate knows nothing of gyre's loop (it must not
//! depend on `gyre-core`); frontends wire a client to whatever needs it,
//! such as the cli's `--permission-prompt-tool`.

pub mod client;
pub mod config;

pub use client::{CallResult, Content, McpClient, McpError, Timeouts, ToolInfo};
pub use config::{ConfigError, McpConfig, ServerConfig, StdioServer};
