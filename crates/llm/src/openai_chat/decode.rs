//! Decoding the Chat Completions chunk stream.
//!
//! Chat chunks carry no block boundaries, so parts are delimited by what comes
//! next: one part is open at a time (reasoning, text or one tool call), and it
//! completes when a part of another kind or another tool call begins, when a
//! `finish_reason` arrives, or at the end. Tool-call fragments are keyed by
//! their `index` (servers that omit it get one inferred from the call id); a
//! call without an id gets a generated one so results can be paired.
//!
//! `Finished` is sent at `data: [DONE]`, or at the end of the bytes when a
//! `finish_reason` was seen — after the usage chunk that follows it. A stream
//! that ends with neither is an error. An `{"error": …}` chunk is classified.

use std::collections::VecDeque;

use gyre_protocol::{Part, StopReason, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

use super::PROVIDER;
use crate::ModelEvent;
use crate::classify;
use crate::error::LlmError;
use crate::sse::{Progress, SseDecoder, SseEvent};

/// The most bytes one part (text, reasoning, tool arguments) may reach.
const MAX_PART_BYTES: usize = 32 << 20;
/// The most tool calls one answer may make.
const MAX_TOOL_CALLS: usize = 1024;

#[derive(Default)]
pub(super) struct ChatDecoder {
    open: Open,
    /// Every call of the answer, in the order they began.
    calls: Vec<CallState>,
    finish_reason: Option<StopReason>,
}

#[derive(Default)]
enum Open {
    #[default]
    Nothing,
    Reasoning(String),
    Text(String),
    /// Position in `calls`.
    Call(usize),
}

struct CallState {
    index: u64,
    id: String,
    name: String,
    arguments: String,
    started: bool,
    completed: bool,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    /// DeepSeek, vLLM, llama.cpp.
    #[serde(default)]
    reasoning_content: Option<Value>,
    /// OpenRouter, Ollama.
    #[serde(default)]
    reasoning: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl SseDecoder for ChatDecoder {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<Progress, LlmError> {
        if event.data.trim() == "[DONE]" {
            self.finish(out);
            return Ok(Progress::Finished);
        }
        let chunk: Chunk = serde_json::from_str(&event.data).map_err(|error| {
            LlmError::stream(format!(
                "the OpenAI-compatible server sent a malformed chunk ({error}); try again"
            ))
        })?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            let wrapped = serde_json::json!({ "error": error });
            let (error_type, message) = classify::error_object(&wrapped);
            return Err(classify::stream_error(
                PROVIDER,
                error_type.as_deref(),
                message.as_deref(),
            ));
        }
        // `n` is never set, so the first choice is the answer.
        if let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) {
            if let Some(delta) = choice.delta {
                self.delta(delta, out)?;
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.close_open(out);
                self.finish_reason = Some(self.stop_reason(&reason));
            }
        }
        if let Some(usage) = chunk.usage {
            out.push_back(ModelEvent::Usage(usage.normalised()));
        }
        Ok(Progress::Continue)
    }

    fn end(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), LlmError> {
        if self.finish_reason.is_none() {
            return Err(LlmError::stream(
                "the OpenAI-compatible stream ended before the answer was complete; try again",
            ));
        }
        self.finish(out);
        Ok(())
    }
}

