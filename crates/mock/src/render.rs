//! Rendering a scripted answer in a provider's wire format: SSE events for
//! streaming requests, one JSON document otherwise, and the providers' error
//! JSON.
//!
//! Invariants:
//! - Every SSE frame is one whole event ending in a blank line, so a fault
//!   that counts events ([`crate::StreamReply::cut_after_events`]) counts what
//!   a client's parser counts.
//! - Text and reasoning deltas hold at most [`TEXT_CHUNK_CHARS`] characters,
//!   split on character boundaries (never inside a UTF-8 sequence).
//! - Tool-call ids the script leaves out are `toolu_<turn>_<k>` (Anthropic) or
//!   `call_<turn>_<k>` (OpenAI), `k` counting the answer's tool calls from 0.
//! - Usage: a scripted [`Item::Usage`] is reported as given; OpenAI's
//!   `prompt_tokens` counts all input (`input + cache_read + cache_write`) and
//!   `cached_tokens` is `cache_read`, so a client that subtracts the cached
//!   part gets the scripted `input_tokens` back. Without one, input is the
//!   request body's bytes / 4 and output the answer's bytes / 4, each at
//!   least 1.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::script::{Item, StreamReply};
use crate::server::Api;

/// The longest text or reasoning delta, in characters.
pub(crate) const TEXT_CHUNK_CHARS: usize = 16;
const DEFAULT_FRAGMENTS: usize = 3;

/// What the renderer needs to know about the request.
#[derive(Debug, Clone)]
pub(crate) struct RenderContext {
    pub turn: u32,
    pub request_bytes: usize,
    /// Echoed from the request (`mock-model` when absent).
    pub model: String,
    /// OpenAI `stream_options.include_usage`.
    pub include_usage: bool,
    /// Unix seconds, for OpenAI's `created`.
    pub created: u64,
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
        name: String,
        arguments: String,
        fragments: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tokens {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
}

/// The answer with every default filled in for one API.
#[derive(Debug, Clone)]
struct Answer {
    blocks: Vec<Block>,
    stop_reason: String,
    usage: Tokens,
}

impl Answer {
    fn new(api: Api, reply: &StreamReply, ctx: &RenderContext) -> Self {
        let mut blocks = Vec::new();
        let mut stop = None;
        let mut usage = None;
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
                        Api::OpenAiChat => "call",
                    };
                    blocks.push(Block::ToolCall {
                        id: id
                            .clone()
                            .unwrap_or_else(|| format!("{prefix}_{}_{calls}", ctx.turn)),
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
                        cache_read: *cache_read_tokens,
                        cache_write: *cache_write_tokens,
                    })
                }
                Item::Stop(reason) => stop = Some(reason.clone()),
            }
        }
        let stop_reason = stop.unwrap_or_else(|| {
            let word = match (api, calls > 0) {
                (Api::Anthropic, true) => "tool_use",
                (Api::Anthropic, false) => "end_turn",
                (Api::OpenAiChat, true) => "tool_calls",
                (Api::OpenAiChat, false) => "stop",
            };
            word.to_string()
        });
        let usage = usage.unwrap_or_else(|| {
            let answer_bytes: usize = blocks
                .iter()
                .map(|b| match b {
                    Block::Text(text) | Block::Reasoning { text, .. } => text.len(),
                    Block::ToolCall { arguments, .. } => arguments.len(),
                })
                .sum();
            Tokens {
                input: (ctx.request_bytes as u64 / 4).max(1),
                output: (answer_bytes as u64 / 4).max(1),
                cache_read: 0,
                cache_write: 0,
            }
        });
        Self {
            blocks,
            stop_reason,
            usage,
        }
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

/// The SSE frames of a streamed answer.
pub(crate) fn sse_events(api: Api, reply: &StreamReply, ctx: &RenderContext) -> Vec<Bytes> {
    let answer = Answer::new(api, reply, ctx);
    match api {
        Api::Anthropic => anthropic_events(&answer, ctx),
        Api::OpenAiChat => openai_chunks(&answer, ctx),
    }
}

/// The whole answer as one JSON document (non-streaming requests).
pub(crate) fn whole_response(api: Api, reply: &StreamReply, ctx: &RenderContext) -> Value {
    let answer = Answer::new(api, reply, ctx);
    match api {
        Api::Anthropic => anthropic_message(&answer, ctx),
        Api::OpenAiChat => openai_completion(&answer, ctx),
    }
}

fn anthropic_usage(usage: &Tokens) -> Value {
    json!({
        "input_tokens": usage.input,
        "output_tokens": usage.output,
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cache_read,
    })
}

