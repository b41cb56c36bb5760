//! The model catalogue: context window, output limit and prices of current
//! models, so that the loop can budget context and report cost.
//!
//! Prices and limits are the providers' published list prices (standard tier,
//! not batch) as of March 2026. Where a provider charges more for long
//! prompts (Gemini above 200K tokens), the catalogue has the lower, common
//! tier. Anthropic cache writes are the five-minute rate (1.25 × input);
//! OpenAI and Google bill no cache writes, so theirs equal the input price
//! (they report none anyway).
//!
//! Lookups match the model name exactly first, then by the longest known
//! prefix, so dated snapshots and variants find their family
//! (`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`,
//! `gemini-2.5-flash-preview-09-2025`). A prefix matches only at a boundary,
//! and not when what follows is a short version number: `claude-opus-4-7` is
//! a newer model, not a snapshot of `claude-opus-4`, and `gpt-5.9` is not
//! `gpt-5`. A routing prefix (`anthropic/…` on OpenRouter, `models/…` in
//! Gemini's API) is ignored. Unknown models (a local model, say) have no
//! entry; configuration describes them instead.

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

    /// What the prompt cache saved on `usage`, in US dollars: cache reads
    /// at the input price less their price, less what cache writes cost
    /// above the input price (negative when writes outweighed reads).
    pub fn cache_savings(&self, usage: &Usage) -> f64 {
        let read = usage.cache_read_tokens as f64 * (self.input - self.cache_read);
        let write = usage.cache_write_tokens as f64 * (self.cache_write - self.input);
        (read - write) / 1_000_000.0
    }
}

/// The catalogue's entry for `model`, if it has one.
pub fn lookup(model: &str) -> Option<ModelInfo> {
    let name = model.trim();
    let name = name.rsplit_once('/').map_or(name, |(_, last)| last);
    let entry = MODELS.iter().find(|e| e.0 == name).or_else(|| {
        MODELS
            .iter()
            .filter(|e| is_variant(name, e.0))
            .max_by_key(|e| e.0.len())
    })?;
    let (_, context_window, max_output_tokens, [input, output, cache_read, cache_write]) = *entry;
    Some(ModelInfo {
        context_window,
        max_output_tokens,
        pricing: Some(Pricing {
            input,
            output,
            cache_read,
            cache_write,
        }),
    })
}

/// The catalogue's model names, newest families first within each vendor.
pub fn names() -> impl Iterator<Item = &'static str> {
    MODELS.iter().map(|entry| entry.0)
}

/// Whether `model` is an OpenAI reasoning model (o-series, gpt-5 except
/// its chat variants, codex, gpt-oss): these take a reasoning effort and
/// refuse `temperature` and `top_p`.
pub fn rejects_sampling(model: &str) -> bool {
    // "openai/gpt-5" on routers.
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let family = ["o1", "o3", "o4", "gpt-5", "codex", "gpt-oss"]
        .iter()
        .any(|prefix| name.starts_with(prefix));
    family && !name.contains("-chat")
}

/// Whether `model` takes images in its input: every catalogued model
/// does but the text-only ones (`o3-mini`, `o1-mini`); an unknown model is
/// assumed to (its server says otherwise).
pub fn takes_images(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    !["o3-mini", "o1-mini"]
        .iter()
        .any(|family| name == *family || is_variant(name, family))
}

/// Whether `name` is `family` followed by a snapshot or variant suffix.
fn is_variant(name: &str, family: &str) -> bool {
    let Some(rest) = name.strip_prefix(family) else {
        return false;
    };
    let mut chars = rest.chars();
    let Some(separator) = chars.next() else {
        return false;
    };
    if separator.is_ascii_alphanumeric() {
        return false;
    }
    // "-7" or ".1" after the family is another version; "-20250929",
    // "-2024-08-06" or "-preview" is a snapshot or variant of this one.
    let digits = chars.take_while(char::is_ascii_digit).count();
    !(1..=3).contains(&digits) || is_dated(rest)
}

/// `-MM-DD`-style dates (`-05-06`) follow a family too; a two-digit number
/// followed by another two-digit group is a date, not a version.
fn is_dated(rest: &str) -> bool {
    let bytes = rest.as_bytes();
    bytes.len() >= 6
        && bytes[1..3].iter().all(u8::is_ascii_digit)
        && bytes[3] == b'-'
        && bytes[4..6].iter().all(u8::is_ascii_digit)
}

const K: u64 = 1000;
/// The usual "1M" window: 2^20 tokens for Google and OpenAI's 4.1 family.
const MI: u64 = 1 << 20;

