//! Rendering a scripted answer in a provider's wire format: SSE events for
//! streaming requests, one JSON document otherwise. One submodule per wire
//! API; this module fills in the answer's defaults once for all of them.
//!
//! Invariants:
//! - Every SSE frame is one whole event ending in a blank line (`\n\n`; a
//!   scripted [`Item::RawEvent`] is sent as given), so a fault that counts
//!   events ([`crate::At::Events`]) counts what a client's parser counts.
//! - Text and reasoning deltas hold at most [`TEXT_CHUNK_CHARS`] characters,
//!   split on character boundaries (never inside a UTF-8 sequence).
//! - Tool-call ids the script leaves out are `toolu_<turn>_<k>` (Anthropic) or
//!   `call_<turn>_<k>` (OpenAI Chat and Responses `call_id`), `k` counting the
//!   answer's tool calls from 0; when the request's history already holds
//!   such an id (a compacted history counts turns from 0 again), `<turn>`
//!   becomes `<turn>r<round>`, the first round not in it. Gemini calls carry
//!   no id unless scripted.
//! - Usage: a scripted [`Item::Usage`] is reported as given; where a provider
//!   counts cached input inside its input total (OpenAI `prompt_tokens` and
//!   `input_tokens`, Gemini `promptTokenCount`) that total is
//!   `input + cache_read + cache_write` and the cached part is `cache_read`,
//!   so a client that subtracts the cached part gets the scripted
//!   `input_tokens` back. Output tokens include reasoning tokens (Gemini's
//!   `candidatesTokenCount` is output minus `thoughtsTokenCount`). Without a
//!   scripted usage, input is the request's count ([`crate::tokens`]: its
//!   body's bytes / 4, the count the `context_window` check uses) and output
//!   the answer's bytes / 4, each at least 1; with the prompt cache modelled
//!   ([`crate::cache`]) that input splits into uncached, read and written
//!   tokens as the cache says.
//! - Stop reasons: Anthropic and Chat send the scripted word as is. Responses
//!   maps `max_tokens`/`length`/`max_output_tokens` to `response.incomplete`
//!   with reason `max_output_tokens`, `refusal`/`content_filter` to
//!   `response.incomplete` with `content_filter`, `error`/`failed` to
//!   `response.failed`, and anything else to `response.completed`. Gemini maps
//!   `end_turn`/`tool_use`/`stop`/`tool_calls` to `STOP`,
//!   `max_tokens`/`length` to `MAX_TOKENS`, `refusal`/`content_filter` to
//!   `SAFETY`, `error` to `MALFORMED_FUNCTION_CALL`, and sends any other word
//!   as is (so `RECITATION` can be scripted).

mod anthropic;
mod gemini;
mod openai_chat;
mod responses;

use bytes::Bytes;
use serde_json::Value;

use crate::cache::CacheSplit;
use crate::script::{Item, StreamReply};
use crate::server::Api;

/// The longest text or reasoning delta, in characters.
pub(crate) const TEXT_CHUNK_CHARS: usize = 16;
const DEFAULT_FRAGMENTS: usize = 3;

/// What the renderer needs to know about the request.
#[derive(Debug, Clone)]
pub(crate) struct RenderContext {
    pub turn: u32,
    /// What made-up call ids are built from: the turn, or the turn and a
    /// round when the history already uses the turn's ids.
    pub id_stem: String,
    /// The request's token count ([`crate::tokens::input_tokens`]), the
    /// default input usage.
    pub input_tokens: u64,
    /// How much of `input_tokens` the modelled prompt cache served or wrote
    /// (zero when it is off): the default usage reports it.
    pub cache: CacheSplit,
    /// Echoed from the request (`mock-model` when absent).
    pub model: String,
    /// OpenAI Chat `stream_options.include_usage`.
    pub include_usage: bool,
    /// Unix seconds, for OpenAI's `created`/`created_at`.
    pub created: u64,
}

/// How the client asked for the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Server-sent events.
    Sse,
    /// One JSON document.
    Whole,
    /// Gemini's `streamGenerateContent` without `alt=sse`: a JSON array of
    /// chunks, sent one element at a time.
    JsonArray,
}

