//! Decoding the Chat Completions chunk stream.
//!
//! Chat chunks carry no block boundaries, so parts are delimited by what comes
//! next: one part is open at a time (reasoning, text or one tool call), and it
//! completes when a part of another kind or another tool call begins, when a
//! `finish_reason` arrives, or at the end.
//!
//! Quirks of compatible servers (Ollama, vLLM, llama.cpp, LM Studio,
//! OpenRouter, Gemini's compatibility layer) handled here:
//! - Tool-call fragments are keyed by their `index`. Servers that omit it get
//!   one inferred from the open call. A fragment that names a function starts
//!   a new call when it carries another id than the open call, or when the
//!   open call's arguments are already a whole JSON value (servers that repeat
//!   one id, or none, for every call); anything else continues the open call.
//!   The same holds for a known `index` (servers that number every call 0).
//! - Whole arguments in one fragment are fine; so is a call whose name never
//!   comes (reported with an empty name, so the loop can answer it).
//! - A call without an id gets a generated one (a UUID v7, unique across
//!   sessions, because stored transcripts pair results with calls by id); an
//!   id already used by an earlier call of the answer gets a `_2`, `_3`, …
//!   suffix.
//! - Reasoning comes as `reasoning_content` (DeepSeek, vLLM, llama.cpp) or
//!   `reasoning` (OpenRouter, Ollama); it is a part of its own, completed
//!   before the text or calls that follow.
//! - Usage may come in any chunk, in the last one, or never (then no `Usage`
//!   event); cached prompt tokens are read from `prompt_tokens_details` or
//!   DeepSeek's `prompt_cache_hit_tokens`.
//! - Errors in the stream come as a `{"error": …}` chunk or (older llama.cpp)
//!   as an SSE `error:` field, which the SSE layer turns into an event named
//!   `error`; a bare JSON error body without SSE framing arrives as unframed
//!   text. All are classified; a `finish_reason` alone is never an error.
//!
//! `Finished` is sent at `data: [DONE]` (with or without a trailing newline),
//! or at the end of the bytes when a `finish_reason` was seen — after the usage
//! chunk that follows it. A stream that ends with neither is an error.

use std::collections::VecDeque;

use gyre_protocol::{Part, StopReason, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

use super::PROVIDER;
use crate::ModelEvent;
use crate::classify;
use crate::error::LlmError;
use crate::generated_call_id;
use crate::sse::{Progress, SseDecoder, SseEvent};

/// The most bytes one part (text, reasoning, tool arguments) may reach.
const MAX_PART_BYTES: usize = 32 << 20;
/// The most tool calls one answer may make.
const MAX_TOOL_CALLS: usize = 1024;

#[derive(Default)]
pub(super) struct ChatDecoder {
    open: Open,
    /// Every call of the answer, in the order they began; several may be
    /// open at once.
    calls: Vec<CallState>,
    /// The call the last fragment went to (for servers that send no index).
    last_call: Option<usize>,
    finish_reason: Option<StopReason>,
    /// `delta.refusal` text came: the answer is a refusal.
    refused: bool,
}

#[derive(Default)]
enum Open {
    #[default]
    Nothing,
    Reasoning(String),
    Text(String),
}

struct CallState {
    index: u64,
    /// The id the server sent, if any (fragments are matched by it).
    wire_id: String,
    /// The id reported: the wire id, made unique within the answer.
    id: String,
    name: String,
    arguments: String,
    /// Gemini's `extra_content.google.thought_signature`, sent back as is.
    signature: Option<String>,
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
    index: Option<u64>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    /// Text the model refused with (OpenAI structured outputs).
    #[serde(default)]
    refusal: Option<String>,
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
    /// Gemini's OpenAI-compatible endpoint: the call's thought signature.
    #[serde(default)]
    extra_content: Option<ExtraContent>,
}

#[derive(Deserialize)]
struct ExtraContent {
    #[serde(default)]
    google: Option<GoogleExtra>,
}

#[derive(Deserialize)]
struct GoogleExtra {
    #[serde(default)]
    thought_signature: Option<String>,
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
    /// DeepSeek's spelling of cached prompt tokens.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
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
        if event.event == "error" {
            return Err(error_event(&event.data));
        }
        let chunk: Chunk = serde_json::from_str(&event.data).map_err(|error| {
            if error.is_eof() {
                // JSON cut short: the last event of a stream that broke off.
                return incomplete();
            }
            LlmError::stream(format!(
                "the OpenAI-compatible server sent a malformed chunk ({error}); try again"
            ))
        })?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            let wrapped = serde_json::json!({ "error": error });
            return Err(classify::stream_error_value(PROVIDER, &wrapped));
        }
        // gyre never sets `n`, but a server may still send several choices:
        // choice 0 is the answer, the others are ignored.
        let first = (chunk.choices.into_iter().flatten()).find(|c| c.index.unwrap_or(0) == 0);
        if let Some(choice) = first {
            if let Some(delta) = choice.delta {
                self.delta(delta, out)?;
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.close_open(out);
                self.complete_calls(out);
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
            return Err(incomplete());
        }
        self.finish(out);
        Ok(())
    }

    fn salvage(&mut self, out: &mut VecDeque<ModelEvent>) {
        if matches!(self.open, Open::Text(_)) {
            self.close_open(out);
        }
    }

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
    LlmError::stream("the OpenAI-compatible stream ended before the answer was complete; try again")
}

