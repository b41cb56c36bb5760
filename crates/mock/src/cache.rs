//! The prompt cache the mock models (off unless
//! [`crate::MockServer::enable_prompt_cache`] turns it on), each provider
//! as its documentation describes it, reported in each wire API's own usage
//! fields.
//!
//! What counts as the prompt is what the providers cache, in their order:
//! the model, the tool definitions, the system instructions, then the
//! messages one by one (Anthropic `tools`/`system`/`messages`, OpenAI Chat
//! `tools`/`messages`, Responses `tools`/`instructions`/`input`, Gemini
//! `tools`/`systemInstruction`/`contents`).
//!
//! **OpenAI and Gemini** cache implicitly: the longest common prefix with
//! any remembered prompt is read (OpenAI in steps of
//! [`OPENAI_CACHE_STEP`] tokens), nothing is reported as written.
//!
//! **Anthropic** caches explicitly, at `cache_control` breakpoints (its
//! prompt-caching guide):
//! - the prompt is a list of blocks: each tool, each system block, each
//!   message's content blocks (string content is one block);
//! - a breakpoint on a block writes one entry: the prefix ending at that
//!   block; nothing is written at any other position;
//! - a request reads the longest entry that an earlier request wrote and
//!   that ends at one of its breakpoints or at most [`LOOKBACK`] blocks
//!   before one (the "automatic prefix check"): a change before every
//!   reachable entry reads nothing of what follows it;
//! - it writes (`cache_creation_input_tokens`) from there to its last
//!   breakpoint; what follows the last breakpoint is plain input;
//! - the markers themselves are not part of the prefix: moving the
//!   breakpoint to the newest message changes no cached content.
//!
//! This is stricter than a byte prefix: a client that changes the middle of
//! its history (a prune) reads only up to the last entry before the change,
//! and only if that entry is within the lookback of one of its breakpoints.
//!
//! Invariants:
//! - Tokens are the mock's one count ([`crate::tokens`]): OpenAI's and
//!   Gemini's shared part is its bytes / 4; an Anthropic prefix is its share
//!   of the request's count by bytes, so a request whose last block carries
//!   the breakpoint has no plain input.
//! - Nothing under [`MIN_CACHEABLE_TOKENS`] is cached or served (the
//!   providers' documented minimum for a cacheable prompt).
//! - Bounded: the [`REMEMBERED`] most recent prompts and the
//!   [`ENTRIES`] most recent Anthropic entries are kept. Nothing expires
//!   by time (the providers keep an entry five minutes after its last use;
//!   a test's session is shorter).

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashSet, VecDeque};
use std::hash::Hasher;

use serde_json::Value;

use crate::server::Api;

/// Prompts remembered for prefix matching (the providers keep theirs for
/// minutes; a test's conversation reuses the last few).
pub(crate) const REMEMBERED: usize = 16;
/// Anthropic cache entries remembered (a few per request).
pub(crate) const ENTRIES: usize = 256;
/// How many blocks before a breakpoint Anthropic looks for an entry.
pub(crate) const LOOKBACK: usize = 20;
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
    /// Anthropic entries: hashes of the prefixes ending at a breakpoint.
    entries: HashSet<u64>,
    order: VecDeque<u64>,
}

/// One Anthropic block as cached: the hash and byte length of the prefix
/// ending with it, and whether it carries a breakpoint.
#[derive(Debug, Clone, Copy)]
struct Boundary {
    hash: u64,
    bytes: usize,
    breakpoint: bool,
}

