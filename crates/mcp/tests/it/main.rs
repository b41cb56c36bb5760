//! gyre's MCP client against real servers: the Python fixtures of
//! `tests/fixtures` and the reference servers from npm (server-everything,
//! over stdio and streamable HTTP), each a real child process.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly

mod common;
mod everything;
mod http;
mod servers;
mod stdio;
