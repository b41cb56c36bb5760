//! gyre's language-server client: servers configured in `[lsp.NAME]` (with
//! defaults for common ones found on `PATH`), spoken to over stdio with
//! `lsp-types`' message types, started on the first read or change of a
//! file they serve; after a change, the file's diagnostics within a bounded
//! wait.
//!
//! Layout: [`config`] says which servers exist, `rpc` frames messages,
//! `client` is one running server, `manager` ([`Lsp`]) routes files to
//! servers, starts and restarts them, [`report`] words the diagnostics.
//!
//! This crate knows nothing of tools or the loop: the host adapts [`Lsp`]
//! to `gyre_tools::DiagnosticsHook` and offers the `diagnostics` tool.
//! No `lsp-types` type crosses the API but the diagnostics
//! [`report::Report::new`] words.

mod client;
pub mod config;
mod manager;
pub mod report;
mod rpc;

pub use config::{DiagnosticsConfig, ServerConfig, Settings, servers};
pub use manager::Lsp;
pub use report::Report;

/// Why a server could not be used (logged, never shown to the model).
#[derive(Debug, thiserror::Error)]
pub enum LspError {
    #[error("cannot start the language server {0}: {1}")]
    Spawn(String, String),
    #[error("the language server {0} did not answer initialize in time")]
    Timeout(String),
    #[error("the language server {0} exited")]
    Exited(String),
    #[error("the language server {0} refused a request: {1}")]
    Refused(String, String),
}