impl PromptCache {
    /// The split of a request of `input_tokens` with this `body`; remembers
    /// what it caches for later requests.
    pub fn serve(&mut self, api: Api, model: &str, body: &Value, input_tokens: u64) -> CacheSplit {
        if api == Api::Anthropic {
            return self.serve_anthropic(model, body, input_tokens);
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
        if input_tokens >= MIN_CACHEABLE_TOKENS {
            self.prompts.retain(|p| p != &prompt);
            self.prompts.push_back(prompt);
            while self.prompts.len() > REMEMBERED {
                self.prompts.pop_front();
            }
        }
        CacheSplit { read, write: 0 }
    }

    fn serve_anthropic(&mut self, model: &str, body: &Value, input_tokens: u64) -> CacheSplit {
        let blocks = anthropic_blocks(model, body);
        // A prefix's tokens: its share of the request's count, so the last
        // block ends at exactly `input_tokens`.
        let total = blocks.last().map_or(1, |b| b.bytes.max(1)) as u128;
        let tokens = |b: &Boundary| (u128::from(input_tokens) * b.bytes as u128 / total) as u64;
        let breakpoints: Vec<usize> = (0..blocks.len())
            .filter(|&i| blocks[i].breakpoint)
            .collect();
        let Some(&last) = breakpoints.last() else {
            return CacheSplit::default();
        };
        // The longest earlier entry reachable from a breakpoint.
        let read = breakpoints
            .iter()
            .filter_map(|&b| {
                (b.saturating_sub(LOOKBACK)..=b)
                    .rev()
                    .find(|&i| self.entries.contains(&blocks[i].hash))
            })
            .max()
            .map_or(0, |i| tokens(&blocks[i]));
        let read = if read < MIN_CACHEABLE_TOKENS { 0 } else { read };
        let end = tokens(&blocks[last]);
        let write = if end >= MIN_CACHEABLE_TOKENS {
            end.saturating_sub(read)
        } else {
            0
        };
        for &b in &breakpoints {
            if tokens(&blocks[b]) >= MIN_CACHEABLE_TOKENS && self.entries.insert(blocks[b].hash) {
                self.order.push_back(blocks[b].hash);
                while self.order.len() > ENTRIES {
                    if let Some(old) = self.order.pop_front() {
                        self.entries.remove(&old);
                    }
                }
            }
        }
        CacheSplit { read, write }
    }
}

/// An Anthropic request as its cache sees it: tools, system blocks, then
/// each message's content blocks, in order, each with the prefix ending
/// there.
fn anthropic_blocks(model: &str, body: &Value) -> Vec<Boundary> {
    // Each model has its own cache: the chain of hashes starts with it.
    let mut hasher = DefaultHasher::new();
    hasher.write(model.as_bytes());
    hasher.write_u8(0xff);
    let mut bytes = model.len() + 1;
    let mut out = Vec::new();
    let mut push = |text: &str, breakpoint: bool| {
        hasher.write(text.as_bytes());
        hasher.write_u8(0xff);
        bytes += text.len() + 1;
        out.push(Boundary {
            hash: hasher.finish(),
            bytes,
            breakpoint,
        });
    };
    let marked = |v: &Value| v.get("cache_control").is_some();
    for tool in body["tools"].as_array().into_iter().flatten() {
        push(&without_cache_control(tool).to_string(), marked(tool));
    }
    match &body["system"] {
        Value::Array(items) => {
            for item in items {
                let text = format!("system:{}", without_cache_control(item));
                push(&text, marked(item));
            }
        }
        Value::String(text) => push(&format!("system:{text}"), false),
        _ => {}
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or("");
        match &message["content"] {
            // The role opens the message's first block.
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let opener = if i == 0 { role } else { "" };
                    let text = format!("{opener}:{}", without_cache_control(item));
                    push(&text, marked(item));
                }
            }
            other => push(&format!("{role}:{other}"), false),
        }
    }
    out
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
        assert!((2_000..=2_100).contains(&split.read), "{split:?}");
        assert_eq!(split.read + split.write, 3_100);
        // A changed first message shares only the model and system.
        let changed = anthropic(&[&big(10), &big(4_000)]);
        assert_eq!(cache.serve(Api::Anthropic, "m", &changed, 1_100).read, 0);
        // Another model has its own cache.
        assert_eq!(cache.serve(Api::Anthropic, "n", &second, 3_100).read, 0);
    }

    /// A request of `n` text blocks of `size` bytes in one user message,
    /// with breakpoints on the blocks in `marks`.
    fn blocks(n: usize, size: usize, marks: &[usize]) -> Value {
        let content: Vec<Value> = (0..n)
            .map(|i| {
                let mut block = json!({"type": "text", "text": format!("{i}{}", big(size))});
                if marks.contains(&i) {
                    block["cache_control"] = json!({"type": "ephemeral"});
                }
                block
            })
            .collect();
        json!({"system": "s", "messages": [{"role": "user", "content": content}]})
    }

    #[test]
    fn anthropic_reads_only_entries_an_earlier_breakpoint_wrote() {
        let mut cache = PromptCache::default();
        // 10 blocks of ~1k tokens, one breakpoint at the end.
        let first = blocks(10, 4_000, &[9]);
        assert_eq!(
            cache.serve(Api::Anthropic, "m", &first, 10_000).write,
            10_000
        );
        // The same first nine blocks, a changed tenth: no entry ends before
        // the change, so nothing is read.
        let mut changed = first.clone();
        changed["messages"][0]["content"][9]["text"] = json!("changed");
        let split = cache.serve(Api::Anthropic, "m", &changed, 9_000);
        assert_eq!(split.read, 0, "{split:?}");
        // With a breakpoint on the ninth block too, an entry ends there: a
        // later change after it reads up to it.
        let two = blocks(10, 4_000, &[8, 9]);
        cache.serve(Api::Anthropic, "m", &two, 10_000);
        let mut changed = two.clone();
        changed["messages"][0]["content"][9]["text"] = json!("other");
        let split = cache.serve(Api::Anthropic, "m", &changed, 9_000);
        assert!((8_900..=9_000).contains(&split.read), "{split:?}");
    }

    #[test]
    fn anthropic_looks_back_twenty_blocks_and_no_further() {
        let mut cache = PromptCache::default();
        cache.serve(Api::Anthropic, "m", &blocks(10, 4_000, &[9]), 10_000);
        // 20 more blocks: the entry at block 9 is 20 blocks back.
        let split = cache.serve(Api::Anthropic, "m", &blocks(30, 4_000, &[29]), 30_000);
        assert!(split.read > 9_000, "{split:?}");
        let mut cache = PromptCache::default();
        cache.serve(Api::Anthropic, "m", &blocks(10, 4_000, &[9]), 10_000);
        let split = cache.serve(Api::Anthropic, "m", &blocks(31, 4_000, &[30]), 31_000);
        assert_eq!(split.read, 0, "21 blocks back: {split:?}");
    }

    #[test]
    fn anthropic_input_after_the_last_breakpoint_is_neither_read_nor_written() {
        let mut cache = PromptCache::default();
        let split = cache.serve(Api::Anthropic, "m", &blocks(10, 4_000, &[4]), 10_000);
        assert_eq!(split.read, 0);
        assert!((4_900..=5_100).contains(&split.write), "{split:?}");
        // The next request reads the entry, the tail is plain input again.
        let split = cache.serve(Api::Anthropic, "m", &blocks(10, 4_000, &[4]), 10_000);
        assert!((4_900..=5_100).contains(&split.read), "{split:?}");
        assert_eq!(split.write, 0);
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
