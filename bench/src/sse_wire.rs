//! Generated model answers for the SSE decode benchmark, and their encoding
//! as each provider's server-sent-event stream.
//!
//! One [`Answer`] (wire-neutral: text blocks of many small deltas, tool calls
//! whose JSON arguments arrive in fragments) is encoded per wire API, so every
//! decoder is measured on the same content. The answer always ends with a text
//! block, so every wire can end it the same way (Gemini has no separate
//! "finished" event: its last chunk carries the finish reason).
//!
//! Trade-offs: the events follow the shape of the providers' real streams
//! (field names, the repeated `id`/`model` envelope of Chat chunks, the full
//! text repeated in the Responses `*.done` events, Anthropic's `ping`s), but
//! not every field a provider sends. Gemini streams whole function calls (no
//! argument fragments), as the real API does. Text deltas hold one to three
//! tokens, including characters that JSON must escape and non-ASCII text.
//! The Responses and Gemini encoders are ready for their decoders, which land
//! later; until then only their unit tests use them.

use std::fmt::Write;

use bytes::Bytes;
use serde_json::{Value, json};

use crate::rng::Rng;

/// A model's answer, independent of the wire.
#[derive(Debug, Clone)]
pub struct Answer {
    pub segments: Vec<Segment>,
}

#[derive(Debug, Clone)]
pub enum Segment {
    /// A text block, as its deltas.
    Text(Vec<String>),
    Call(Call),
}

#[derive(Debug, Clone)]
pub struct Call {
    pub id: String,
    pub name: &'static str,
    /// The whole argument JSON text.
    pub arguments: String,
    /// `arguments` cut into the pieces the stream carries.
    pub fragments: Vec<String>,
}

const WORDS: &[&str] = &[
    "the",
    " function",
    " returns",
    " a",
    " `Result`",
    " when",
    " the",
    " file",
    " is",
    " missing",
    ".",
    ",",
    " and",
    " because",
    " we",
    " should",
    " check",
    " it",
    "\n",
    "\n\n",
    "```rust\n",
    "```\n",
    "fn ",
    "main",
    "() {",
    "\n    let",
    " x",
    " =",
    " \"quoted\"",
    ";\n",
    "}",
    " café",
    " → ",
    " naïve",
    "\t",
    " path\\to",
    " 42",
    " 🙂",
    " über",
    " <T>",
    " &mut",
    " self",
    " ok",
    " test",
    "s",
    "ing",
    " error",
    " handling",
    " 100%",
    " {braces}",
];

const PATHS: &[&str] = &[
    "src/lib.rs",
    "src/main.rs",
    "crates/core/src/run.rs",
    "crates/tools/src/grep.rs",
    "tests/it/main.rs",
    "README.md",
];

impl Answer {
    /// About `text_deltas` text deltas in blocks of 200–800, each block
    /// followed by one or two tool calls, and a final text block.
    pub fn generate(text_deltas: usize, seed: u64) -> Answer {
        let mut rng = Rng::new(seed);
        let mut segments = Vec::new();
        let mut deltas = 0;
        let mut calls = 0;
        loop {
            let n = rng.range(200, 800);
            segments.push(Segment::Text(
                (0..n).map(|_| text_delta(&mut rng)).collect(),
            ));
            deltas += n;
            if deltas >= text_deltas {
                break;
            }
            for _ in 0..rng.range(1, 3) {
                segments.push(Segment::Call(call(&mut rng, calls)));
                calls += 1;
            }
        }
        Answer { segments }
    }

    /// All text, concatenated.
    pub fn text(&self) -> String {
        let mut text = String::new();
        for segment in &self.segments {
            if let Segment::Text(deltas) = segment {
                deltas.iter().for_each(|d| text.push_str(d));
            }
        }
        text
    }

    /// Every call as (name, parsed arguments), in order.
    pub fn calls(&self) -> Vec<(String, Value)> {
        self.segments
            .iter()
            .filter_map(|s| match s {
                Segment::Call(c) => Some((
                    c.name.to_owned(),
                    serde_json::from_str(&c.arguments).unwrap_or(Value::Null),
                )),
                Segment::Text(_) => None,
            })
            .collect()
    }
}

fn text_delta(rng: &mut Rng) -> String {
    (0..rng.range(1, 4)).map(|_| *rng.pick(WORDS)).collect()
}

fn code(rng: &mut Rng, lines: usize) -> String {
    (0..lines)
        .map(|i| {
            format!(
                "    let value_{i} = compute(\"{}\", {})?; // {}\n",
                rng.pick(PATHS),
                rng.range(0, 10_000),
                rng.pick(&["check", "naïve → fixed", "tab\there", "ok"])
            )
        })
        .collect()
}

