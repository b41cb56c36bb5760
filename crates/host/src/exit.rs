//! Exit codes (CONTRACT.md "Exit codes") and the one-line errors behind them.

use gyre_protocol::{FinishReason, RunErrorKind, RunSummary};

pub const SUCCESS: i32 = 0;
pub const FAILED: i32 = 1;
pub const USAGE: i32 = 2;
pub const LIMIT: i32 = 3;
pub const CANCELLED: i32 = 130;

/// An error that ends the process with `code`, printing `message` on one line.
#[derive(Debug)]
pub struct Exit {
    pub code: i32,
    pub message: String,
}

impl Exit {
    /// Bad usage or configuration: exit 2.
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            code: USAGE,
            message: message.into(),
        }
    }

    /// The run could not go on: exit 1.
    pub fn failure(message: impl Into<String>) -> Self {
        Self {
            code: FAILED,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// The exit code of a finished run.
pub fn code_for(summary: &RunSummary) -> i32 {
    match summary.reason {
        FinishReason::Completed => SUCCESS,
        FinishReason::MaxTurns | FinishReason::Budget | FinishReason::LoopGuard => LIMIT,
        FinishReason::Cancelled => CANCELLED,
        FinishReason::Failed => match summary.error.as_ref().map(|e| e.kind) {
            // A rejected key or a wrong URL is a configuration problem.
            Some(RunErrorKind::Auth | RunErrorKind::Endpoint) => USAGE,
            _ => FAILED,
        },
    }
}
