//! When and how long to wait before asking the model again: one policy for
//! every provider.
//!
//! Invariants:
//! - Only transient errors are retried (rate limit, overload, server errors,
//!   network failures and stalls, broken streams). A rejected key, an invalid
//!   request or a context overflow is never retried: asking again cannot help.
//! - A delay the provider asked for (`retry-after`, Gemini `RetryInfo`, "try
//!   again in Xs") is honoured as given (never shortened), unless it would
//!   overrun the total budget, in which case the run gives up at once rather
//!   than sleep and fail anyway.
//! - Otherwise the delay grows exponentially from `initial_delay`, capped at
//!   `max_delay`, with "equal jitter" (half fixed, half random) so that many
//!   clients that failed together do not come back together.
//! - Attempts and total waiting are both bounded.
//! - Output the server could not parse (`ErrorKind::ModelOutput`) is asked
//!   for once more with the same request, never more: a second failure is
//!   the model's, reported as such.
//! - On first contact (no answer from the provider yet in the session), an
//!   unreachable URL gets only [`FIRST_CONTACT_BUDGET`] of quick retries and
//!   then counts as a wrong URL: minutes of backoff would hide a typo in
//!   `--base-url` behind silence. Once the provider has answered, the same
//!   failure is a passing outage and gets the full policy.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use gyre_llm::{ErrorKind, LlmError};

/// How the loop retries a failed model request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0: never retry).
    pub max_retries: u32,
    pub initial_delay: Duration,
    pub max_delay: Duration,
    /// The most time spent waiting between attempts, over one turn.
    pub budget: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 8,
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            budget: Duration::from_secs(600),
        }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryDecision {
    /// Wait this long, then try again.
    Wait(Duration),
    /// Give up; the sentence says why (added to the error's own message).
    GiveUp(Option<String>),
}

/// The most waiting for an unreachable URL before the provider has ever
/// answered in the session.
pub const FIRST_CONTACT_BUDGET: Duration = Duration::from_secs(3);

impl RetryPolicy {
    /// Decides about the `attempt`-th failure (1-based) of a turn, after
    /// `waited` in earlier waits of the same turn.
    pub fn decide(&self, error: &LlmError, attempt: u32, waited: Duration) -> RetryDecision {
        self.decide_with(error, attempt, waited, false)
    }

    /// [`RetryPolicy::decide`], knowing whether the provider has answered
    /// before in the session (`first_contact` when it has not).
    pub fn decide_with(
        &self,
        error: &LlmError,
        attempt: u32,
        waited: Duration,
        first_contact: bool,
    ) -> RetryDecision {
        if first_contact && error.kind == ErrorKind::Unreachable {
            return first_contact_decision(self, attempt, waited);
        }
        if !error.kind.is_transient() {
            return RetryDecision::GiveUp(None);
        }
        // A model whose output the server could not parse gets one more
        // chance with the same request; a second failure is the model's.
        if error.kind == ErrorKind::ModelOutput && attempt > 1 {
            return RetryDecision::GiveUp(Some(
                "the model's output failed to parse again, so it was not asked a third time".into(),
            ));
        }
        if attempt > self.max_retries {
            return RetryDecision::GiveUp(Some(format!(
                "gave up after {} attempts",
                self.max_retries + 1
            )));
        }
        let remaining = self.budget.saturating_sub(waited);
        let delay = match error.retry_after() {
            Some(asked) if asked > remaining => {
                return RetryDecision::GiveUp(Some(format!(
                    "the provider asked to wait {} s, more than the retry budget allows",
                    asked.as_secs_f64().ceil()
                )));
            }
            Some(asked) => asked,
            None => self.backoff(attempt).min(remaining),
        };
        if delay.is_zero() && remaining.is_zero() {
            return RetryDecision::GiveUp(Some("the retry budget is spent".into()));
        }
        RetryDecision::Wait(delay)
    }

    /// Exponential backoff with equal jitter for the `attempt`-th retry.
    fn backoff(&self, attempt: u32) -> Duration {
        let exponent = attempt.saturating_sub(1).min(20);
        let full = self
            .initial_delay
            .saturating_mul(1u32 << exponent)
            .min(self.max_delay);
        let half = full / 2;
        half + half.mul_f64(random_unit())
    }
}

/// Quick retries (250 ms doubling, at most 1 s each) within
/// [`FIRST_CONTACT_BUDGET`], and never more than the policy's own retries.
fn first_contact_decision(policy: &RetryPolicy, attempt: u32, waited: Duration) -> RetryDecision {
    let delay = Duration::from_millis(250)
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(4))
        .min(Duration::from_secs(1));
    if attempt > policy.max_retries || waited + delay > FIRST_CONTACT_BUDGET {
        return RetryDecision::GiveUp(Some(format!(
            "nothing answered there in {} s, so the URL is likely wrong",
            FIRST_CONTACT_BUDGET.as_secs()
        )));
    }
    RetryDecision::Wait(delay)
}

