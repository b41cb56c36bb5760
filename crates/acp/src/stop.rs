//! How a finished run answers its prompt: ACP's stop reason, or an error
//! for a run that failed (its message is the run's one sentence).
//!
//! Invariants: a hook's refusal and the loop guard are `refusal`; only a
//! failed run is an error (a cancelled one is `cancelled`).

use agent_client_protocol::v1::schema::StopReason;
use agent_client_protocol::{Error, ErrorCode};
use gyre_protocol::{FinishReason, RunErrorKind, RunSummary};

/// How a finished run answers its prompt: a stop reason, or an error for
/// a run that failed.
pub fn stop_reason(summary: &RunSummary) -> Result<StopReason, Error> {
    let kind = summary.error.as_ref().map(|e| e.kind);
    match (summary.reason, kind) {
        (FinishReason::Completed, _) => Ok(StopReason::EndTurn),
        (FinishReason::MaxTurns, _) => Ok(StopReason::MaxTurnRequests),
        (FinishReason::Budget, _) => Ok(StopReason::MaxTokens),
        (FinishReason::LoopGuard, _) | (FinishReason::Failed, Some(RunErrorKind::Hook)) => {
            Ok(StopReason::Refusal)
        }
        (FinishReason::Cancelled, _) | (_, Some(RunErrorKind::Cancelled)) => {
            Ok(StopReason::Cancelled)
        }
        (FinishReason::Failed, _) => {
            let message = summary
                .error
                .as_ref()
                .map(|e| e.message.clone())
                .unwrap_or_else(|| "the run failed".to_string());
            Err(Error::new(ErrorCode::INTERNAL_ERROR, message))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gyre_protocol::{RunError, Usage};

    fn summary(reason: FinishReason, error: Option<RunErrorKind>) -> RunSummary {
        RunSummary {
            reason,
            final_text: String::new(),
            num_turns: 1,
            usage: Usage::default(),
            cost_usd: 0.0,
            duration_ms: 1,
            error: error.map(|kind| RunError {
                kind,
                message: "the provider is down".into(),
            }),
        }
    }

    #[test]
    fn finish_reasons_map_to_stop_reasons() {
        let cases = [
            (FinishReason::Completed, None, StopReason::EndTurn),
            (
                FinishReason::MaxTurns,
                Some(RunErrorKind::Limit),
                StopReason::MaxTurnRequests,
            ),
            (
                FinishReason::Budget,
                Some(RunErrorKind::Limit),
                StopReason::MaxTokens,
            ),
            (
                FinishReason::LoopGuard,
                Some(RunErrorKind::Limit),
                StopReason::Refusal,
            ),
            (
                FinishReason::Failed,
                Some(RunErrorKind::Hook),
                StopReason::Refusal,
            ),
            (
                FinishReason::Cancelled,
                Some(RunErrorKind::Cancelled),
                StopReason::Cancelled,
            ),
        ];
        for (reason, error, expected) in cases {
            assert_eq!(
                stop_reason(&summary(reason, error)).unwrap(),
                expected,
                "{reason:?}"
            );
        }
        let failed = stop_reason(&summary(FinishReason::Failed, Some(RunErrorKind::Provider)));
        assert_eq!(failed.unwrap_err().message, "the provider is down");
    }
}