fn call(rng: &mut Rng, n: usize) -> Call {
    let path = *rng.pick(PATHS);
    let (name, arguments) = match rng.range(0, 4) {
        0 => (
            "read",
            json!({"file_path": path, "offset": rng.range(1, 2000), "limit": 200}),
        ),
        1 => (
            "grep",
            json!({"pattern": "fn\\s+handle_[a-z]+\\(", "path": "src", "output_mode": "content", "context": 2}),
        ),
        2 => {
            let lines = rng.range(3, 20);
            (
                "edit",
                json!({"file_path": path, "old_string": code(rng, lines), "new_string": code(rng, lines)}),
            )
        }
        _ => (
            "bash",
            json!({"command": "cargo test -p gyre-core -- scheduler 2>&1 | tail -n 40"}),
        ),
    };
    let arguments = arguments.to_string();
    let fragments = fragments(rng, &arguments);
    Call {
        id: format!("toolu_bench_{n:05}"),
        name,
        arguments,
        fragments,
    }
}

/// Cuts `text` into pieces of 4–40 bytes, at char boundaries.
fn fragments(rng: &mut Rng, text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + rng.range(4, 41)).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(text[start..end].to_owned());
        start = end;
    }
    pieces
}

/// A wire API whose stream the benchmark can generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAiChat,
    #[allow(dead_code)] // measured once decode_openai_responses_sse lands
    OpenAiResponses,
    #[allow(dead_code)] // measured once decode_gemini_sse lands
    Gemini,
}

/// One encoded stream.
#[derive(Debug, Clone)]
pub struct Encoded {
    pub bytes: Bytes,
    /// SSE events in it (every dispatched event, `ping`s and `[DONE]` too).
    pub events: usize,
}

impl Wire {
    pub fn label(self) -> &'static str {
        match self {
            Wire::Anthropic => "Anthropic Messages",
            Wire::OpenAiChat => "OpenAI Chat",
            Wire::OpenAiResponses => "OpenAI Responses",
            Wire::Gemini => "Gemini",
        }
    }

    pub fn encode(self, answer: &Answer) -> Encoded {
        match self {
            Wire::Anthropic => anthropic(answer),
            Wire::OpenAiChat => openai_chat(answer),
            Wire::OpenAiResponses => openai_responses(answer),
            Wire::Gemini => gemini(answer),
        }
    }
}

/// A JSON string literal.
fn js(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// The stream being written.
struct Out {
    text: String,
    events: usize,
    newline: &'static str,
}

impl Out {
    fn new(newline: &'static str) -> Out {
        Out {
            text: String::new(),
            events: 0,
            newline,
        }
    }

    fn event(&mut self, name: Option<&str>, data: &str) {
        let nl = self.newline;
        if let Some(name) = name {
            let _ = write!(self.text, "event: {name}{nl}");
        }
        let _ = write!(self.text, "data: {data}{nl}{nl}");
        self.events += 1;
    }

    fn done(self) -> Encoded {
        Encoded {
            bytes: Bytes::from(self.text),
            events: self.events,
        }
    }
}

fn anthropic(answer: &Answer) -> Encoded {
    let mut out = Out::new("\n");
    out.event(
        Some("message_start"),
        r#"{"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"claude-bench","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1200,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}"#,
    );
    out.event(Some("ping"), r#"{"type": "ping"}"#);
    for (index, segment) in answer.segments.iter().enumerate() {
        match segment {
            Segment::Text(deltas) => {
                out.event(
                    Some("content_block_start"),
                    &format!(
                        r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"text","text":""}}}}"#
                    ),
                );
                for delta in deltas {
                    out.event(
                        Some("content_block_delta"),
                        &format!(
                            r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"text_delta","text":{}}}}}"#,
                            js(delta)
                        ),
                    );
                }
            }
            Segment::Call(call) => {
                out.event(
                    Some("content_block_start"),
                    &format!(
                        r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"tool_use","id":{},"name":{},"input":{{}}}}}}"#,
                        js(&call.id),
                        js(call.name)
                    ),
                );
                for fragment in std::iter::once("").chain(call.fragments.iter().map(String::as_str))
                {
                    out.event(
                        Some("content_block_delta"),
                        &format!(
                            r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"input_json_delta","partial_json":{}}}}}"#,
                            js(fragment)
                        ),
                    );
                }
            }
        }
        out.event(
            Some("content_block_stop"),
            &format!(r#"{{"type":"content_block_stop","index":{index}}}"#),
        );
    }
    out.event(
        Some("message_delta"),
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":250000}}"#,
    );
    out.event(Some("message_stop"), r#"{"type":"message_stop"}"#);
    out.done()
}

