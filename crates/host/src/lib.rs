//! What every frontend of gyre shares: from flags, config files and the
//! environment to a ready agent and session.
//!
//! Two stages, as in ripgrep: the binary turns its command line into
//! [`Flags`] (plain data, no clap here); [`Settings::resolve`] reads the
//! config files (`~/.config/gyre/config.toml`, `.gyre/config.toml`) and the
//! environment over them into [`Settings`], whose [`Default`] is the one
//! place every default is written. [`Settings::factory`] then builds the
//! [`AgentFactory`] of a workspace (client, prompt template, agent
//! catalogue, MCP servers, sandbox, checkpoints). Around that: where gyre
//! keeps its data and logs ([`home`]), opening the session store
//! ([`store`]), which session a run goes on in ([`session_choice`]), the
//! trust of a project's MCP servers ([`mcp_trust`]), an editor's MCP
//! servers for one ACP session ([`editor_mcp`]), custom slash commands
//! and their expansion ([`commands`]), the models a session can switch to
//! ([`models`]), where skills come from ([`skills`]), the
//! `--permission-prompt-tool` ([`PromptTool`]), the sandbox of `bash`
//! commands from `--sandbox` and `[sandbox]`, and [`Host`], the store and
//! per-workspace factories of the long-lived frontends.
//!
//! Errors are [`Exit`]: a one-line message and the process exit code
//! (CONTRACT.md "Exit codes"), so every frontend fails the same way.
//!
//! Must not hold: any frontend (printing a run, HTTP, ACP, the MCP server
//! side, the terminal UI) or clap; this crate depends on core, llm, tools,
//! store, mcp and protocol only, and every frontend depends on it.

pub mod claude_compat;
pub mod commands;
pub mod config;
pub mod editor_mcp;
pub mod exit;
mod factory;
mod flags;
pub mod home;
mod host;
pub mod images;
pub mod lsp;
pub mod mcp_tools;
pub mod mcp_trust;
pub mod models;
mod prompt_tool;
pub mod provider;
mod sandbox;
pub mod session_choice;
mod settings;
pub mod skills;
pub mod store;

pub use exit::Exit;
pub use factory::{AgentFactory, agent_catalog};
pub use flags::{Flags, InputFormat, OutputFormat};
pub use host::Host;
pub use prompt_tool::PromptTool;
pub use settings::{CATALOGUED_OUTPUT_CAP, Settings, max_output_tokens, redactor};

/// The runtime of every command but `serve`: one thread runs the loop (the
/// work is IO-bound, blocking work goes to tokio's blocking pool), which
/// keeps start-up and memory small.
pub fn runtime() -> Result<tokio::runtime::Runtime, Exit> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Exit::failure(format!("cannot start the async runtime: {e}")))
}