fn anthropic_events(answer: &Answer, ctx: &RenderContext) -> Vec<Bytes> {
    fn event(name: &str, data: Value) -> Bytes {
        Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
    }
    let mut start_usage = anthropic_usage(&answer.usage);
    // The real API reports a placeholder output count at the start and the
    // true one in `message_delta`.
    start_usage["output_tokens"] = json!(1);
    let mut out = vec![event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": format!("msg_mock_{}", ctx.turn),
            "type": "message",
            "role": "assistant",
            "model": ctx.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": start_usage,
        }}),
    )];
    for (index, block) in answer.blocks.iter().enumerate() {
        let delta = |delta: Value| {
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            )
        };
        let content_block = match block {
            Block::Text(_) => json!({"type": "text", "text": ""}),
            Block::Reasoning { .. } => json!({"type": "thinking", "thinking": "", "signature": ""}),
            Block::ToolCall { id, name, .. } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": {}})
            }
        };
        out.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": content_block}),
        ));
        match block {
            Block::Text(text) => out.extend(
                chunk_text(text)
                    .into_iter()
                    .map(|t| delta(json!({"type": "text_delta", "text": t}))),
            ),
            Block::Reasoning { text, signature } => {
                out.extend(
                    chunk_text(text)
                        .into_iter()
                        .map(|t| delta(json!({"type": "thinking_delta", "thinking": t}))),
                );
                out.push(delta(
                    json!({"type": "signature_delta", "signature": signature}),
                ));
            }
            Block::ToolCall {
                arguments,
                fragments,
                ..
            } => out.extend(
                split_even(arguments, *fragments)
                    .into_iter()
                    .map(|p| delta(json!({"type": "input_json_delta", "partial_json": p}))),
            ),
        }
        out.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    out.push(event(
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": {"stop_reason": answer.stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": answer.usage.output},
        }),
    ));
    out.push(event("message_stop", json!({"type": "message_stop"})));
    out
}

fn anthropic_message(answer: &Answer, ctx: &RenderContext) -> Value {
    let content: Vec<Value> = answer
        .blocks
        .iter()
        .map(|block| match block {
            Block::Text(text) => json!({"type": "text", "text": text}),
            Block::Reasoning { text, signature } => {
                json!({"type": "thinking", "thinking": text, "signature": signature})
            }
            Block::ToolCall {
                id,
                name,
                arguments,
                ..
            } => {
                // `input` must be JSON; scripted invalid arguments travel as a
                // JSON string so that the client still sees them.
                let input = serde_json::from_str::<Value>(arguments)
                    .unwrap_or_else(|_| Value::String(arguments.clone()));
                json!({"type": "tool_use", "id": id, "name": name, "input": input})
            }
        })
        .collect();
    json!({
        "id": format!("msg_mock_{}", ctx.turn),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": answer.stop_reason,
        "stop_sequence": null,
        "usage": anthropic_usage(&answer.usage),
    })
}

fn openai_usage(usage: &Tokens) -> Value {
    let prompt = usage.input + usage.cache_read + usage.cache_write;
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": usage.output,
        "total_tokens": prompt + usage.output,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read},
    })
}

fn openai_chunks(answer: &Answer, ctx: &RenderContext) -> Vec<Bytes> {
    let id = format!("chatcmpl-mock-{}", ctx.turn);
    let chunk = |delta: Value, finish_reason: Value| {
        let data = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        });
        Bytes::from(format!("data: {data}\n\n"))
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let mut call_index = 0usize;
    for block in &answer.blocks {
        match block {
            Block::Text(text) => out.extend(
                chunk_text(text)
                    .into_iter()
                    .map(|t| chunk(json!({"content": t}), Value::Null)),
            ),
            Block::Reasoning { text, .. } => out.extend(
                chunk_text(text)
                    .into_iter()
                    .map(|t| chunk(json!({"reasoning_content": t}), Value::Null)),
            ),
            Block::ToolCall {
                id,
                name,
                arguments,
                fragments,
            } => {
                out.push(chunk(
                    json!({"tool_calls": [{
                        "index": call_index,
                        "id": id,
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }]}),
                    Value::Null,
                ));
                out.extend(
                    split_even(arguments, *fragments)
                        .into_iter()
                        .filter(|p| !p.is_empty())
                        .map(|p| {
                            chunk(
                                json!({"tool_calls": [{"index": call_index, "function": {"arguments": p}}]}),
                                Value::Null,
                            )
                        }),
                );
                call_index += 1;
            }
        }
    }
    out.push(chunk(json!({}), json!(answer.stop_reason)));
    if ctx.include_usage {
        let data = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [],
            "usage": openai_usage(&answer.usage),
        });
        out.push(Bytes::from(format!("data: {data}\n\n")));
    }
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    out
}

fn openai_completion(answer: &Answer, ctx: &RenderContext) -> Value {
    let mut message = json!({"role": "assistant", "content": answer.text()});
    if let Some(reasoning) = answer.reasoning() {
        message["reasoning_content"] = json!(reasoning);
    }
    let calls: Vec<Value> = answer
        .tool_calls()
        .map(|(id, name, arguments, _)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
        })
        .collect();
    if !calls.is_empty() {
        message["tool_calls"] = json!(calls);
    }
    json!({
        "id": format!("chatcmpl-mock-{}", ctx.turn),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": answer.stop_reason}],
        "usage": openai_usage(&answer.usage),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> RenderContext {
        RenderContext {
            turn: 2,
            request_bytes: 400,
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
        assert_eq!(answer.stop_reason, "tool_calls");
        assert_eq!(answer.usage.input, 100);
        assert_eq!(answer.usage.output, (12 + 7) / 4);
        let (id, _, args, fragments) = answer.tool_calls().next().expect("a call");
        assert_eq!((id, args, fragments), ("call_2_0", r#"{"a":1}"#, 3));
        let anthropic = Answer::new(Api::Anthropic, &reply, &ctx());
        assert_eq!(anthropic.stop_reason, "tool_use");
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
