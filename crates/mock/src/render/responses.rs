//! OpenAI Responses: `response.created`, `response.in_progress`, then per
//! output item `response.output_item.added`, its deltas and `.done` events and
//! `response.output_item.done`, then one terminal event
//! (`response.completed`, `response.incomplete` or `response.failed`) that
//! carries the whole response with its usage.
//!
//! Every event is `event: <type>` with `data: {"type": <type>,
//! "sequence_number": n, …}`, `n` counting from 0. One block is one output
//! item: a text is a `message` with one `output_text` part, a reasoning item
//! a `reasoning` item with one summary text (its signature is the
//! `encrypted_content`), a tool call a `function_call`.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{Answer, Block, RenderContext, Tokens, chunk_text, named_frame, split_even};

/// How the response ends, from the scripted stop word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Completed,
    Incomplete(&'static str),
    Failed,
}

impl Ending {
    fn of(answer: &Answer) -> Self {
        match answer.stop.as_deref() {
            Some("max_tokens" | "length" | "max_output_tokens") => {
                Ending::Incomplete("max_output_tokens")
            }
            Some("refusal" | "content_filter") => Ending::Incomplete("content_filter"),
            Some("error" | "failed") => Ending::Failed,
            _ => Ending::Completed,
        }
    }

    fn status(self) -> &'static str {
        match self {
            Ending::Completed => "completed",
            Ending::Incomplete(_) => "incomplete",
            Ending::Failed => "failed",
        }
    }
}

fn usage(usage: &Tokens) -> Value {
    json!({
        "input_tokens": usage.prompt(),
        "input_tokens_details": {"cached_tokens": usage.cache_read},
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning},
        "total_tokens": usage.prompt() + usage.output,
    })
}

/// The response object with the given status, output and usage.
fn response_object(
    ctx: &RenderContext,
    ending: Option<Ending>,
    output: Vec<Value>,
    usage: Value,
) -> Value {
    let (incomplete, error) = match ending {
        Some(Ending::Incomplete(reason)) => (json!({"reason": reason}), Value::Null),
        Some(Ending::Failed) => (
            Value::Null,
            json!({"code": "server_error", "message": "mock: scripted failure"}),
        ),
        Some(Ending::Completed) | None => (Value::Null, Value::Null),
    };
    json!({
        "id": format!("resp_mock_{}", ctx.turn),
        "object": "response",
        "created_at": ctx.created,
        "status": ending.map_or("in_progress", Ending::status),
        "model": ctx.model,
        "output": output,
        "incomplete_details": incomplete,
        "error": error,
        "usage": usage,
    })
}

fn item_id(block: &Block, ctx: &RenderContext, output_index: usize) -> String {
    let prefix = match block {
        Block::Text(_) | Block::Raw(_) => "msg",
        Block::Reasoning { .. } => "rs",
        Block::ToolCall { .. } => "fc",
    };
    format!("{prefix}_mock_{}_{output_index}", ctx.turn)
}

