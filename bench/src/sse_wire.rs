//! The SSE stream of a generated [`Answer`] as each provider sends it.
//!
//! Trade-offs: the events follow the shape of the providers' real streams
//! (field names, the repeated `id`/`model` envelope of Chat chunks, the full
//! text repeated in the Responses `*.done` events, Anthropic's `ping`s), but
//! not every field a provider sends. Gemini streams whole function calls (no
//! argument fragments), as the real API does, with CRLF line ends. The
//! Responses and Gemini encoders are ready for their decoders, which land
//! later; until then only their unit tests use them.

use std::fmt::Write;

use bytes::Bytes;
use serde_json::Value;

use crate::sse_answer::{Answer, Segment};

/// A wire API whose stream the benchmark can generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAiChat,
    OpenAiResponses,
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