impl ChatDecoder {
    fn delta(&mut self, delta: Delta, out: &mut VecDeque<ModelEvent>) -> Result<(), LlmError> {
        let reasoning = [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
            .find_map(|v| match v {
                Value::String(s) if !s.is_empty() => Some(s),
                _ => None,
            });
        if let Some(piece) = reasoning {
            if !matches!(self.open, Open::Reasoning(_)) {
                self.close_open(out);
                self.open = Open::Reasoning(String::new());
            }
            if let Open::Reasoning(text) = &mut self.open {
                text.push_str(&piece);
                check_size(text.len())?;
            }
            out.push_back(ModelEvent::ReasoningDelta(piece));
        }
        if let Some(piece) = delta.content.filter(|c| !c.is_empty()) {
            if !matches!(self.open, Open::Text(_)) {
                self.close_open(out);
                self.open = Open::Text(String::new());
            }
            if let Open::Text(text) = &mut self.open {
                text.push_str(&piece);
                check_size(text.len())?;
            }
            out.push_back(ModelEvent::TextDelta(piece));
        }
        for call in delta.tool_calls.into_iter().flatten() {
            self.tool_call_delta(call, out)?;
        }
        Ok(())
    }

    fn tool_call_delta(
        &mut self,
        delta: ToolCallDelta,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), LlmError> {
        let index = delta
            .index
            .unwrap_or_else(|| self.infer_index(delta.id.as_deref()));
        let (name, arguments) = match delta.function {
            Some(f) => (f.name.unwrap_or_default(), f.arguments.unwrap_or_default()),
            None => (String::new(), String::new()),
        };
        let position = match self.calls.iter().position(|c| c.index == index) {
            Some(position) => position,
            None => {
                if self.calls.len() >= MAX_TOOL_CALLS {
                    return Err(LlmError::stream(format!(
                        "the model made more than {MAX_TOOL_CALLS} tool calls in one answer, so the stream is broken; try again"
                    )));
                }
                self.close_open(out);
                self.calls.push(CallState {
                    index,
                    id: delta
                        .id
                        .filter(|id| !id.is_empty())
                        .unwrap_or_else(generated_call_id),
                    name: String::new(),
                    arguments: String::new(),
                    started: false,
                    completed: false,
                });
                self.open = Open::Call(self.calls.len() - 1);
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[position];
        if call.completed {
            if name.is_empty() && arguments.is_empty() {
                return Ok(());
            }
            return Err(LlmError::stream(format!(
                "the OpenAI-compatible server sent more of tool call {} after it had ended; try again",
                call.id
            )));
        }
        if call.name.is_empty() {
            call.name = name;
        }
        call.arguments.push_str(&arguments);
        check_size(call.arguments.len())?;
        if !call.started && !call.name.is_empty() {
            call.started = true;
            out.push_back(ModelEvent::ToolCallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
        Ok(())
    }

    /// For servers that omit `index`: a new id starts a new call, anything
    /// else continues the open one.
    fn infer_index(&self, id: Option<&str>) -> u64 {
        let open_call = match self.open {
            Open::Call(position) => self.calls.get(position),
            _ => None,
        };
        match (open_call, id) {
            (Some(call), None) => call.index,
            (Some(call), Some(id)) if id.is_empty() || id == call.id => call.index,
            _ => self.calls.iter().map(|c| c.index + 1).max().unwrap_or(0),
        }
    }

    /// Completes the open part, if any.
    fn close_open(&mut self, out: &mut VecDeque<ModelEvent>) {
        match std::mem::take(&mut self.open) {
            Open::Nothing => {}
            Open::Reasoning(text) => out.push_back(ModelEvent::PartCompleted(Part::Reasoning {
                text,
                signature: None,
                redacted: false,
            })),
            Open::Text(text) => out.push_back(ModelEvent::PartCompleted(Part::Text { text })),
            Open::Call(position) => {
                if let Some(call) = self.calls.get_mut(position) {
                    call.completed = true;
                    if !call.started {
                        // A call whose name never came: still report it, so the
                        // loop can answer it with an error.
                        call.started = true;
                        out.push_back(ModelEvent::ToolCallStarted {
                            id: call.id.clone(),
                            name: call.name.clone(),
                        });
                    }
                    out.push_back(ModelEvent::PartCompleted(Part::ToolCall(ToolCall::new(
                        call.id.clone(),
                        call.name.clone(),
                        std::mem::take(&mut call.arguments),
                    ))));
                }
            }
        }
    }

    fn finish(&mut self, out: &mut VecDeque<ModelEvent>) {
        self.close_open(out);
        let reason = self
            .finish_reason
            .unwrap_or_else(|| self.stop_reason("stop"));
        out.push_back(ModelEvent::Finished(reason));
    }

    fn stop_reason(&self, finish_reason: &str) -> StopReason {
        match finish_reason {
            "tool_calls" | "function_call" => StopReason::ToolUse,
            "length" => StopReason::MaxTokens,
            "content_filter" => StopReason::Refusal,
            // "stop" and reasons we do not know; some servers say "stop"
            // after tool calls.
            _ if !self.calls.is_empty() => StopReason::ToolUse,
            _ => StopReason::EndTurn,
        }
    }
}

impl WireUsage {
    fn normalised(&self) -> Usage {
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0);
        Usage {
            input_tokens: self.prompt_tokens.unwrap_or(0).saturating_sub(cached),
            output_tokens: self.completion_tokens.unwrap_or(0),
            reasoning_tokens: self
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            cache_read_tokens: cached,
            cache_write_tokens: 0,
        }
    }
}

fn check_size(len: usize) -> Result<(), LlmError> {
    if len > MAX_PART_BYTES {
        return Err(LlmError::stream(format!(
            "one part of the model's answer grew past {} MiB, so the stream is broken; try again",
            MAX_PART_BYTES >> 20
        )));
    }
    Ok(())
}

/// A call id for servers that send none: unique across sessions, because
/// results are paired with calls by id in stored transcripts.
fn generated_call_id() -> String {
    format!("call_{}", uuid::Uuid::now_v7().simple())
}

#[cfg(test)]
mod tests;
