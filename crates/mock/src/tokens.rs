//! The mock's one token count of a request: its body's bytes / 4, at least 1
//! (scaled by `MockServer::count_tokens_at` when a test asks for a denser
//! tokenizer).
//!
//! Invariant: the same count is recorded ([`crate::RecordedRequest`]'s
//! `input_tokens`), checked against the script's `context_window`, and
//! reported as the default input usage of an answer. A client that
//! calibrates bytes per token from the reported usage therefore learns the
//! very rule the window check applies; a scripted usage overrides only what
//! is reported, never the check.
//!
//! Trade-off: bytes / 4 is a rough stand-in for a tokenizer, chosen because a
//! test can compute it exactly from the body it sent.

/// The input tokens of a request whose body is `body_bytes` long.
pub(crate) fn input_tokens(body_bytes: usize) -> u64 {
    (body_bytes as u64 / 4).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quarter_of_the_bytes_and_never_zero() {
        assert_eq!(input_tokens(0), 1);
        assert_eq!(input_tokens(7), 1);
        assert_eq!(input_tokens(8), 2);
        assert_eq!(input_tokens(4003), 1000);
    }
}
