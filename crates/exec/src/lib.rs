//! gyre's headless frontend: one run from a prompt to its exit code
//! (`gyre run`, `gyre -p`), printed as `text`, `json` or `stream-json`
//! ([`run`]), and the printers themselves: [`StreamJson`] (Claude Code's
//! headless stream format, also used by `gyre sessions replay`),
//! [`result_object`] (the `json` result), and [`HumanView`] (the demo's
//! coloured live view); and [`run_stream`], the `--input-format
//! stream-json` session the Claude Agent SDKs drive (many turns in one
//! process, Claude Code's control protocol). A run's refused calls (module
//! `denials`) go into its result object as `permission_denials`, and on
//! stderr in `text` mode.
//!
//! Invariants: stdout carries only the chosen format, nothing else (logs go
//! to the log file, one-line errors to stderr); the printers are pure
//! functions of the event stream (no IO in [`StreamJson`] and
//! [`result_object`]), so the same lines come from a live run and from a
//! replay.
//!
//! Must not hold: settings, config or store logic (that is `gyre-host`),
//! clap, or any other frontend.

mod denials;
mod headless;
mod human;
mod output;
mod stdin;

pub use headless::run;
pub use human::HumanView;
pub use output::{CLAUDE_CODE_VERSION, InitInfo, StreamJson, result_object, with_cache_savings};
pub use stdin::run_stream;
