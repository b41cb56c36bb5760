//! How a run ends: a reason for the summary and, when it did not succeed,
//! a classified error with one sentence a person can act on.

use gyre_llm::{ErrorKind, LlmError};
use gyre_protocol::{FinishReason, RunError, RunErrorKind};
use gyre_store::StoreError;

use super::TAKEN_OVER;
use crate::context::{CompactError, Compaction};

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct End {
    pub reason: FinishReason,
    pub error: Option<RunError>,
    /// The run's final text when it is not its last answer's (the result
    /// of `attempt_completion`).
    pub final_text: Option<String>,
}

impl End {
    pub(super) fn completed() -> Self {
        Self {
            reason: FinishReason::Completed,
            error: None,
            final_text: None,
        }
    }

    /// Completed by `attempt_completion`, with its result as the final text.
    pub(super) fn completed_with(result: String) -> Self {
        Self {
            final_text: Some(result),
            ..Self::completed()
        }
    }

    pub(super) fn with_error(
        reason: FinishReason,
        kind: RunErrorKind,
        message: impl Into<String>,
    ) -> Self {
        Self {
            reason,
            error: Some(RunError {
                kind,
                message: message.into(),
            }),
            final_text: None,
        }
    }

    pub(super) fn store(err: StoreError) -> Self {
        if matches!(err, StoreError::Fenced { .. }) {
            return Self::taken_over(Some(&err));
        }
        Self::with_error(
            FinishReason::Failed,
            RunErrorKind::Store,
            format!("the session store failed: {err}"),
        )
    }

    /// Another run took the session over (this one was paused past its
    /// lease, or lost the store for as long): it stopped and wrote nothing
    /// more. `detail` is what refused it, if a write was refused.
    pub(super) fn taken_over(detail: Option<&StoreError>) -> Self {
        let message = match detail {
            Some(detail) => {
                format!("{TAKEN_OVER}; this run stopped and stored nothing more ({detail})")
            }
            None => format!(
                "{TAKEN_OVER}; this run stopped and stored nothing more (its lock was lost: paused or cut off from the store for longer than the lease)"
            ),
        };
        Self::with_error(FinishReason::Failed, RunErrorKind::Store, message)
    }

    pub(super) fn cancelled() -> Self {
        Self::with_error(
            FinishReason::Cancelled,
            RunErrorKind::Cancelled,
            "cancelled by the user",
        )
    }

    pub(super) fn provider(err: &LlmError) -> Self {
        let kind = match err.kind {
            ErrorKind::Auth => RunErrorKind::Auth,
            ErrorKind::ContextOverflow => RunErrorKind::ContextOverflow,
            ErrorKind::Endpoint => RunErrorKind::Endpoint,
            _ => RunErrorKind::Provider,
        };
        Self::with_error(FinishReason::Failed, kind, err.message.clone())
    }
}

impl End {
    /// The conversation does not fit the window: why compaction did not
    /// help, what the user can do, and the provider's own words.
    pub(super) fn overflow(
        provider: &str,
        compaction: Compaction,
        compaction_error: Option<&CompactError>,
    ) -> Self {
        let why = match (compaction, compaction_error) {
            (Compaction::Off, _) => {
                "and compaction is off ([context] compaction = \"off\" in the config); start a new session or turn compaction on".to_string()
            }
            (Compaction::Auto, Some(error)) => format!(
                "and compacting it failed: {error}; start a new session or use a model with a larger context window"
            ),
            (Compaction::Auto, None) => {
                "even after compacting it; start a new session or use a model with a larger context window".to_string()
            }
        };
        Self::with_error(
            FinishReason::Failed,
            RunErrorKind::ContextOverflow,
            format!(
                "the conversation no longer fits the model's context window, {why} (the provider said: {provider})"
            ),
        )
    }

    /// Answers cut off by the output limit, more often than recovery allows.
    pub(super) fn output_limit(limit: u32, times: u32) -> Self {
        Self::with_error(
            FinishReason::Failed,
            RunErrorKind::Provider,
            format!(
                "the model's answer was cut off at the output limit ({limit} tokens) {times} times in a row; \
                 raise max_output_tokens for the model ([models.NAME] in the config) or ask for smaller steps"
            ),
        )
    }

    /// A run budget was crossed; the run stops before its next request.
    pub(super) fn budget(message: String) -> Self {
        Self::with_error(FinishReason::Budget, RunErrorKind::Limit, message)
    }
}
