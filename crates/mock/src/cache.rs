//! The prompt cache the mock models (off unless
//! [`crate::MockServer::enable_prompt_cache`] turns it on): a request whose
//! prompt starts like an earlier one's reports the shared part as cache
//! reads, in each wire API's own usage fields.
//!
//! What counts as the prompt is what the providers cache, in their order:
//! the model, the tool definitions, the system instructions, then the
//! messages one by one (Anthropic `tools`/`system`/`messages`, OpenAI Chat
//! `tools`/`messages`, Responses `tools`/`instructions`/`input`, Gemini
//! `tools`/`systemInstruction`/`contents`). Anthropic's `cache_control`
//! markers are left out: moving the breakpoint to the newest message is how a
//! client is meant to use the cache, and it changes no cached content.
//!
//! Invariants:
//! - Tokens are the mock's one count, bytes / 4 ([`crate::tokens`]): the
//!   shared part is the longest common byte prefix with any remembered prompt,
//!   divided by 4, and never more than the request's count.
//! - Nothing under [`MIN_CACHEABLE_TOKENS`] is served from the cache (the
//!   providers' documented minimum for a cacheable prompt).
//! - OpenAI serves cached input in steps of [`OPENAI_CACHE_STEP`] tokens, as
//!   its documentation says; the others to the token.
//! - Anthropic caches only a request that carries a `cache_control`
//!   breakpoint, and then writes every input token it did not read (gyre puts
//!   the last breakpoint on the newest message); OpenAI and Gemini cache
//!   implicitly and report no writes.
//! - Bounded: the [`REMEMBERED`] most recent prompts are kept.

use std::collections::VecDeque;

use serde_json::Value;

use crate::server::Api;

/// Prompts remembered for prefix matching (the providers keep theirs for
/// minutes; a test's conversation reuses the last few).
pub(crate) const REMEMBERED: usize = 16;
/// The smallest prompt that is cached at all.
pub(crate) const MIN_CACHEABLE_TOKENS: u64 = 1_024;
/// OpenAI reports cache hits in increments of this many tokens.
pub(crate) const OPENAI_CACHE_STEP: u64 = 128;

/// How a request's input tokens split between the cache and fresh input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CacheSplit {
    pub read: u64,
    pub write: u64,
}

#[derive(Debug, Default)]
pub(crate) struct PromptCache {
    prompts: VecDeque<String>,
}

impl PromptCache {
    /// The split of a request of `input_tokens` with this `body`; remembers
    /// its prompt for later requests.
    pub fn serve(&mut self, api: Api, model: &str, body: &Value, input_tokens: u64) -> CacheSplit {
        let anthropic = api == Api::Anthropic;
        if anthropic && !has_breakpoint(body) {
            return CacheSplit::default();
        }
        let prompt = prompt_of(api, model, body);
        let shared_bytes = self
            .prompts
            .iter()
            .map(|earlier| common_prefix(earlier, &prompt))
            .max()
            .unwrap_or(0);
        let mut read = (shared_bytes as u64 / 4).min(input_tokens);
        if read < MIN_CACHEABLE_TOKENS {
            read = 0;
        }
        if api == Api::OpenAiChat || api == Api::OpenAiResponses {
            read -= read % OPENAI_CACHE_STEP;
        }
        let cacheable = input_tokens >= MIN_CACHEABLE_TOKENS;
        if cacheable {
            self.prompts.retain(|p| p != &prompt);
            self.prompts.push_back(prompt);
            while self.prompts.len() > REMEMBERED {
                self.prompts.pop_front();
            }
        }
        let write = if anthropic && cacheable {
            input_tokens - read
        } else {
            0
        };
        CacheSplit { read, write }
    }
}

/// The cached parts of a request, in the order the provider caches them.
fn prompt_of(api: Api, model: &str, body: &Value) -> String {
    let fields: &[&str] = match api {
        Api::Anthropic => &["tools", "system", "messages"],
        Api::OpenAiChat => &["tools", "messages"],
        Api::OpenAiResponses => &["tools", "instructions", "input"],
        Api::Gemini => &["tools", "systemInstruction", "contents"],
    };
    let mut prompt = format!("{model}\n");
    for field in fields {
        match body.get(*field) {
            // A list's items one by one, so an appended item extends the
            // prompt rather than changing its closing bracket.
            Some(Value::Array(items)) => {
                for item in items {
                    prompt.push_str(&without_cache_control(item).to_string());
                    prompt.push('\n');
                }
            }
            Some(other) => {
                prompt.push_str(&without_cache_control(other).to_string());
                prompt.push('\n');
            }
            None => {}
        }
        prompt.push_str("\u{1}\n");
    }
    prompt
}