/// An `error` event: its data is a JSON error (wrapped in `error` or bare) or
/// plain text.
fn error_event(data: &str) -> LlmError {
    match serde_json::from_str::<Value>(data) {
        Ok(value @ (Value::Object(_) | Value::Array(_))) => {
            classify::stream_error_value(PROVIDER, &value)
        }
        Ok(Value::String(text)) => classify::stream_error(PROVIDER, None, Some(&text)),
        _ => classify::stream_error(PROVIDER, None, Some(data)),
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
                self.settle_calls(out);
                self.open = Open::Reasoning(String::new());
            }
            if let Open::Reasoning(text) = &mut self.open {
                text.push_str(&piece);
                check_size(text.len())?;
            }
            out.push_back(ModelEvent::ReasoningDelta(piece));
        }
        if delta.refusal.as_deref().is_some_and(|r| !r.is_empty()) {
            self.refused = true;
        }
        let content = [delta.content, delta.refusal].into_iter().flatten();
        for piece in content.filter(|c| !c.is_empty()) {
            if !matches!(self.open, Open::Text(_)) {
                self.close_open(out);
                self.settle_calls(out);
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
        let (name, arguments) = match delta.function {
            Some(f) => (f.name.unwrap_or_default(), f.arguments.unwrap_or_default()),
            None => (String::new(), String::new()),
        };
        let signature = delta.extra_content.and_then(|extra| {
            let signature = extra.google?.thought_signature?;
            (!signature.is_empty()).then_some(signature)
        });
        let wire_id = delta.id.unwrap_or_default();
        // Fragments are keyed by `index`, never by "the latest call": a proxy
        // may interleave the fragments of parallel calls.
        let existing = match delta.index {
            Some(index) => self
                .calls
                .iter()
                .rposition(|c| c.index == index)
                .filter(|&p| !starts_new_call(&self.calls[p], &wire_id, &name)),
            None => self
                .last_call
                .filter(|&p| !starts_new_call(&self.calls[p], &wire_id, &name)),
        };
        let position = match existing {
            Some(position) => position,
            None => {
                if self.calls.len() >= MAX_TOOL_CALLS {
                    return Err(LlmError::stream(format!(
                        "the model made more than {MAX_TOOL_CALLS} tool calls in one answer, so the stream is broken; try again"
                    )));
                }
                self.close_open(out);
                self.settle_calls(out);
                let index = match delta.index {
                    Some(index) => index,
                    None => self.calls.iter().map(|c| c.index + 1).max().unwrap_or(0),
                };
                let id = self.unique_id(&wire_id);
                self.calls.push(CallState {
                    index,
                    wire_id,
                    id,
                    name: String::new(),
                    arguments: String::new(),
                    signature: None,
                    started: false,
                    completed: false,
                });
                self.calls.len() - 1
            }
        };
        if !matches!(self.open, Open::Nothing) {
            self.close_open(out);
        }
        self.last_call = Some(position);
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
        if signature.is_some() {
            call.signature = signature;
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

    /// Completes, in the order they began, the open calls that nothing later
    /// can change: those whose arguments are already a whole JSON object or
    /// array (more text could only break them). It stops at the first call
    /// still growing, so calls complete in order; the rest wait for the end.
    fn settle_calls(&mut self, out: &mut VecDeque<ModelEvent>) {
        for position in 0..self.calls.len() {
            let call = &self.calls[position];
            if call.completed {
                continue;
            }
            let whole = matches!(
                serde_json::from_str::<Value>(&call.arguments),
                Ok(Value::Object(_) | Value::Array(_))
            );
            if !whole {
                break;
            }
            self.complete_call(position, out);
        }
    }

    /// Reports the call at `position` whole.
    fn complete_call(&mut self, position: usize, out: &mut VecDeque<ModelEvent>) {
        let Some(call) = self.calls.get_mut(position) else {
            return;
        };
        if call.completed {
            return;
        }
        call.completed = true;
        if !call.started {
            // A call whose name never came: still report it, so the loop can
            // answer it with an error.
            call.started = true;
            out.push_back(ModelEvent::ToolCallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
        let mut whole = ToolCall::new(
            call.id.clone(),
            call.name.clone(),
            std::mem::take(&mut call.arguments),
        );
        whole.signature = call.signature.clone();
        out.push_back(ModelEvent::PartCompleted(Part::ToolCall(whole)));
        if self.last_call == Some(position) {
            self.last_call = None;
        }
    }

    /// Completes every open call, in the order they began.
    fn complete_calls(&mut self, out: &mut VecDeque<ModelEvent>) {
        for position in 0..self.calls.len() {
            self.complete_call(position, out);
        }
    }

    /// `wire_id`, or a generated id when it is empty, made unique among the
    /// answer's calls.
    fn unique_id(&self, wire_id: &str) -> String {
        if wire_id.is_empty() {
            return generated_call_id();
        }
        let taken = |id: &str| self.calls.iter().any(|c| c.id == id);
        if !taken(wire_id) {
            return wire_id.to_owned();
        }
        (2..)
            .map(|n| format!("{wire_id}_{n}"))
            .find(|id| !taken(id))
            .unwrap_or_else(generated_call_id)
    }

    /// Completes the open text or reasoning, if any.
    fn close_open(&mut self, out: &mut VecDeque<ModelEvent>) {
        match std::mem::take(&mut self.open) {
            Open::Nothing => {}
            Open::Reasoning(text) => out.push_back(ModelEvent::PartCompleted(Part::Reasoning {
                text,
                signature: None,
                redacted: false,
            })),
            Open::Text(text) => out.push_back(ModelEvent::PartCompleted(Part::Text { text })),
        }
    }

    fn finish(&mut self, out: &mut VecDeque<ModelEvent>) {
        self.close_open(out);
        self.complete_calls(out);
        let reason = self
            .finish_reason
            .unwrap_or_else(|| self.stop_reason("stop"));
        out.push_back(ModelEvent::Finished(reason));
    }

    fn stop_reason(&self, finish_reason: &str) -> StopReason {
        if self.refused {
            return StopReason::Refusal;
        }
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
            .or(self.prompt_cache_hit_tokens)
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

/// Whether a fragment for `call` (matched by index, or the open call) begins
/// another call instead: it names a function and `call` has ended, or the
/// fragment carries an id other than `call`'s, or `call`'s arguments are
/// already a whole JSON value (servers that repeat one id, or send none, for
/// every call). Servers that repeat the name in every fragment of one call
/// still decode, because the arguments are incomplete until the last one.
fn starts_new_call(call: &CallState, wire_id: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    if call.completed {
        return true;
    }
    let other_id = !wire_id.is_empty() && wire_id != call.wire_id;
    let named_again = !call.name.is_empty()
        && serde_json::from_str::<serde::de::IgnoredAny>(&call.arguments).is_ok();
    other_id || named_again
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

#[cfg(test)]
mod quirk_tests;
#[cfg(test)]
mod tests;
