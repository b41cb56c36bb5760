//! End-to-end tests of the loop: the scripted model over real HTTP and SSE,
//! real tools on real files in temp dirs, a real SQLite store.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly

mod approvals;
mod bad_input;
mod cache_steps;
mod compaction;
mod completion;
mod dual;
mod e2e;
mod faults;
mod harness;
mod history_repair;
mod hooks;
mod late_tools;
mod limits;
mod live;
mod long_session;
mod loop_guard;
mod permission_prompt;
mod redaction;
mod replay;
mod request_layout;
mod resume;
mod retries;
mod scheduling;
mod server_count;
mod sessions;
mod subagents;
mod subagents_background;
mod tools_in_loop;
mod usage_now;
