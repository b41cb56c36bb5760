//! Decoding the Messages API event stream.
//!
//! A content block is opened by `content_block_start`, grows by
//! `content_block_delta` and is reported whole by `content_block_stop`
//! (`PartCompleted`). Blocks are kept by index, so interleaved blocks would
//! still decode; the API sends them one at a time. Usage arrives in
//! `message_start` and again (cumulative) in `message_delta`; each time the
//! merged total is reported. `message_stop` ends the answer with the stop
//! reason of the last `message_delta` (or of `message_start`, when the whole
//! message came complete inside it: its content blocks are reported then). Event and block types we do not know
//! (`ping`, other server tools) are ignored, so the API can grow without
//! breaking us.
//!
//! Web search runs on Anthropic's side: a `server_tool_use` block (its query
//! streamed as `input_json_delta`) and a `web_search_tool_result` block are
//! not tool calls; the queries, and the sources that `citations_delta`
//! events cite in the text, are reported as one text part after the answer
//! ([`crate::web_search`]).

use std::collections::VecDeque;

use gyre_protocol::{Part, StopReason, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

use super::PROVIDER;
use crate::ModelEvent;
use crate::classify;
use crate::error::LlmError;
use crate::sse::{Progress, SseDecoder, SseEvent};
use crate::web_search::Found;

/// The most bytes one block (text, reasoning, tool arguments) may reach.
const MAX_BLOCK_BYTES: usize = 32 << 20;
/// The most blocks that may be open at once.
const MAX_OPEN_BLOCKS: usize = 64;

#[derive(Default)]
pub(super) struct AnthropicDecoder {
    /// Open blocks by index, in the order they were opened.
    open: Vec<(u64, Block)>,
    usage: Usage,
    stop_reason: Option<StopReason>,
    made_tool_calls: bool,
    /// Web searches made and sources cited so far.
    found: Found,
}

enum Block {
    Text(String),
    Thinking {
        text: String,
        signature: String,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        arguments: String,
    },
    /// A server-side tool call (web search): its input JSON as it streams.
    ServerToolUse(String),
    /// A block type we do not handle; its deltas are dropped.
    Ignored,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: WireStartMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: WireBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: WireDelta,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        delta: WireMessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Error {
        error: WireError,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct WireStartMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
    /// Empty in a normal stream; the whole answer when the server sends it
    /// complete here (seen with programmatic tool calling). Blocks are kept
    /// as JSON values so one of a type we do not know cannot break the rest.
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Option<Value>,
    },
    ServerToolUse {
        #[serde(default)]
        input: Option<Value>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    /// A citation of the text block (`web_search_result_location`: `url`,
    /// `title`, `cited_text`).
    CitationsDelta {
        citation: WireCitation,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct WireCitation {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    title: Option<String>,
}

#[derive(Deserialize)]
struct WireMessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WireError {
    #[serde(rename = "type")]
    kind: Option<String>,
    message: Option<String>,
}

impl SseDecoder for AnthropicDecoder {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<Progress, LlmError> {
        let wire: WireEvent = match serde_json::from_str(&event.data) {
            Ok(wire) => wire,
            // Data that is not JSON in an event we do not know is not our
            // business; in one we do, it is a broken stream.
            Err(_) if !is_known_event(&event.event) => return Ok(Progress::Continue),
            // JSON cut short: the last event of a stream that broke off.
            Err(error) if error.is_eof() => return Err(incomplete()),
            Err(error) => {
                return Err(LlmError::stream(format!(
                    "Anthropic sent a malformed `{}` event ({error}); try again",
                    event.event
                )));
            }
        };
        match wire {
            WireEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.merge_usage(&usage, out);
                }
                self.start_content(message.content, out)?;
                if let Some(reason) = message.stop_reason {
                    self.stop_reason = Some(stop_reason(&reason));
                }
            }
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => self.start_block(index, content_block, out)?,
            WireEvent::ContentBlockDelta { index, delta } => self.delta(index, delta, out)?,
            WireEvent::ContentBlockStop { index } => self.stop_block(index, out),
            WireEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(stop_reason(&reason));
                }
                if let Some(usage) = usage {
                    self.merge_usage(&usage, out);
                }
            }
            WireEvent::MessageStop => {
                while !self.open.is_empty() {
                    let (index, _) = self.open[0];
                    self.stop_block(index, out);
                }
                self.found.emit(out);
                let reason = self.stop_reason.unwrap_or(if self.made_tool_calls {
                    StopReason::ToolUse
                } else {
                    StopReason::EndTurn
                });
                out.push_back(ModelEvent::Finished(reason));
                return Ok(Progress::Finished);
            }
            WireEvent::Error { error } => {
                return Err(classify::stream_error(
                    PROVIDER,
                    error.kind.as_deref(),
                    error.message.as_deref(),
                ));
            }
            WireEvent::Other => {}
        }
        Ok(Progress::Continue)
    }

    fn end(&mut self, _out: &mut VecDeque<ModelEvent>) -> Result<(), LlmError> {
        Err(incomplete())
    }

    fn salvage(&mut self, out: &mut VecDeque<ModelEvent>) {
        let texts: Vec<u64> = (self.open.iter())
            .filter(|(_, block)| matches!(block, Block::Text(_)))
            .map(|(index, _)| *index)
            .collect();
        for index in texts {
            self.stop_block(index, out);
        }
    }

    /// A JSON error body where events belonged (a proxy's, or the API's own
    /// `{"type":"error",…}` without SSE framing).
    fn unframed(
        &mut self,
        text: &str,
        _out: &mut VecDeque<ModelEvent>,
    ) -> Result<Progress, LlmError> {
        match classify::unframed_error(PROVIDER, text) {
            Some(error) => Err(error),
            None => Ok(Progress::Continue),
        }
    }
}

