//! gyre's conversation data model and the event enum every frontend consumes.
//!
//! This crate does no IO and depends on no other gyre crate. Everything here is
//! plain data with serde forms; the stored transcript, the headless JSON output
//! and the HTTP API are all built from these types.

mod context;
mod event;
mod message;
mod todo;
mod usage;

pub use context::{CompactBoundary, CompactTrigger, Origin};
pub use event::{
    Event, FinishReason, McpServerState, McpServerStatus, RunError, RunErrorKind, RunSummary,
};
pub use message::{
    Message, Outcome, Part, Role, ToolCall, ToolResult, ToolResultContent, ToolSpec,
    image_media_type,
};
pub use todo::{Todo, TodoStatus};
pub use usage::{StopReason, Usage};
