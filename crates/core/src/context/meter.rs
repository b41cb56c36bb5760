//! Token estimates: the provider's last reported usage plus an estimate of
//! what was added since.
//!
//! Invariants:
//! - A [`Baseline`] is valid only while the history grows by appending: a
//!   prune or a compaction replaces messages, and the caller drops it.
//! - Bytes per token come from the last response (whole request bytes over
//!   the tokens the provider counted), clamped to a sane range; before the
//!   first report a conservative 3.5 is used (code tokenizes at 3–4).
//! - The BPE (when configured) runs on a blocking thread and loads once per
//!   process, only for a history no usage was reported for yet and large
//!   enough for a decision to depend on the count.

use std::sync::Arc;

use gyre_protocol::{Message, Part, ToolResultContent};

use super::Tokenizer;

/// Bytes per token before the provider reported any usage.
pub(crate) const DEFAULT_BYTES_PER_TOKEN: f64 = 3.5;
/// Bytes counted for an image (about 1,600 tokens at the default ratio).
const IMAGE_BYTES: u64 = 6_000;
/// JSON framing around a message and around each part.
const MESSAGE_OVERHEAD: u64 = 16;
const PART_OVERHEAD: u64 = 24;
/// Below this share of the usable budget a rough count decides nothing.
const PRECISE_COUNT_FROM: f64 = 0.25;

/// The request size the provider reported, and the history length it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Baseline {
    /// Prompt plus output tokens of the last answer.
    pub tokens: u64,
    /// Messages in the history when it was taken (the answer included).
    pub len: usize,
}

/// Counts tokens for one session's requests.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meter {
    /// System prompt and tool schemas, sent with every request.
    pub fixed_bytes: u64,
    pub bytes_per_token: f64,
}

impl Meter {
    pub fn new(fixed_bytes: u64, calibrated: Option<f64>) -> Self {
        Self {
            fixed_bytes,
            bytes_per_token: calibrated.unwrap_or(DEFAULT_BYTES_PER_TOKEN),
        }
    }

    pub fn tokens(&self, bytes: u64) -> u64 {
        (bytes as f64 / self.bytes_per_token).ceil() as u64
    }

    /// The whole request's bytes (system, tools and `history`).
    pub fn request_bytes(&self, history: &[Arc<Message>]) -> u64 {
        self.fixed_bytes + history.iter().map(|m| message_bytes(m)).sum::<u64>()
    }

    /// The estimated prompt tokens of a request sending `history`.
    pub fn estimate(&self, history: &[Arc<Message>], baseline: Option<Baseline>) -> u64 {
        match baseline {
            Some(base) if base.len <= history.len() => {
                let added: u64 = history[base.len..].iter().map(|m| message_bytes(m)).sum();
                base.tokens + self.tokens(added)
            }
            _ => self.tokens(self.request_bytes(history)),
        }
    }

    /// The estimate for a history no usage was reported for, counted with
    /// the BPE when that is configured and the rough count is large enough
    /// to matter (`usable`: the budget it is compared with).
    pub async fn estimate_fresh(
        &self,
        history: &[Arc<Message>],
        tokenizer: Tokenizer,
        usable: u64,
    ) -> u64 {
        let rough = self.estimate(history, None);
        if tokenizer != Tokenizer::O200k || (rough as f64) < usable as f64 * PRECISE_COUNT_FROM {
            return rough;
        }
        let messages = history.to_vec();
        let counted = tokio::task::spawn_blocking(move || count_o200k(&messages)).await;
        match counted {
            Ok(Some(tokens)) => tokens + self.tokens(self.fixed_bytes),
            Ok(None) | Err(_) => rough,
        }
    }

    /// The estimate before a request: from the provider's last count while
    /// it holds (`baseline`), else the whole history counted afresh.
    pub async fn estimate_request(
        &self,
        history: &[Arc<Message>],
        baseline: Option<Baseline>,
        tokenizer: Tokenizer,
        usable: u64,
    ) -> u64 {
        match baseline {
            Some(_) => self.estimate(history, baseline),
            None => self.estimate_fresh(history, tokenizer, usable).await,
        }
    }

    /// Bytes per token of a request that the provider counted as
    /// `prompt_tokens`; `None` when the count is too small to tell.
    pub fn calibrate(request_bytes: u64, prompt_tokens: u64) -> Option<f64> {
        (prompt_tokens >= 64).then(|| (request_bytes as f64 / prompt_tokens as f64).clamp(1.0, 8.0))
    }
}