/// A block's output item when complete; `None` for a raw frame.
fn output_item(block: &Block, id: &str) -> Option<Value> {
    Some(match block {
        Block::Text(text) => json!({
            "id": id, "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }),
        Block::Reasoning { text, signature } => json!({
            "id": id, "type": "reasoning",
            "summary": [{"type": "summary_text", "text": text}],
            "encrypted_content": signature,
        }),
        Block::ToolCall {
            id: call_id,
            name,
            arguments,
            ..
        } => json!({
            "id": id, "type": "function_call", "status": "completed",
            "call_id": call_id, "name": name, "arguments": arguments,
        }),
        Block::Raw(_) => return None,
    })
}

/// The final output list.
fn output(answer: &Answer, ctx: &RenderContext) -> Vec<Value> {
    answer
        .blocks
        .iter()
        .filter(|b| !matches!(b, Block::Raw(_)))
        .enumerate()
        .filter_map(|(i, block)| output_item(block, &item_id(block, ctx, i)))
        .collect()
}

/// The whole response (a non-streaming request).
pub(super) fn response(answer: &Answer, ctx: &RenderContext) -> Value {
    let ending = Ending::of(answer);
    response_object(ctx, Some(ending), output(answer, ctx), usage(&answer.usage))
}

/// Frames with their sequence numbers.
struct Events {
    out: Vec<Bytes>,
    next: u64,
}

impl Events {
    fn push(&mut self, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.next);
        self.next += 1;
        self.out.push(named_frame(kind, &data));
    }
}

pub(super) fn events(answer: &Answer, ctx: &RenderContext) -> Vec<Bytes> {
    let mut ev = Events {
        out: Vec::new(),
        next: 0,
    };
    let started = response_object(ctx, None, Vec::new(), Value::Null);
    ev.push("response.created", json!({"response": started}));
    ev.push("response.in_progress", json!({"response": started}));
    let mut output_index = 0usize;
    for block in &answer.blocks {
        if let Block::Raw(frame) = block {
            ev.out.push(Bytes::from(frame.clone()));
            continue;
        }
        let id = item_id(block, ctx, output_index);
        let at = |mut data: Value| {
            data["item_id"] = json!(id);
            data["output_index"] = json!(output_index);
            data
        };
        match block {
            Block::Text(text) => {
                let added = json!({"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []});
                ev.push(
                    "response.output_item.added",
                    json!({"output_index": output_index, "item": added}),
                );
                let part =
                    |text: &str| json!({"type": "output_text", "text": text, "annotations": []});
                ev.push(
                    "response.content_part.added",
                    at(json!({"content_index": 0, "part": part("")})),
                );
                for piece in chunk_text(text) {
                    ev.push(
                        "response.output_text.delta",
                        at(json!({"content_index": 0, "delta": piece, "logprobs": []})),
                    );
                }
                ev.push(
                    "response.output_text.done",
                    at(json!({"content_index": 0, "text": text, "logprobs": []})),
                );
                ev.push(
                    "response.content_part.done",
                    at(json!({"content_index": 0, "part": part(text)})),
                );
            }
            Block::Reasoning { text, .. } => {
                let added = json!({"id": id, "type": "reasoning", "summary": []});
                ev.push(
                    "response.output_item.added",
                    json!({"output_index": output_index, "item": added}),
                );
                let part = |text: &str| json!({"type": "summary_text", "text": text});
                ev.push(
                    "response.reasoning_summary_part.added",
                    at(json!({"summary_index": 0, "part": part("")})),
                );
                for piece in chunk_text(text) {
                    ev.push(
                        "response.reasoning_summary_text.delta",
                        at(json!({"summary_index": 0, "delta": piece})),
                    );
                }
                ev.push(
                    "response.reasoning_summary_text.done",
                    at(json!({"summary_index": 0, "text": text})),
                );
                ev.push(
                    "response.reasoning_summary_part.done",
                    at(json!({"summary_index": 0, "part": part(text)})),
                );
            }
            Block::ToolCall {
                id: call_id,
                name,
                arguments,
                fragments,
                ..
            } => {
                let added = json!({
                    "id": id, "type": "function_call", "status": "in_progress",
                    "call_id": call_id, "name": name, "arguments": "",
                });
                ev.push(
                    "response.output_item.added",
                    json!({"output_index": output_index, "item": added}),
                );
                for piece in split_even(arguments, *fragments) {
                    if !piece.is_empty() {
                        ev.push(
                            "response.function_call_arguments.delta",
                            at(json!({"delta": piece})),
                        );
                    }
                }
                ev.push(
                    "response.function_call_arguments.done",
                    at(json!({"name": name, "arguments": arguments})),
                );
            }
            Block::Raw(_) => {}
        }
        if let Some(item) = output_item(block, &id) {
            ev.push(
                "response.output_item.done",
                json!({"output_index": output_index, "item": item}),
            );
        }
        output_index += 1;
    }
    let ending = Ending::of(answer);
    let kind = match ending {
        Ending::Completed => "response.completed",
        Ending::Incomplete(_) => "response.incomplete",
        Ending::Failed => "response.failed",
    };
    let last = response_object(ctx, Some(ending), output(answer, ctx), usage(&answer.usage));
    ev.push(kind, json!({"response": last}));
    ev.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::{Item, StreamReply};
    use crate::server::Api;

    fn answer(items: Vec<Item>) -> Answer {
        let ctx = RenderContext {
            turn: 1,
            id_stem: "1".into(),
            input_tokens: 10,
            cache: crate::cache::CacheSplit::default(),
            model: "m".into(),
            include_usage: false,
            created: 0,
        };
        let reply = StreamReply {
            items,
            ..StreamReply::default()
        };
        Answer::new(Api::OpenAiResponses, &reply, &ctx)
    }

    #[test]
    fn stop_words_map_to_endings() {
        for (word, ending) in [
            ("max_tokens", Ending::Incomplete("max_output_tokens")),
            ("length", Ending::Incomplete("max_output_tokens")),
            ("refusal", Ending::Incomplete("content_filter")),
            ("content_filter", Ending::Incomplete("content_filter")),
            ("error", Ending::Failed),
            ("end_turn", Ending::Completed),
        ] {
            assert_eq!(
                Ending::of(&answer(vec![Item::Stop(word.into())])),
                ending,
                "{word}"
            );
        }
        assert_eq!(Ending::of(&answer(vec![])), Ending::Completed);
    }

    #[test]
    fn usage_counts_cached_input_and_reasoning() {
        let answer = answer(vec![
            Item::Usage {
                input_tokens: 10,
                output_tokens: 8,
                cache_read_tokens: 30,
                cache_write_tokens: 2,
            },
            Item::ReasoningTokens(5),
        ]);
        let usage = usage(&answer.usage);
        assert_eq!(usage["input_tokens"], 42);
        assert_eq!(usage["input_tokens_details"]["cached_tokens"], 30);
        assert_eq!(usage["output_tokens_details"]["reasoning_tokens"], 5);
        assert_eq!(usage["total_tokens"], 50);
    }
}
