//! Gemini `generateContent` / `streamGenerateContent`: each chunk is a whole
//! `GenerateContentResponse` (`candidates[0].content.parts`, `modelVersion`,
//! `responseId`), sent as `data: {…}` with `alt=sse` or as the elements of one
//! JSON array without it.
//!
//! Parts: text pieces `{"text"}`; reasoning pieces `{"text", "thought": true}`,
//! the last piece of a reasoning item also carrying `thoughtSignature`;
//! consecutive tool calls share one chunk as `{"functionCall": {"name",
//! "args"}}` parts (whole arguments, no id unless scripted). The last chunk
//! also carries `finishReason` and `usageMetadata`; `thoughtsTokenCount` and
//! `cachedContentTokenCount` are left out when zero, as the real API does.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{Answer, Block, RenderContext, Shape, Tokens, argument_value, chunk_text, data_frame};

fn finish_reason(answer: &Answer) -> String {
    match answer.stop.as_deref() {
        None | Some("end_turn" | "tool_use" | "stop" | "tool_calls") => "STOP",
        Some("max_tokens" | "length") => "MAX_TOKENS",
        Some("refusal" | "content_filter") => "SAFETY",
        Some("error") => "MALFORMED_FUNCTION_CALL",
        Some(other) => other,
    }
    .to_string()
}

fn usage(tokens: &Tokens) -> Value {
    let mut usage = json!({
        "promptTokenCount": tokens.prompt(),
        "candidatesTokenCount": tokens.output - tokens.reasoning,
        "totalTokenCount": tokens.prompt() + tokens.output,
    });
    if tokens.reasoning > 0 {
        usage["thoughtsTokenCount"] = json!(tokens.reasoning);
    }
    if tokens.cache_read > 0 {
        usage["cachedContentTokenCount"] = json!(tokens.cache_read);
    }
    usage
}

fn function_call(id: &str, scripted_id: bool, name: &str, arguments: &str) -> Value {
    let mut call = json!({"name": name, "args": argument_value(arguments)});
    if scripted_id {
        call["id"] = json!(id);
    }
    json!({"functionCall": call})
}

fn thought(text: &str, signature: Option<&str>) -> Value {
    let mut part = json!({"text": text, "thought": true});
    if let Some(signature) = signature {
        part["thoughtSignature"] = json!(signature);
    }
    part
}

/// One chunk's candidate parts, or a frame sent as is.
enum Piece {
    Parts(Vec<Value>),
    Raw(String),
}

fn chunk(answer: &Answer, ctx: &RenderContext, parts: Vec<Value>, last: bool) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let mut chunk = json!({
        "candidates": [],
        "modelVersion": ctx.model,
        "responseId": format!("mock-response-{}", ctx.turn),
    });
    if last {
        candidate["finishReason"] = json!(finish_reason(answer));
        chunk["usageMetadata"] = usage(&answer.usage);
    }
    chunk["candidates"] = json!([candidate]);
    chunk
}