/// A message's size as sent: its text, arguments and outputs, plus framing.
pub(crate) fn message_bytes(message: &Message) -> u64 {
    MESSAGE_OVERHEAD
        + message
            .parts
            .iter()
            .map(|part| PART_OVERHEAD + part_bytes(part))
            .sum::<u64>()
}

fn part_bytes(part: &Part) -> u64 {
    let len = |s: &str| s.len() as u64;
    match part {
        Part::Text { text } => len(text),
        // Signatures are opaque blobs the provider does not count as text.
        Part::Reasoning { text, .. } => len(text),
        Part::ToolCall(call) => len(&call.id) + len(&call.name) + len(&call.arguments),
        Part::ToolResult(result) => {
            len(&result.call_id)
                + result
                    .content
                    .iter()
                    .map(|c| match c {
                        ToolResultContent::Text { text } => len(text),
                        ToolResultContent::Image { .. } => IMAGE_BYTES,
                    })
                    .sum::<u64>()
        }
        Part::Image { .. } => IMAGE_BYTES,
    }
}

/// Tokens of the history's text under o200k, with the same framing
/// allowance per message and part as the byte count; `None` when the BPE
/// cannot be built.
fn count_o200k(history: &[Arc<Message>]) -> Option<u64> {
    let bpe = super::o200k::bpe()?;
    let count = |text: &str| bpe.encode_ordinary(text).len() as u64;
    let mut tokens = 0;
    for message in history {
        tokens += 4;
        for part in &message.parts {
            tokens += 6 + match part {
                Part::Text { text } | Part::Reasoning { text, .. } => count(text),
                Part::ToolCall(call) => count(&call.name) + count(&call.arguments),
                Part::ToolResult(result) => result
                    .content
                    .iter()
                    .map(|c| match c {
                        ToolResultContent::Text { text } => count(text),
                        ToolResultContent::Image { .. } => IMAGE_BYTES / 4,
                    })
                    .sum(),
                Part::Image { .. } => IMAGE_BYTES / 4,
            };
        }
    }
    Some(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gyre_protocol::{Outcome, Role, ToolCall, ToolResult};

    fn text(id: &str, text: &str) -> Arc<Message> {
        Arc::new(Message::user_text(id, text))
    }

    #[test]
    fn estimates_add_what_came_after_the_baseline() {
        let meter = Meter::new(1_000, Some(4.0));
        let history = vec![text("a", &"x".repeat(4_000)), text("b", &"y".repeat(400))];
        let whole = meter.estimate(&history, None);
        assert_eq!(whole, meter.tokens(1_000 + 4_000 + 400 + 2 * (16 + 24)));
        let base = Baseline { tokens: 7, len: 1 };
        assert_eq!(meter.estimate(&history, Some(base)), 7 + (400 + 40) / 4);
        // A baseline from a longer history (before a compaction) is ignored.
        let stale = Baseline { tokens: 7, len: 5 };
        assert_eq!(meter.estimate(&history, Some(stale)), whole);
    }

    #[test]
    fn calibration_is_bounded() {
        assert_eq!(Meter::calibrate(4_000, 1_000), Some(4.0));
        assert_eq!(Meter::calibrate(100_000, 1_000), Some(8.0));
        assert_eq!(Meter::calibrate(4_000, 10), None);
    }

    #[test]
    fn every_part_is_counted() {
        let call = ToolCall::new("c1", "read", r#"{"file_path":"a"}"#);
        let result = ToolResult::text("c1", "read", "0123456789", Outcome::Success);
        let message = Message::new(
            "m",
            Role::Assistant,
            vec![Part::ToolCall(call), Part::ToolResult(result)],
        );
        assert_eq!(message_bytes(&message), 16 + 24 + 2 + 4 + 17 + 24 + 2 + 10);
    }

    #[tokio::test]
    async fn the_bpe_counts_only_when_it_matters() {
        let meter = Meter::new(0, None);
        let history = vec![text("a", &"hello world ".repeat(500))];
        let rough = meter.estimate(&history, None);
        // Small against the budget: the rough count, no BPE.
        assert_eq!(
            meter
                .estimate_fresh(&history, Tokenizer::O200k, 1_000_000)
                .await,
            rough
        );
        // Large against it: the BPE's count ("hello world " is 2 tokens).
        let precise = meter
            .estimate_fresh(&history, Tokenizer::O200k, 2_000)
            .await;
        assert!((1_000..1_100).contains(&precise), "{precise}");
    }
}
