//! OpenAI Chat Completions: `chat.completion.chunk`s (a role chunk, content,
//! `reasoning_content` and `tool_calls` deltas, a finish chunk, an optional
//! usage chunk) and `data: [DONE]`.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{Answer, Block, RenderContext, Tokens, chunk_text, data_frame, split_even};

const STOP_WORDS: (&str, &str) = ("tool_calls", "stop");

pub(super) fn usage(usage: &Tokens) -> Value {
    let prompt = usage.prompt();
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": usage.output,
        "total_tokens": prompt + usage.output,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
    })
}

pub(super) fn chunks(answer: &Answer, ctx: &RenderContext) -> Vec<Bytes> {
    let id = format!("chatcmpl-mock-{}", ctx.turn);
    let chunk = |delta: Value, finish_reason: Value| {
        let data = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        });
        data_frame(&data)
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
                ..
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
            Block::Raw(frame) => out.push(Bytes::from(frame.clone())),
        }
    }
    let (with_calls, without) = STOP_WORDS;
    out.push(chunk(json!({}), json!(answer.stop_or(with_calls, without))));
    if ctx.include_usage {
        let data = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [],
            "usage": usage(&answer.usage),
        });
        out.push(data_frame(&data));
    }
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    out
}

pub(super) fn completion(answer: &Answer, ctx: &RenderContext) -> Value {
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
    let (with_calls, without) = STOP_WORDS;
    json!({
        "id": format!("chatcmpl-mock-{}", ctx.turn),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": answer.stop_or(with_calls, without)}],
        "usage": usage(&answer.usage),
    })
}
