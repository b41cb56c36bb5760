//! The `gyre` binary as users and scripts meet it: real processes, the
//! scripted model over real HTTP, real files, a real store.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly

mod agents;
mod common;
mod config;
mod context;
mod crash;
mod decode_stream;
mod demo;
mod errors;
mod flight;
mod headless;
mod hooks;
mod permissions;
mod prompt_tool;
mod redact;
mod resume;
mod rewind;
mod sandbox;
mod sessions;
mod sessions_pg;
mod signals;
mod tui;