/// The chunks of a streamed answer, as SSE frames or JSON array elements.
pub(super) fn stream(answer: &Answer, ctx: &RenderContext, shape: Shape) -> Vec<Bytes> {
    let mut pieces: Vec<Piece> = Vec::new();
    let mut previous_was_call = false;
    for block in &answer.blocks {
        match block {
            Block::Text(text) => pieces.extend(
                chunk_text(text)
                    .into_iter()
                    .map(|t| Piece::Parts(vec![json!({"text": t})])),
            ),
            Block::Reasoning { text, signature } => {
                let texts = match chunk_text(text) {
                    // The signature still needs a part to travel in.
                    empty if empty.is_empty() => vec![""],
                    texts => texts,
                };
                let last = texts.len() - 1;
                pieces.extend(texts.into_iter().enumerate().map(|(i, t)| {
                    Piece::Parts(vec![thought(t, (i == last).then_some(signature.as_str()))])
                }));
            }
            Block::ToolCall {
                id,
                scripted_id,
                name,
                arguments,
                ..
            } => {
                let part = function_call(id, *scripted_id, name, arguments);
                match pieces.last_mut() {
                    Some(Piece::Parts(parts)) if previous_was_call => parts.push(part),
                    _ => pieces.push(Piece::Parts(vec![part])),
                }
            }
            Block::Raw(frame) => pieces.push(Piece::Raw(frame.clone())),
        }
        previous_was_call = matches!(block, Block::ToolCall { .. });
    }
    if !matches!(pieces.last(), Some(Piece::Parts(_))) {
        pieces.push(Piece::Parts(vec![json!({"text": ""})]));
    }
    let count = pieces.len();
    let mut out = Vec::with_capacity(count);
    let mut first_element = true;
    for (i, piece) in pieces.into_iter().enumerate() {
        match piece {
            Piece::Raw(frame) => out.push(Bytes::from(frame)),
            Piece::Parts(parts) => {
                let data = chunk(answer, ctx, parts, i + 1 == count);
                out.push(match shape {
                    Shape::JsonArray => {
                        let open = if first_element { "[" } else { ",\r\n" };
                        let close = if i + 1 == count { "]" } else { "" };
                        Bytes::from(format!("{open}{data}{close}"))
                    }
                    Shape::Sse | Shape::Whole => data_frame(&data),
                });
                first_element = false;
            }
        }
    }
    out
}

/// The whole answer as one response (`generateContent`).
pub(super) fn whole(answer: &Answer, ctx: &RenderContext) -> Value {
    let parts: Vec<Value> = answer
        .blocks
        .iter()
        .filter_map(|block| match block {
            Block::Text(text) => Some(json!({"text": text})),
            Block::Reasoning { text, signature } => Some(thought(text, Some(signature))),
            Block::ToolCall {
                id,
                scripted_id,
                name,
                arguments,
                ..
            } => Some(function_call(id, *scripted_id, name, arguments)),
            Block::Raw(_) => None,
        })
        .collect();
    chunk(answer, ctx, parts, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::{Item, StreamReply};
    use crate::server::Api;

    fn ctx() -> RenderContext {
        RenderContext {
            turn: 0,
            id_stem: "0".into(),
            input_tokens: 10,
            cache: crate::cache::CacheSplit::default(),
            model: "gemini-x".into(),
            include_usage: false,
            created: 0,
        }
    }

    fn answer(items: Vec<Item>) -> Answer {
        let reply = StreamReply {
            items,
            ..StreamReply::default()
        };
        Answer::new(Api::Gemini, &reply, &ctx())
    }

    fn call(name: &str) -> Item {
        Item::ToolCall {
            id: None,
            name: name.into(),
            arguments: json!({"n": name}),
            fragments: None,
        }
    }

    #[test]
    fn gyre_stop_words_map_to_finish_reasons() {
        for (word, reason) in [
            ("end_turn", "STOP"),
            ("tool_use", "STOP"),
            ("max_tokens", "MAX_TOKENS"),
            ("refusal", "SAFETY"),
            ("error", "MALFORMED_FUNCTION_CALL"),
            ("RECITATION", "RECITATION"),
        ] {
            assert_eq!(
                finish_reason(&answer(vec![Item::Stop(word.into())])),
                reason
            );
        }
    }

    #[test]
    fn consecutive_calls_share_a_chunk_and_the_json_array_is_valid() {
        let answer = answer(vec![
            call("a"),
            call("b"),
            Item::Text("between".into()),
            call("c"),
        ]);
        let frames = stream(&answer, &ctx(), Shape::JsonArray);
        let array: Value = serde_json::from_slice(&frames.concat()).expect("one JSON array");
        let chunks = array.as_array().expect("array");
        assert_eq!(chunks.len(), 3);
        let parts = |i: usize| chunks[i]["candidates"][0]["content"]["parts"].clone();
        assert_eq!(parts(0).as_array().map(Vec::len), Some(2));
        assert_eq!(parts(2)[0]["functionCall"]["name"], "c");
        assert!(parts(2)[0]["functionCall"].get("id").is_none());
        assert_eq!(chunks[2]["candidates"][0]["finishReason"], "STOP");
        assert!(chunks[0].get("usageMetadata").is_none());
    }
}
