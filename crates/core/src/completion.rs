//! Completion mode (seed 000): the model ends a run by calling
//! `attempt_completion`; an answer with text only does not end it but gets
//! a hidden reminder (bounded, see `run`).
//!
//! The tool itself only records the result: the loop sees a successful
//! call among a turn's results and ends the run with it as the final text.

use futures::future::BoxFuture;
use gyre_tools::{ToolContext, ToolError, ToolKind, ToolOutput, Typed, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// The tool's name, which the loop looks for among results.
pub const ATTEMPT_COMPLETION: &str = "attempt_completion";

/// Reminders after text-only answers, in a row, before the run ends anyway.
pub const MAX_REMINDERS: u32 = 3;
/// The same while the todo list has open items (still bounded).
pub const MAX_REMINDERS_WITH_OPEN_TODOS: u32 = 10;

/// Arguments of `attempt_completion`.
#[derive(Deserialize, JsonSchema)]
pub struct CompletionArgs {
    /// The final result for the user: what was done and how it was checked. Complete in
    /// itself; no question or offer of more help.
    result: String,
}

/// The `attempt_completion` tool.
#[derive(Debug, Default)]
pub struct AttemptCompletionTool;

impl AttemptCompletionTool {
    pub fn new() -> Typed<AttemptCompletionTool> {
        Typed::new(AttemptCompletionTool)
    }
}

impl TypedTool for AttemptCompletionTool {
    const NAME: &'static str = ATTEMPT_COMPLETION;
    const DESCRIPTION: &'static str = "End the task: call this once the work is done and \
        verified, with the final result for the user. Only this call ends the task; an answer \
        without tool calls does not.";
    type Args = CompletionArgs;

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::ReadOnly
    }

    fn call<'a>(
        &'a self,
        args: CompletionArgs,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let result = args.result.trim();
            if result.is_empty() {
                return Err(ToolError::invalid(
                    ATTEMPT_COMPLETION,
                    "`result` is empty; say what was done",
                ));
            }
            Ok(ToolOutput::text("attempt_completion", result))
        })
    }
}
