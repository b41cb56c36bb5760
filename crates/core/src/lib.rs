//! The gyre agent loop.
//!
//! A run starts from one user prompt and goes turn by turn: assemble the
//! request, stream the model's answer, start each tool call as soon as it is
//! complete, feed the results back in call order, and decide whether to go on
//! ([`run`] holds the loop; [`scheduler`] the tool scheduling). It yields one
//! ordered stream of [`gyre_protocol::Event`]s that every frontend consumes,
//! and a [`RunHandle`] to cancel the run or answer permission requests.
//!
//! This crate prints nothing and knows no frontend. Its state is explicit
//! ([`QueryState`]) and stored at every turn boundary.

mod agent;
mod approval;
pub mod context;
mod events;
pub mod permissions;
pub mod prompt;
pub mod retry;
mod run;
pub mod scheduler;
mod session;
mod state;

pub use agent::{
    Agent, AgentConfig, ManualCompaction, Run, RunEvents, RunHandle, RunLimits, RunRequest,
};
pub use approval::{Approvals, PermissionAnswer};
pub use context::{Compaction, ContextConfig, ContextState, Pruning, Tokenizer};
pub use permissions::{Decision, PermissionMode, Permissions, Rule};
pub use retry::RetryPolicy;
pub use scheduler::SiblingAbort;
pub use session::{Session, new_id, now_ms};
pub use state::{QueryState, Transition};