fn has_breakpoint(value: &Value) -> bool {
    match value {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k == "cache_control" || has_breakpoint(v)),
        Value::Array(items) => items.iter().any(has_breakpoint),
        _ => false,
    }
}

/// A request body without its `cache_control` markers: Anthropic's
/// breakpoint moves to the newest message on every request by design, so
/// two requests are compared for a shared prefix without them.
pub fn without_cache_control(value: &Value) -> Value {
    match value {
        Value::Object(map) => map
            .iter()
            .filter(|(k, _)| k.as_str() != "cache_control")
            .map(|(k, v)| (k.clone(), without_cache_control(v)))
            .collect(),
        Value::Array(items) => items.iter().map(without_cache_control).collect(),
        other => other.clone(),
    }
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.as_bytes()
        .iter()
        .zip(b.as_bytes())
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn big(n: usize) -> String {
        "x".repeat(n)
    }

    fn anthropic(messages: &[&str]) -> Value {
        let mut messages: Vec<Value> = messages
            .iter()
            .map(|m| json!({"role": "user", "content": [{"type": "text", "text": m}]}))
            .collect();
        if let Some(last) = messages.last_mut() {
            last["content"][0]["cache_control"] = json!({"type": "ephemeral"});
        }
        json!({"model": "m", "max_tokens": 10, "system": "s", "messages": messages})
    }

    #[test]
    fn an_appended_request_reads_what_it_shares_and_writes_the_rest() {
        let mut cache = PromptCache::default();
        let first = anthropic(&[&big(8_000)]);
        let split = cache.serve(Api::Anthropic, "m", &first, 2_100);
        assert_eq!(
            split,
            CacheSplit {
                read: 0,
                write: 2_100
            }
        );
        // The breakpoint moved to the new message; the old one is unchanged.
        let second = anthropic(&[&big(8_000), &big(4_000)]);
        let split = cache.serve(Api::Anthropic, "m", &second, 3_100);
        assert!((2_000..=2_040).contains(&split.read), "{split:?}");
        assert_eq!(split.read + split.write, 3_100);
        // A changed first message shares only the model and system.
        let changed = anthropic(&[&big(10), &big(4_000)]);
        assert_eq!(cache.serve(Api::Anthropic, "m", &changed, 1_100).read, 0);
        // Another model has its own cache.
        assert_eq!(cache.serve(Api::Anthropic, "n", &second, 3_100).read, 0);
    }

    #[test]
    fn anthropic_without_a_breakpoint_caches_nothing() {
        let mut cache = PromptCache::default();
        let body = json!({"system": "s", "messages": [{"role": "user", "content": big(8_000)}]});
        for _ in 0..2 {
            assert_eq!(
                cache.serve(Api::Anthropic, "m", &body, 2_000),
                CacheSplit::default()
            );
        }
    }

    #[test]
    fn openai_reads_in_steps_and_small_prompts_are_not_cached() {
        let mut cache = PromptCache::default();
        let body = |n: usize| json!({"messages": [{"role": "user", "content": big(n)}]});
        assert_eq!(
            cache.serve(Api::OpenAiChat, "m", &body(8_000), 2_000).read,
            0
        );
        let split = cache.serve(
            Api::OpenAiChat,
            "m",
            &json!({"messages": [
            {"role": "user", "content": big(8_000)}, {"role": "user", "content": "next"}]}),
            2_010,
        );
        assert_eq!(split.read % OPENAI_CACHE_STEP, 0);
        assert_eq!(split.read, 1_920);
        assert_eq!(split.write, 0);
        let mut small = PromptCache::default();
        small.serve(Api::Gemini, "m", &body(400), 100);
        assert_eq!(small.serve(Api::Gemini, "m", &body(400), 100).read, 0);
    }
}
