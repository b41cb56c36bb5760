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
//!
//! A session survives a crash: the calls a killed run left without results
//! are answered when the next run starts (read-only ones run again, mutating
//! ones are reported as interrupted), and the history is validated and
//! repaired before every request. No secret reaches the store through a
//! tool's output: every result passes a [`Redactor`] first.

mod agent;
pub mod agents;
mod approval;
pub mod checkpoint;
pub mod completion;
pub mod context;
mod events;
pub mod guard;
mod history;
pub mod hooks;
mod id;
pub mod live;
pub mod permissions;
pub mod prompt;
pub mod redact;
pub mod retry;
mod run;
pub mod scheduler;
mod session;
pub mod sessions;
pub mod skills;
mod state;
pub mod structured;
pub mod subagent;

pub use agent::{
    Agent, AgentConfig, ManualCompaction, Run, RunEvents, RunHandle, RunLimits, RunRequest,
};
pub use agents::{AgentCatalog, AgentProfile, Completion};
pub use approval::{Approvals, PermissionAnswer, PermissionPrompt, PromptDecision};
pub use context::{Compaction, ContextConfig, ContextState, Pruning, Tokenizer};
pub use guard::LoopGuardConfig;
pub use id::{SHORT_ID_CHARS, new_id, short_id};
pub use live::{Abort, LiveSession, Numbered, Reader, SessionStatus, Submitted, Update};
pub use permissions::{
    Decision, PermissionContext, PermissionMode, Permissions, Rule, SessionRules, suggest_rule,
    suggest_rules,
};
pub use redact::{RedactError, Redactor};
pub use retry::RetryPolicy;
pub use scheduler::SiblingAbort;
pub use session::{Session, now_ms};
pub use state::{
    MAX_KEPT_RUNS, MAX_TURN_USAGE, QueryState, RunRecord, RunTotals, Transition, TurnUsage,
};
pub use structured::OutputSchema;
pub use subagent::{SubagentLimits, SubagentSetup, WEB_SEARCH_TOOL};
