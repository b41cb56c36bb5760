//! Anthropic Messages: `message_start`, a `content_block_start` / deltas /
//! `content_block_stop` triple per block, `message_delta` (stop reason and
//! output tokens), `message_stop`.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{
    Answer, Block, RenderContext, Tokens, argument_value, chunk_text, named_frame, split_even,
};

fn usage(usage: &Tokens) -> Value {
    json!({
        "input_tokens": usage.input,
        "output_tokens": usage.output,
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cache_read,
    })
}

pub(super) fn events(answer: &Answer, ctx: &RenderContext) -> Vec<Bytes> {
    let event = |name: &str, data: Value| named_frame(name, &data);
    let stop_reason = answer.stop_or("tool_use", "end_turn");
    let mut start_usage = usage(&answer.usage);
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
    // Raw frames take no block index.
    let mut index = 0usize;
    for block in &answer.blocks {
        if let Block::Raw(frame) = block {
            out.push(Bytes::from(frame.clone()));
            continue;
        }
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
            Block::Raw(_) => continue,
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
            Block::Raw(_) => {}
        }
        out.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    out.push(event(
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": answer.usage.output},
        }),
    ));
    out.push(event("message_stop", json!({"type": "message_stop"})));
    out
}

pub(super) fn message(answer: &Answer, ctx: &RenderContext) -> Value {
    let content: Vec<Value> = answer
        .blocks
        .iter()
        .filter_map(|block| match block {
            Block::Text(text) => Some(json!({"type": "text", "text": text})),
            Block::Reasoning { text, signature } => Some(
                json!({"type": "thinking", "thinking": text, "signature": signature}),
            ),
            Block::ToolCall {
                id,
                name,
                arguments,
                ..
            } => Some(
                json!({"type": "tool_use", "id": id, "name": name, "input": argument_value(arguments)}),
            ),
            Block::Raw(_) => None,
        })
        .collect();
    json!({
        "id": format!("msg_mock_{}", ctx.turn),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": answer.stop_or("tool_use", "end_turn"),
        "stop_sequence": null,
        "usage": usage(&answer.usage),
    })
}
