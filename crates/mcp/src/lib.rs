//! gyre's MCP client: the servers of the configuration (`.mcp.json`, and
//! what the frontend reads from its own config files), over stdio or
//! streamable HTTP, their tools offered to the model as gyre tools.
//!
//! rmcp (the official SDK) does the protocol, but it has had a major
//! release every month or two, so none of its types cross this crate's
//! boundary: callers see [`McpClient`], [`ToolInfo`], [`CallResult`] and
//! [`McpError`] for one server, and [`start_in_background`] and [`probe`]
//! for a session's servers. This crate knows nothing of gyre's loop (it
//! must not depend on `gyre-core`): a session's servers put their tools
//! into a [`gyre_tools::LateTools`], which the loop reads at turn
//! boundaries.

pub mod client;
pub mod config;
pub mod server;
pub mod tool;

pub use client::{CallResult, Content, McpClient, McpError, Timeouts, ToolInfo};
pub use config::{ConfigError, HttpServer, McpConfig, ServerConfig, StdioServer};
pub use server::{ListedTool, Server, ServerEntry, probe, start_in_background};
pub use tool::{McpTool, tool_names};
