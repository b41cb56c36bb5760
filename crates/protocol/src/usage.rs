//! Token usage and normalised stop reasons, the same for every provider.

use serde::{Deserialize, Serialize};

/// Tokens used by one model response (or a sum of several).
///
/// `output_tokens` counts every generated token, reasoning included;
/// `reasoning_tokens` says how many of them were reasoning. `input_tokens`
/// counts the uncached input only; cached input is in `cache_read_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Adds another response's usage to this total.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }

    /// Everything the model was shown: uncached, cache read and cache write.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
    }

    /// The share of the prompt served from the provider's cache, 0–1 (0
    /// when nothing was sent).
    pub fn cache_hit_ratio(&self) -> f64 {
        match self.prompt_tokens() {
            0 => 0.0,
            prompt => self.cache_read_tokens as f64 / prompt as f64,
        }
    }
}

/// Why the model stopped, normalised across providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model wants tools run.
    ToolUse,
    /// The output limit cut the message.
    MaxTokens,
    /// The provider refused (safety, content filter).
    Refusal,
    /// The context window is full.
    ContextOverflow,
    /// The provider paused a long turn; send the message back to continue.
    PauseTurn,
    /// The provider reported an error in the stream.
    Error,
}