impl Shape {
    pub fn content_type(self) -> &'static str {
        match self {
            Shape::Sse => "text/event-stream",
            Shape::Whole | Shape::JsonArray => "application/json",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Block {
    Text(String),
    Reasoning {
        text: String,
        signature: String,
    },
    ToolCall {
        id: String,
        /// The script named the id (Gemini sends only scripted ids).
        scripted_id: bool,
        name: String,
        arguments: String,
        fragments: usize,
    },
    /// A frame sent as is.
    Raw(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tokens {
    input: u64,
    /// Includes `reasoning`.
    output: u64,
    reasoning: u64,
    cache_read: u64,
    cache_write: u64,
}

impl Tokens {
    /// All input, cached or not.
    fn prompt(&self) -> u64 {
        self.input + self.cache_read + self.cache_write
    }
}

/// The answer with every API-independent default filled in.
#[derive(Debug, Clone)]
struct Answer {
    blocks: Vec<Block>,
    /// The scripted stop word, if any.
    stop: Option<String>,
    usage: Tokens,
}

impl Answer {
    fn new(api: Api, reply: &StreamReply, ctx: &RenderContext) -> Self {
        let mut blocks = Vec::new();
        let mut stop = None;
        let mut usage = None;
        let mut reasoning_tokens = None;
        let mut calls = 0usize;
        for item in &reply.items {
            match item {
                Item::Text(text) => blocks.push(Block::Text(text.clone())),
                Item::Reasoning { text, signature } => blocks.push(Block::Reasoning {
                    text: text.clone(),
                    signature: signature
                        .clone()
                        .unwrap_or_else(|| format!("mock_sig_{}_{}", ctx.turn, blocks.len())),
                }),
                Item::ToolCall {
                    id,
                    name,
                    arguments,
                    fragments,
                } => {
                    let prefix = match api {
                        Api::Anthropic => "toolu",
                        Api::OpenAiChat | Api::OpenAiResponses | Api::Gemini => "call",
                    };
                    blocks.push(Block::ToolCall {
                        id: id
                            .clone()
                            .unwrap_or_else(|| format!("{prefix}_{}_{calls}", ctx.id_stem)),
                        scripted_id: id.is_some(),
                        name: name.clone(),
                        arguments: argument_text(arguments),
                        fragments: fragments.unwrap_or(DEFAULT_FRAGMENTS).max(1),
                    });
                    calls += 1;
                }
                Item::Usage {
                    input_tokens,
                    output_tokens,
                    cache_read_tokens,
                    cache_write_tokens,
                } => {
                    usage = Some(Tokens {
                        input: *input_tokens,
                        output: *output_tokens,
                        reasoning: 0,
                        cache_read: *cache_read_tokens,
                        cache_write: *cache_write_tokens,
                    })
                }
                Item::ReasoningTokens(n) => reasoning_tokens = Some(*n),
                Item::Stop(reason) => stop = Some(reason.clone()),
                Item::RawEvent(frame) => blocks.push(Block::Raw(frame.clone())),
            }
        }
        let bytes_of =
            |pick: fn(&Block) -> usize| -> u64 { blocks.iter().map(pick).sum::<usize>() as u64 };
        let mut usage = usage.unwrap_or_else(|| Tokens {
            input: ctx
                .input_tokens
                .saturating_sub(ctx.cache.read + ctx.cache.write),
            output: (bytes_of(|b| match b {
                Block::Text(text) | Block::Reasoning { text, .. } => text.len(),
                Block::ToolCall { arguments, .. } => arguments.len(),
                Block::Raw(_) => 0,
            }) / 4)
                .max(1),
            reasoning: 0,
            cache_read: ctx.cache.read,
            cache_write: ctx.cache.write,
        });
        usage.reasoning = reasoning_tokens
            .unwrap_or_else(|| {
                bytes_of(|b| match b {
                    Block::Reasoning { text, .. } => text.len(),
                    _ => 0,
                }) / 4
            })
            .min(usage.output);
        Self {
            blocks,
            stop,
            usage,
        }
    }

    fn has_tool_calls(&self) -> bool {
        self.blocks
            .iter()
            .any(|b| matches!(b, Block::ToolCall { .. }))
    }

    /// The scripted stop word, or the API's word for "called tools" / "done".
    fn stop_or(&self, with_calls: &str, without: &str) -> String {
        self.stop.clone().unwrap_or_else(|| {
            if self.has_tool_calls() {
                with_calls
            } else {
                without
            }
            .to_string()
        })
    }

    fn text(&self) -> Option<String> {
        self.joined(|b| match b {
            Block::Text(text) => Some(text),
            _ => None,
        })
    }

    fn reasoning(&self) -> Option<String> {
        self.joined(|b| match b {
            Block::Reasoning { text, .. } => Some(text),
            _ => None,
        })
    }

    fn joined(&self, pick: impl Fn(&Block) -> Option<&String>) -> Option<String> {
        let parts: Vec<&String> = self.blocks.iter().filter_map(pick).collect();
        (!parts.is_empty()).then(|| parts.into_iter().map(String::as_str).collect())
    }

    fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &str, usize)> {
        self.blocks.iter().filter_map(|b| match b {
            Block::ToolCall {
                id,
                name,
                arguments,
                fragments,
                ..
            } => Some((id.as_str(), name.as_str(), arguments.as_str(), *fragments)),
            _ => None,
        })
    }
}

/// A JSON value is sent as its JSON text, a string as is.
fn argument_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

/// Scripted arguments as a JSON value: invalid JSON travels as a JSON string,
/// so that the client still sees it (for APIs whose arguments are objects).
fn argument_value(arguments: &str) -> Value {
    serde_json::from_str::<Value>(arguments).unwrap_or_else(|_| Value::String(arguments.into()))
}

/// One SSE frame with only a `data:` line.
fn data_frame(data: &Value) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

/// One SSE frame with an `event:` and a `data:` line.
fn named_frame(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// Splits `text` into at most `max_pieces` non-empty pieces of near-equal
/// character counts; an empty text is one empty piece.
pub(crate) fn split_even(text: &str, max_pieces: usize) -> Vec<&str> {
    let chars = text.chars().count();
    if chars == 0 {
        return vec![""];
    }
    let pieces = max_pieces.clamp(1, chars);
    let (base, extra) = (chars / pieces, chars % pieces);
    let boundaries: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .collect();
    let mut out = Vec::with_capacity(pieces);
    let mut start_char = 0;
    for piece in 0..pieces {
        let len = base + usize::from(piece < extra);
        let (from, to) = (boundaries[start_char], boundaries[start_char + len]);
        out.push(&text[from..to]);
        start_char += len;
    }
    out
}

/// Splits `text` into pieces of at most [`TEXT_CHUNK_CHARS`] characters.
pub(crate) fn chunk_text(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest
            .char_indices()
            .nth(TEXT_CHUNK_CHARS)
            .map_or(rest.len(), |(i, _)| i);
        let (head, tail) = rest.split_at(end);
        out.push(head);
        rest = tail;
    }
    out
}

/// The frames of the answer's body: SSE events, or one JSON document (a
/// Gemini JSON array: one frame per element).
pub(crate) fn render(
    api: Api,
    shape: Shape,
    reply: &StreamReply,
    ctx: &RenderContext,
) -> Vec<Bytes> {
    let answer = Answer::new(api, reply, ctx);
    let whole = |value: Value| vec![Bytes::from(value.to_string())];
    match (api, shape) {
        (Api::Anthropic, Shape::Sse) => anthropic::events(&answer, ctx),
        (Api::Anthropic, _) => whole(anthropic::message(&answer, ctx)),
        (Api::OpenAiChat, Shape::Sse) => openai_chat::chunks(&answer, ctx),
        (Api::OpenAiChat, _) => whole(openai_chat::completion(&answer, ctx)),
        (Api::OpenAiResponses, Shape::Sse) => responses::events(&answer, ctx),
        (Api::OpenAiResponses, _) => whole(responses::response(&answer, ctx)),
        (Api::Gemini, Shape::Sse | Shape::JsonArray) => gemini::stream(&answer, ctx, shape),
        (Api::Gemini, Shape::Whole) => whole(gemini::whole(&answer, ctx)),
    }
}

/// The whole answer as one JSON document (for unit tests).
#[cfg(test)]
pub(crate) fn whole_response(api: Api, reply: &StreamReply, ctx: &RenderContext) -> Value {
    let frames = render(api, Shape::Whole, reply, ctx);
    serde_json::from_slice(&frames.concat()).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ctx() -> RenderContext {
        RenderContext {
            turn: 2,
            id_stem: "2".into(),
            input_tokens: 100,
            cache: crate::cache::CacheSplit::default(),
            model: "m".into(),
            include_usage: true,
            created: 7,
        }
    }

    #[test]
    fn text_chunks_respect_char_boundaries() {
        let text = "ééééééééééééééééé-abc"; // 17 two-byte chars, then ASCII
        let chunks = chunk_text(text);
        assert_eq!(chunks.concat(), text);
        assert!(chunks.iter().all(|c| c.chars().count() <= TEXT_CHUNK_CHARS));
        assert_eq!(chunks.len(), 2);
        assert!(chunk_text("").is_empty());
    }

    #[test]
    fn arguments_split_into_at_most_n_even_pieces() {
        assert_eq!(split_even("abcdefghij", 3), vec!["abcd", "efg", "hij"]);
        assert_eq!(split_even("ab", 3), vec!["a", "b"]);
        assert_eq!(split_even("", 3), vec![""]);
        assert_eq!(split_even("añb", 0), vec!["añb"]);
    }

    #[test]
    fn defaults_fill_ids_stop_and_usage() {
        let reply = StreamReply {
            items: vec![
                Item::Text("hello world!".into()),
                Item::ToolCall {
                    id: None,
                    name: "read".into(),
                    arguments: json!({"a": 1}),
                    fragments: None,
                },
            ],
            ..StreamReply::default()
        };
        let answer = Answer::new(Api::OpenAiChat, &reply, &ctx());
        assert_eq!(answer.stop_or("tool_calls", "stop"), "tool_calls");
        assert_eq!(answer.usage.input, 100);
        assert_eq!(answer.usage.output, (12 + 7) / 4);
        let (id, _, args, fragments) = answer.tool_calls().next().expect("a call");
        assert_eq!((id, args, fragments), ("call_2_0", r#"{"a":1}"#, 3));
        let anthropic = Answer::new(Api::Anthropic, &reply, &ctx());
        assert_eq!(
            anthropic.tool_calls().next().map(|c| c.0),
            Some("toolu_2_0")
        );
        assert_eq!(answer.usage.reasoning, 0);
    }

    #[test]
    fn openai_prompt_tokens_include_the_cache() {
        let reply = StreamReply {
            items: vec![
                Item::Usage {
                    input_tokens: 10,
                    output_tokens: 5,
                    cache_read_tokens: 30,
                    cache_write_tokens: 0,
                },
                Item::Stop("length".into()),
            ],
            ..StreamReply::default()
        };
        let whole = whole_response(Api::OpenAiChat, &reply, &ctx());
        assert_eq!(whole["usage"]["prompt_tokens"], 40);
        assert_eq!(whole["usage"]["prompt_tokens_details"]["cached_tokens"], 30);
        assert_eq!(whole["choices"][0]["finish_reason"], "length");
        assert_eq!(whole["choices"][0]["message"]["content"], Value::Null);
    }

    #[test]
    fn invalid_scripted_arguments_survive_a_whole_anthropic_message() {
        let reply = StreamReply {
            items: vec![Item::ToolCall {
                id: Some("t".into()),
                name: "x".into(),
                arguments: json!("{oops"),
                fragments: None,
            }],
            ..StreamReply::default()
        };
        let whole = whole_response(Api::Anthropic, &reply, &ctx());
        assert_eq!(whole["content"][0]["input"], "{oops");
        assert_eq!(whole["stop_reason"], "tool_use");
    }
}