fn incomplete() -> LlmError {
    LlmError::stream("the Anthropic stream ended before the answer was complete; try again")
}

impl AnthropicDecoder {
    /// Blocks that came whole inside `message_start`: each is opened and
    /// completed at once, numbered before any streamed block (which the
    /// server then numbers after them).
    fn start_content(
        &mut self,
        content: Vec<Value>,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), LlmError> {
        for (index, block) in content.into_iter().enumerate() {
            let Ok(block) = serde_json::from_value::<WireBlock>(block) else {
                continue;
            };
            let index = index as u64;
            self.start_block(index, block, out)?;
            self.stop_block(index, out);
        }
        Ok(())
    }

    fn merge_usage(&mut self, wire: &WireUsage, out: &mut VecDeque<ModelEvent>) {
        let usage = &mut self.usage;
        for (field, value) in [
            (&mut usage.input_tokens, wire.input_tokens),
            (&mut usage.output_tokens, wire.output_tokens),
            (
                &mut usage.cache_write_tokens,
                wire.cache_creation_input_tokens,
            ),
            (&mut usage.cache_read_tokens, wire.cache_read_input_tokens),
        ] {
            if let Some(value) = value {
                *field = value;
            }
        }
        out.push_back(ModelEvent::Usage(self.usage));
    }

    fn start_block(
        &mut self,
        index: u64,
        block: WireBlock,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), LlmError> {
        if self.open.len() >= MAX_OPEN_BLOCKS {
            return Err(LlmError::stream(format!(
                "Anthropic opened more than {MAX_OPEN_BLOCKS} content blocks at once, so the stream is broken; try again"
            )));
        }
        let block = match block {
            WireBlock::Text { text } => {
                if !text.is_empty() {
                    out.push_back(ModelEvent::TextDelta(text.clone()));
                }
                Block::Text(text)
            }
            WireBlock::Thinking {
                thinking,
                signature,
            } => {
                if !thinking.is_empty() {
                    out.push_back(ModelEvent::ReasoningDelta(thinking.clone()));
                }
                Block::Thinking {
                    text: thinking,
                    signature,
                }
            }
            WireBlock::RedactedThinking { data } => Block::Redacted(data),
            WireBlock::ToolUse { id, name, input } => {
                out.push_back(ModelEvent::ToolCallStarted {
                    id: id.clone(),
                    name: name.clone(),
                });
                // The start carries `input: {}`; the real input follows as
                // JSON fragments. Keep a non-empty start input in case a
                // server sends it whole here instead.
                let arguments = match input {
                    Some(Value::Object(map)) if !map.is_empty() => Value::Object(map).to_string(),
                    _ => String::new(),
                };
                Block::ToolUse {
                    id,
                    name,
                    arguments,
                }
            }
            WireBlock::ServerToolUse { input } => Block::ServerToolUse(match input {
                Some(Value::Object(map)) if !map.is_empty() => Value::Object(map).to_string(),
                _ => String::new(),
            }),
            WireBlock::Other => Block::Ignored,
        };
        // A repeated index replaces the old block (it can only be a server bug).
        self.open.retain(|(open, _)| *open != index);
        self.open.push((index, block));
        Ok(())
    }