fn openai_chat(answer: &Answer) -> Encoded {
    const HEAD: &str = r#"{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-bench","system_fingerprint":"fp_bench","choices":["#;
    let mut out = Out::new("\n");
    let delta = |out: &mut Out, delta: &str| {
        out.event(
            None,
            &format!(
                r#"{HEAD}{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":null}}]}}"#
            ),
        );
    };
    delta(
        &mut out,
        r#"{"role":"assistant","content":"","refusal":null}"#,
    );
    let mut call_index = 0;
    for segment in &answer.segments {
        match segment {
            Segment::Text(deltas) => {
                for text in deltas {
                    delta(&mut out, &format!(r#"{{"content":{}}}"#, js(text)));
                }
            }
            Segment::Call(call) => {
                delta(
                    &mut out,
                    &format!(
                        r#"{{"tool_calls":[{{"index":{call_index},"id":{},"type":"function","function":{{"name":{},"arguments":""}}}}]}}"#,
                        js(&call.id),
                        js(call.name)
                    ),
                );
                for fragment in &call.fragments {
                    delta(
                        &mut out,
                        &format!(
                            r#"{{"tool_calls":[{{"index":{call_index},"function":{{"arguments":{}}}}}]}}"#,
                            js(fragment)
                        ),
                    );
                }
                call_index += 1;
            }
        }
    }
    out.event(
        None,
        &format!(r#"{HEAD}{{"index":0,"delta":{{}},"logprobs":null,"finish_reason":"stop"}}]}}"#),
    );
    out.event(
        None,
        r#"{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-bench","system_fingerprint":"fp_bench","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":250000,"total_tokens":251200,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}"#,
    );
    out.event(None, "[DONE]");
    out.done()
}

fn openai_responses(answer: &Answer) -> Encoded {
    let mut out = Out::new("\n");
    let mut seq = 0usize;
    let mut event = |out: &mut Out, kind: &str, body: &str| {
        out.event(
            Some(kind),
            &format!(r#"{{"type":"{kind}","sequence_number":{seq},{body}}}"#),
        );
        seq += 1;
    };
    let response = |status: &str, usage: &str| {
        format!(
            r#""response":{{"id":"resp_bench","object":"response","created_at":1700000000,"status":"{status}","model":"gpt-bench","output":[],"usage":{usage}}}"#
        )
    };
    event(
        &mut out,
        "response.created",
        &response("in_progress", "null"),
    );
    event(
        &mut out,
        "response.in_progress",
        &response("in_progress", "null"),
    );
    for (i, segment) in answer.segments.iter().enumerate() {
        match segment {
            Segment::Text(deltas) => {
                let id = format!("msg_{i}");
                let full = js(&deltas.concat());
                let part = |text: &str| {
                    format!(
                        r#"{{"type":"output_text","annotations":[],"logprobs":[],"text":{text}}}"#
                    )
                };
                event(
                    &mut out,
                    "response.output_item.added",
                    &format!(
                        r#""output_index":{i},"item":{{"id":"{id}","type":"message","status":"in_progress","content":[],"role":"assistant"}}"#
                    ),
                );
                let at = format!(r#""item_id":"{id}","output_index":{i},"content_index":0"#);
                event(
                    &mut out,
                    "response.content_part.added",
                    &format!(r#"{at},"part":{}"#, part(r#""""#)),
                );
                for delta in deltas {
                    event(
                        &mut out,
                        "response.output_text.delta",
                        &format!(r#"{at},"delta":{},"logprobs":[]"#, js(delta)),
                    );
                }
                event(
                    &mut out,
                    "response.output_text.done",
                    &format!(r#"{at},"text":{full},"logprobs":[]"#),
                );
                event(
                    &mut out,
                    "response.content_part.done",
                    &format!(r#"{at},"part":{}"#, part(&full)),
                );
                event(
                    &mut out,
                    "response.output_item.done",
                    &format!(
                        r#""output_index":{i},"item":{{"id":"{id}","type":"message","status":"completed","content":[{}],"role":"assistant"}}"#,
                        part(&full)
                    ),
                );
            }
            Segment::Call(call) => {
                let id = format!("fc_{i}");
                let item = |status: &str, arguments: &str| {
                    format!(
                        r#""output_index":{i},"item":{{"id":"{id}","type":"function_call","status":"{status}","arguments":{arguments},"call_id":{},"name":{}}}"#,
                        js(&call.id),
                        js(call.name)
                    )
                };
                event(
                    &mut out,
                    "response.output_item.added",
                    &item("in_progress", r#""""#),
                );
                for fragment in &call.fragments {
                    event(
                        &mut out,
                        "response.function_call_arguments.delta",
                        &format!(
                            r#""item_id":"{id}","output_index":{i},"delta":{}"#,
                            js(fragment)
                        ),
                    );
                }
                let arguments = js(&call.arguments);
                event(
                    &mut out,
                    "response.function_call_arguments.done",
                    &format!(r#""item_id":"{id}","output_index":{i},"arguments":{arguments}"#),
                );
                event(
                    &mut out,
                    "response.output_item.done",
                    &item("completed", &arguments),
                );
            }
        }
    }
    event(
        &mut out,
        "response.completed",
        &response(
            "completed",
            r#"{"input_tokens":1200,"input_tokens_details":{"cached_tokens":0},"output_tokens":250000,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":251200}"#,
        ),
    );
    out.done()
}

fn gemini(answer: &Answer) -> Encoded {
    let mut out = Out::new("\r\n");
    let mut tokens = 0usize;
    let mut chunk = |out: &mut Out, part: &str, finish: &str| {
        tokens += 1;
        out.event(
            None,
            &format!(
                r#"{{"candidates":[{{"content":{{"parts":[{part}],"role":"model"}}{finish},"index":0}}],"usageMetadata":{{"promptTokenCount":1200,"candidatesTokenCount":{tokens},"totalTokenCount":{}}},"modelVersion":"gemini-bench","responseId":"bench"}}"#,
                1200 + tokens
            ),
        );
    };
    let last = answer.segments.len().saturating_sub(1);
    for (i, segment) in answer.segments.iter().enumerate() {
        match segment {
            Segment::Text(deltas) => {
                let final_delta = deltas.len().saturating_sub(1);
                for (d, text) in deltas.iter().enumerate() {
                    let finish = if i == last && d == final_delta {
                        r#","finishReason":"STOP""#
                    } else {
                        ""
                    };
                    chunk(&mut out, &format!(r#"{{"text":{}}}"#, js(text)), finish);
                }
            }
            Segment::Call(call) => chunk(
                &mut out,
                &format!(
                    r#"{{"functionCall":{{"name":{},"args":{}}}}}"#,
                    js(call.name),
                    call.arguments
                ),
                "",
            ),
        }
    }
    out.done()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `data:` payloads of a stream, split the way an SSE parser would.
    fn payloads(encoded: &Encoded) -> Vec<String> {
        let text = std::str::from_utf8(&encoded.bytes).expect("utf-8");
        text.replace("\r\n", "\n")
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| {
                e.lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .expect("a data line")
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn answers_are_deterministic_and_end_with_text() {
        let a = Answer::generate(3000, 5);
        let b = Answer::generate(3000, 5);
        assert_eq!(a.text(), b.text());
        assert_eq!(a.calls(), b.calls());
        assert!(matches!(a.segments.last(), Some(Segment::Text(_))));
        assert!(!a.calls().is_empty());
        for segment in &a.segments {
            if let Segment::Call(c) = segment {
                assert_eq!(c.fragments.concat(), c.arguments);
                assert!(serde_json::from_str::<Value>(&c.arguments).is_ok());
            }
        }
    }

    #[test]
    fn every_wire_is_well_formed_json_events() {
        let answer = Answer::generate(2000, 9);
        for wire in [
            Wire::Anthropic,
            Wire::OpenAiChat,
            Wire::OpenAiResponses,
            Wire::Gemini,
        ] {
            let encoded = wire.encode(&answer);
            let payloads = payloads(&encoded);
            assert_eq!(payloads.len(), encoded.events, "{wire:?}");
            for payload in payloads.iter().filter(|p| *p != "[DONE]") {
                assert!(
                    serde_json::from_str::<Value>(payload).is_ok(),
                    "{wire:?}: {payload}"
                );
            }
        }
    }

    #[test]
    fn responses_and_gemini_carry_the_whole_answer() {
        let answer = Answer::generate(1000, 3);
        let responses = payloads(&openai_responses(&answer));
        let text: String = responses
            .iter()
            .map(|p| serde_json::from_str::<Value>(p).expect("json"))
            .filter(|v| v["type"] == "response.output_text.delta")
            .map(|v| v["delta"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(text, answer.text());

        let gemini = payloads(&gemini(&answer));
        let calls: Vec<(String, Value)> = gemini
            .iter()
            .map(|p| serde_json::from_str::<Value>(p).expect("json"))
            .filter_map(|v| {
                let call = v["candidates"][0]["content"]["parts"][0]["functionCall"].clone();
                (!call.is_null()).then(|| {
                    (
                        call["name"].as_str().unwrap_or("").to_owned(),
                        call["args"].clone(),
                    )
                })
            })
            .collect();
        assert_eq!(calls, answer.calls());
        let last: Value = serde_json::from_str(gemini.last().expect("chunks")).expect("json");
        assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    }
}
