//! The `gyre` binary as users and scripts meet it: real processes, the
//! scripted model over real HTTP, real files, a real store.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly

mod acp;
mod acp_sdk;
mod acp_subagent;
mod agents;
mod campaign;
mod claude_flags;
mod claude_sdk;
mod common;
mod config;
mod context;
mod crash;
mod custom_commands;
mod decode_stream;
mod demo;
mod docs;
mod effort;
mod errors;
mod flight;
mod headless;
mod hooks;
mod images;
mod llama;
mod lsp;
mod mcp;
mod mcp_server;
mod orphans;
mod permissions;
mod prompt_tool;
mod redact;
mod resume;
mod rewind;
mod sandbox;
mod serve;
mod serve_client;
mod serve_guard;
mod serve_load;
mod serve_pg;
mod sessions;
mod sessions_pg;
mod signals;
mod skills;
mod store_errors;
mod structured;
mod takeover;
mod tui;
mod web_search;