/// A short name of why a request is retried, for events (`rate_limit`, …).
pub fn reason_of(error: &LlmError) -> &'static str {
    match error.kind {
        ErrorKind::RateLimited { .. } => "rate_limit",
        ErrorKind::Overloaded { .. } => "overloaded",
        ErrorKind::Server => "server_error",
        ErrorKind::Network => "network",
        ErrorKind::Unreachable => "unreachable",
        ErrorKind::Endpoint => "endpoint",
        ErrorKind::Stream => "stream",
        ErrorKind::ModelOutput => "model_output",
        ErrorKind::ContextOverflow => "context_overflow",
        ErrorKind::InvalidRequest => "invalid_request",
        ErrorKind::Auth => "auth",
    }
}

/// A number in [0, 1) from the process's random hasher keys: jitter needs no
/// cryptographic quality, only to differ between clients and attempts.
fn random_unit() -> f64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0x9e37_79b9_7f4a_7c15);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(kind: ErrorKind) -> LlmError {
        LlmError::new(kind, None, "failed")
    }

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 3,
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
            budget: Duration::from_secs(5),
        }
    }

    #[test]
    fn permanent_errors_are_never_retried() {
        for kind in [
            ErrorKind::Auth,
            ErrorKind::InvalidRequest,
            ErrorKind::ContextOverflow,
        ] {
            assert_eq!(
                policy().decide(&error(kind), 1, Duration::ZERO),
                RetryDecision::GiveUp(None)
            );
        }
    }

    #[test]
    fn output_the_server_could_not_parse_is_asked_for_once_more() {
        let unparsed = error(ErrorKind::ModelOutput);
        assert!(matches!(
            policy().decide(&unparsed, 1, Duration::ZERO),
            RetryDecision::Wait(_)
        ));
        assert!(matches!(
            policy().decide(&unparsed, 2, Duration::ZERO),
            RetryDecision::GiveUp(Some(_))
        ));
        let never = RetryPolicy {
            max_retries: 0,
            ..policy()
        };
        assert!(matches!(
            never.decide(&unparsed, 1, Duration::ZERO),
            RetryDecision::GiveUp(Some(_))
        ));
    }

    #[test]
    fn backoff_grows_within_jitter_bounds_and_is_capped() {
        let policy = policy();
        for (attempt, full_ms) in [(1u32, 100u64), (2, 200), (3, 400)] {
            let RetryDecision::Wait(delay) =
                policy.decide(&error(ErrorKind::Server), attempt, Duration::ZERO)
            else {
                panic!("attempt {attempt} should wait");
            };
            let full = Duration::from_millis(full_ms);
            assert!(delay >= full / 2 && delay <= full, "{attempt}: {delay:?}");
        }
        let capped = RetryPolicy {
            max_retries: 30,
            ..policy
        };
        let RetryDecision::Wait(delay) =
            capped.decide(&error(ErrorKind::Network), 25, Duration::ZERO)
        else {
            panic!("should wait");
        };
        assert!(delay <= Duration::from_millis(1000));
    }

    #[test]
    fn attempts_are_bounded() {
        assert!(matches!(
            policy().decide(&error(ErrorKind::Server), 4, Duration::ZERO),
            RetryDecision::GiveUp(Some(m)) if m.contains("4 attempts")
        ));
    }

    #[test]
    fn the_providers_delay_is_honoured_unless_it_overruns_the_budget() {
        let limited = error(ErrorKind::RateLimited {
            retry_after: Some(Duration::from_secs(2)),
        });
        assert_eq!(
            policy().decide(&limited, 1, Duration::ZERO),
            RetryDecision::Wait(Duration::from_secs(2))
        );
        assert!(matches!(
            policy().decide(&limited, 2, Duration::from_secs(4)),
            RetryDecision::GiveUp(Some(m)) if m.contains("asked to wait 2 s")
        ));
    }

    #[test]
    fn an_unreachable_url_on_first_contact_gets_seconds_not_minutes() {
        let policy = RetryPolicy::default();
        let unreachable = error(ErrorKind::Unreachable);
        let mut waited = Duration::ZERO;
        let mut attempt = 1;
        loop {
            match policy.decide_with(&unreachable, attempt, waited, true) {
                RetryDecision::Wait(delay) => waited += delay,
                RetryDecision::GiveUp(note) => {
                    assert!(note.unwrap().contains("URL is likely wrong"));
                    break;
                }
            }
            attempt += 1;
        }
        assert!(
            waited <= FIRST_CONTACT_BUDGET && attempt >= 4,
            "{attempt} {waited:?}"
        );
        // Once the provider has answered, it is an outage: the full policy.
        assert!(matches!(
            policy.decide_with(&unreachable, attempt, waited, false),
            RetryDecision::Wait(_)
        ));
        // A web server that is not the API is never asked again.
        assert_eq!(
            policy.decide_with(&error(ErrorKind::Endpoint), 1, Duration::ZERO, true),
            RetryDecision::GiveUp(None)
        );
    }

    #[test]
    fn backoff_never_overruns_the_budget() {
        let RetryDecision::Wait(delay) =
            policy().decide(&error(ErrorKind::Server), 3, Duration::from_millis(4950))
        else {
            panic!("should wait");
        };
        assert!(delay <= Duration::from_millis(50));
    }
}