    fn delta(
        &mut self,
        index: u64,
        delta: WireDelta,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), LlmError> {
        let Some((_, block)) = self.open.iter_mut().find(|(open, _)| *open == index) else {
            return Ok(());
        };
        let grown = match (block, delta) {
            (Block::Text(text), WireDelta::TextDelta { text: piece }) => {
                text.push_str(&piece);
                let len = text.len();
                out.push_back(ModelEvent::TextDelta(piece));
                len
            }
            (Block::Thinking { text, .. }, WireDelta::ThinkingDelta { thinking }) => {
                text.push_str(&thinking);
                let len = text.len();
                out.push_back(ModelEvent::ReasoningDelta(thinking));
                len
            }
            (Block::Thinking { signature, .. }, WireDelta::SignatureDelta { signature: piece }) => {
                signature.push_str(&piece);
                signature.len()
            }
            (Block::ToolUse { arguments, .. }, WireDelta::InputJsonDelta { partial_json })
            | (Block::ServerToolUse(arguments), WireDelta::InputJsonDelta { partial_json }) => {
                arguments.push_str(&partial_json);
                arguments.len()
            }
            (Block::Text(_), WireDelta::CitationsDelta { citation }) => {
                if let Some(url) = &citation.url {
                    self.found
                        .source(url, citation.title.as_deref().unwrap_or_default());
                }
                0
            }
            _ => 0,
        };
        if grown > MAX_BLOCK_BYTES {
            return Err(LlmError::stream(format!(
                "one block of Anthropic's answer grew past {} MiB, so the stream is broken; try again",
                MAX_BLOCK_BYTES >> 20
            )));
        }
        Ok(())
    }

    fn stop_block(&mut self, index: u64, out: &mut VecDeque<ModelEvent>) {
        let Some(position) = self.open.iter().position(|(open, _)| *open == index) else {
            return;
        };
        let (_, block) = self.open.remove(position);
        let part = match block {
            Block::Text(text) if text.is_empty() => return,
            Block::Text(text) => Part::Text { text },
            Block::Thinking { text, signature } => Part::Reasoning {
                text,
                signature: (!signature.is_empty()).then_some(signature),
                redacted: false,
            },
            Block::Redacted(data) => Part::Reasoning {
                text: String::new(),
                signature: Some(data),
                redacted: true,
            },
            Block::ToolUse {
                id,
                name,
                arguments,
            } => {
                self.made_tool_calls = true;
                let arguments = if arguments.is_empty() {
                    "{}".to_owned()
                } else {
                    arguments
                };
                Part::ToolCall(ToolCall::new(id, name, arguments))
            }
            Block::ServerToolUse(input) => {
                let input: Value = serde_json::from_str(&input).unwrap_or_default();
                if let Some(query) = input.get("query").and_then(Value::as_str) {
                    self.found.query(query);
                }
                return;
            }
            Block::Ignored => return,
        };
        out.push_back(ModelEvent::PartCompleted(part));
    }
}

fn is_known_event(name: &str) -> bool {
    matches!(
        name,
        "message_start"
            | "content_block_start"
            | "content_block_delta"
            | "content_block_stop"
            | "message_delta"
            | "message_stop"
            | "error"
    )
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "refusal" => StopReason::Refusal,
        "model_context_window_exceeded" => StopReason::ContextOverflow,
        // end_turn, stop_sequence, pause_turn, and reasons added later: the
        // model stopped on its own.
        _ => StopReason::EndTurn,
    }
}

#[cfg(test)]
mod tests;
