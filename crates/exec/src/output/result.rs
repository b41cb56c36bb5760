//! The `result` object (stream-json's last line, the whole `json` output):
//! Claude Code's fields, and gyre's `cache` (with what it saved) and
//! `cost_note` (when the model's prices are unknown).

use gyre_llm::catalog::Pricing;
use gyre_protocol::{FinishReason, RunSummary, Usage};
use serde_json::{Value, json};

use super::set;

/// The `result` object (stream-json's last line, and the whole `json`
/// output) of a run of `model`.
pub fn result_object(summary: &RunSummary, session_id: &str, model: &str) -> Value {
    let usage = &summary.usage;
    let mut result = json!({
        "type": "result",
        "subtype": subtype(summary.reason),
        "is_error": summary.reason != FinishReason::Completed,
        "result": summary.final_text,
        "num_turns": summary.num_turns,
        "session_id": session_id,
        "duration_ms": summary.duration_ms,
        // gyre does not time the provider apart from the run: its whole
        // duration is the upper bound.
        "duration_api_ms": summary.duration_ms,
        "usage": usage_object(usage),
        // 0 when the model's prices are unknown (a local model, say).
        "total_cost_usd": summary.cost_usd,
        "modelUsage": {model: {
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
            "cacheReadInputTokens": usage.cache_read_tokens,
            "cacheCreationInputTokens": usage.cache_write_tokens,
            "webSearchRequests": 0,
            "costUSD": summary.cost_usd,
        }},
        "permission_denials": [],
        // The prompt cache over the run: input served from it, written to
        // it, sent uncached, and the share served.
        "cache": cache_object(usage),
    });
    if let Some(error) = &summary.error {
        set(&mut result, "error", json!(error.message));
    }
    result
}

/// Says in the result's `cost_note` when `model`'s prices are unknown:
/// `total_cost_usd` then counts only the tokens of models with known prices
/// (a subagent's), or is 0.
pub fn with_cost_note(result: &mut Value, model: &str, prices_known: bool) {
    if prices_known {
        return;
    }
    let note = format!(
        "no prices for {model}: total_cost_usd counts only the tokens of models with known prices (subagents'); \
         set input_price and output_price under [models.\"{model}\"] in the config to count its tokens"
    );
    set(result, "cost_note", json!(note));
}

/// The word for how a run ended: the `result` object's `subtype`, and the
/// `status` of a subagent's end.
pub(super) fn subtype(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Completed => "success",
        FinishReason::MaxTurns => "error_max_turns",
        FinishReason::Budget => "error_max_budget_usd",
        FinishReason::LoopGuard | FinishReason::Failed | FinishReason::Cancelled => {
            "error_during_execution"
        }
    }
}

/// Adds what the prompt cache saved (`cache.saved_usd`, US dollars: reads
/// at the input price less their price, less the write premium) to a
/// `result` object, when the model's prices are known; `null` otherwise.
pub fn with_cache_savings(result: &mut Value, usage: &Usage, pricing: Option<&Pricing>) {
    let saved = pricing.map(|p| (p.cache_savings(usage) * 1e6).round() / 1e6);
    if let Some(cache) = result.get_mut("cache").and_then(Value::as_object_mut) {
        cache.insert("saved_usd".into(), json!(saved));
    }
}

fn cache_object(usage: &Usage) -> Value {
    json!({
        "read_tokens": usage.cache_read_tokens,
        "write_tokens": usage.cache_write_tokens,
        "uncached_tokens": usage.input_tokens,
        "hit_ratio": (usage.cache_hit_ratio() * 1_000.0).round() / 1_000.0,
        "saved_usd": null,
    })
}

pub(super) fn usage_object(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
    })
}