/// Name, context window, output limit, [input, output, cache read, cache
/// write] in dollars per million tokens.
type Entry = (&'static str, u64, u64, [f64; 4]);

#[rustfmt::skip]
const MODELS: &[Entry] = &[
    // Anthropic.
    ("claude-opus-4-6", 1_000 * K, 128 * K, [5.0, 25.0, 0.5, 6.25]),
    ("claude-sonnet-4-6", 1_000 * K, 64 * K, [3.0, 15.0, 0.3, 3.75]),
    ("claude-opus-4-5", 200 * K, 64 * K, [5.0, 25.0, 0.5, 6.25]),
    ("claude-sonnet-4-5", 200 * K, 64 * K, [3.0, 15.0, 0.3, 3.75]),
    ("claude-haiku-4-5", 200 * K, 64 * K, [1.0, 5.0, 0.1, 1.25]),
    ("claude-opus-4-1", 200 * K, 32 * K, [15.0, 75.0, 1.5, 18.75]),
    ("claude-opus-4", 200 * K, 32 * K, [15.0, 75.0, 1.5, 18.75]),
    ("claude-sonnet-4", 200 * K, 64 * K, [3.0, 15.0, 0.3, 3.75]),
    ("claude-3-7-sonnet", 200 * K, 64 * K, [3.0, 15.0, 0.3, 3.75]),
    ("claude-3-5-sonnet", 200 * K, 8_192, [3.0, 15.0, 0.3, 3.75]),
    ("claude-3-5-haiku", 200 * K, 8_192, [0.8, 4.0, 0.08, 1.0]),
    ("claude-3-haiku", 200 * K, 4_096, [0.25, 1.25, 0.03, 0.3]),
    ("claude-3-opus", 200 * K, 4_096, [15.0, 75.0, 1.5, 18.75]),
    // OpenAI.
    ("gpt-5.2", 400 * K, 128 * K, [1.75, 14.0, 0.175, 1.75]),
    ("gpt-5.2-pro", 400 * K, 128 * K, [21.0, 168.0, 21.0, 21.0]),
    ("gpt-5.1", 400 * K, 128 * K, [1.25, 10.0, 0.125, 1.25]),
    ("gpt-5", 400 * K, 128 * K, [1.25, 10.0, 0.125, 1.25]),
    ("gpt-5-codex", 400 * K, 128 * K, [1.25, 10.0, 0.125, 1.25]),
    ("gpt-5-mini", 400 * K, 128 * K, [0.25, 2.0, 0.025, 0.25]),
    ("gpt-5-nano", 400 * K, 128 * K, [0.05, 0.4, 0.005, 0.05]),
    ("gpt-5-pro", 400 * K, 272 * K, [15.0, 120.0, 15.0, 15.0]),
    ("gpt-4.1", 1_047_576, 32_768, [2.0, 8.0, 0.5, 2.0]),
    ("gpt-4.1-mini", 1_047_576, 32_768, [0.4, 1.6, 0.1, 0.4]),
    ("gpt-4.1-nano", 1_047_576, 32_768, [0.1, 0.4, 0.025, 0.1]),
    ("gpt-4o", 128 * K, 16_384, [2.5, 10.0, 1.25, 2.5]),
    ("gpt-4o-mini", 128 * K, 16_384, [0.15, 0.6, 0.075, 0.15]),
    ("o3", 200 * K, 100 * K, [2.0, 8.0, 0.5, 2.0]),
    ("o3-mini", 200 * K, 100 * K, [1.1, 4.4, 0.55, 1.1]),
    ("o4-mini", 200 * K, 100 * K, [1.1, 4.4, 0.275, 1.1]),
    ("o1", 200 * K, 100 * K, [15.0, 60.0, 7.5, 15.0]),
    // Google (prompts up to 200K tokens).
    ("gemini-3-pro-preview", MI, 65_536, [2.0, 12.0, 0.2, 2.0]),
    ("gemini-3-flash-preview", MI, 65_536, [0.5, 3.0, 0.05, 0.5]),
    ("gemini-2.5-pro", MI, 65_536, [1.25, 10.0, 0.125, 1.25]),
    ("gemini-2.5-flash", MI, 65_536, [0.3, 2.5, 0.03, 0.3]),
    ("gemini-2.5-flash-lite", MI, 65_536, [0.1, 0.4, 0.01, 0.1]),
    ("gemini-2.0-flash", MI, 8_192, [0.1, 0.4, 0.025, 0.1]),
    ("gemini-2.0-flash-lite", MI, 8_192, [0.075, 0.3, 0.075, 0.075]),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn window(model: &str) -> Option<u64> {
        lookup(model).map(|info| info.context_window)
    }

    fn input_price(model: &str) -> Option<f64> {
        lookup(model).and_then(|info| info.pricing).map(|p| p.input)
    }

    #[test]
    fn exact_names() {
        let sonnet = lookup("claude-sonnet-4-5").unwrap();
        assert_eq!(sonnet.context_window, 200_000);
        assert_eq!(sonnet.max_output_tokens, 64_000);
        assert_eq!(
            sonnet.pricing,
            Some(Pricing {
                input: 3.0,
                output: 15.0,
                cache_read: 0.3,
                cache_write: 3.75
            })
        );
        assert_eq!(input_price("gpt-5-mini"), Some(0.25));
        assert_eq!(input_price("o3"), Some(2.0));
        assert_eq!(window("gemini-2.5-pro"), Some(1_048_576));
        assert_eq!(input_price("gemini-2.5-flash-lite"), Some(0.1));
    }

    #[test]
    fn dated_snapshots_and_variants_find_their_family() {
        assert_eq!(input_price("claude-sonnet-4-5-20250929"), Some(3.0));
        assert_eq!(input_price("claude-opus-4-20250514"), Some(15.0));
        assert_eq!(input_price("claude-opus-4-1-20250805"), Some(15.0));
        assert_eq!(input_price("claude-haiku-4-5-20251001"), Some(1.0));
        assert_eq!(input_price("claude-3-5-haiku-latest"), Some(0.8));
        assert_eq!(input_price("claude-3-7-sonnet-20250219"), Some(3.0));
        assert_eq!(input_price("gpt-4o-2024-08-06"), Some(2.5));
        assert_eq!(input_price("gpt-4o-mini-2024-07-18"), Some(0.15));
        assert_eq!(input_price("gpt-4.1-mini-2025-04-14"), Some(0.4));
        assert_eq!(input_price("gpt-5-2025-08-07"), Some(1.25));
        assert_eq!(input_price("gpt-5.1-codex"), Some(1.25));
        assert_eq!(input_price("o4-mini-2025-04-16"), Some(1.1));
        assert_eq!(input_price("gemini-2.5-flash-preview-09-2025"), Some(0.3));
        assert_eq!(input_price("gemini-2.5-pro-preview-05-06"), Some(1.25));
        assert_eq!(
            input_price("gemini-2.5-flash-lite-preview-06-17"),
            Some(0.1)
        );
    }

    #[test]
    fn the_longest_prefix_wins() {
        assert_eq!(input_price("gpt-5-mini-2025-08-07"), Some(0.25));
        assert_eq!(input_price("gpt-5-nano"), Some(0.05));
        assert_eq!(input_price("o3-mini-2025-01-31"), Some(1.1));
        assert_eq!(input_price("gpt-5.2-pro-2025-12-11"), Some(21.0));
    }

    #[test]
    fn other_versions_and_unknown_models_have_no_entry() {
        assert_eq!(lookup("claude-opus-4-7"), None);
        assert_eq!(lookup("claude-sonnet-4-9-20270101"), None);
        assert_eq!(lookup("gpt-5.9"), None);
        assert_eq!(lookup("gpt-4"), None);
        assert_eq!(lookup("o3x"), None);
        assert_eq!(lookup("gpt-4omni"), None);
        assert_eq!(lookup("llama3.1:8b"), None);
        assert_eq!(lookup(""), None);
    }

    #[test]
    fn routing_prefixes_are_ignored() {
        assert_eq!(input_price("models/gemini-2.5-flash"), Some(0.3));
        assert_eq!(input_price("openai/gpt-4o"), Some(2.5));
        assert_eq!(input_price("anthropic/claude-sonnet-4-5"), Some(3.0));
    }

    #[test]
    fn every_entry_is_sane() {
        for (name, window, output, prices) in MODELS {
            assert!(output < window, "{name}");
            assert!(prices.iter().all(|p| *p > 0.0), "{name}");
            assert!(prices[2] <= prices[0], "{name}: cache reads cost less");
            assert_eq!(
                lookup(name).map(|i| i.context_window),
                Some(*window),
                "{name}"
            );
        }
    }

    #[test]
    fn cost_adds_every_kind_of_token() {
        let pricing = lookup("claude-sonnet-4-5").unwrap().pricing.unwrap();
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            reasoning_tokens: 50_000,
            cache_read_tokens: 2_000_000,
            cache_write_tokens: 400_000,
        };
        // 3 + 1.5 + 0.6 + 1.5; reasoning is part of output, not extra.
        assert!((pricing.cost(&usage) - 6.6).abs() < 1e-9);
    }
}
