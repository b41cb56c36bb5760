//! Decoding Gemini's chunk stream (`alt=sse`: one `GenerateContentResponse`
//! per event).
//!
//! Google Search grounding (`groundingMetadata`: its `webSearchQueries` and
//! `groundingChunks[].web`) is reported as one text part after the answer
//! ([`crate::web_search`]).
//!
//! Chunks carry no part boundaries, so parts are delimited by what comes
//! next: one text or thought part is open at a time and completes when a part
//! of another kind begins, or at the end. Function calls come whole (several
//! may share a chunk) and are reported at once: `ToolCallStarted`, then
//! `PartCompleted` with the arguments and the call's `thoughtSignature`. A
//! call whose arguments stream (`partialArgs`, `willContinue`) is assembled
//! first (`streamed_call`) and reported once, whole, when its last piece,
//! the `finishReason` or the end of the stream comes.
//!
//! Signatures: a thought part keeps its own; a call keeps its own; a
//! signature on a plain text part (a `Part::Text` has no field for it) is
//! kept on an empty-text `Reasoning` part completed just before that text,
//! which the request builder puts back on the text part. A second signature
//! within one open part starts a new part, so no signature is lost.
//!
//! Gemini has no call ids: ids are `call_{responseId}_{n}`, `n` counting the
//! calls of the answer, so they are unique within a session and the same for
//! the same stream; without a `responseId` a fresh uuid v7 takes its place,
//! once per stream.
//!
//! The stream has no end marker: `Finished` is sent when the bytes end, if a
//! `finishReason` (or a blocked prompt) was seen; otherwise the answer is
//! incomplete, an error. An `{"error": …}` chunk, or one sent outside the SSE
//! framing (a bare JSON object or array after the last event), is a
//! classified error. A stop reason alone is never an error: a malformed call
//! is `StopReason::Error`, a safety stop `Refusal`.

use std::collections::VecDeque;
use std::time::Duration;

use gyre_protocol::{Part, StopReason, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

use super::PROVIDER;
use crate::ModelEvent;
use crate::classify;
use crate::error::{ErrorKind, LlmError};
use crate::sse::{Progress, SseDecoder, SseEvent};
use crate::web_search::Found;

mod streamed_call;
use streamed_call::{PartialArg, StreamedCall};

/// The most bytes one part (text, thought) may reach.
const MAX_PART_BYTES: usize = 32 << 20;
/// The most tool calls one answer may make.
const MAX_TOOL_CALLS: usize = 1024;

#[derive(Default)]
pub(super) struct GeminiDecoder {
    open: Open,
    response_id: Option<String>,
    call_prefix: Option<String>,
    calls: usize,
    finish_reason: Option<String>,
    blocked: bool,
    last_usage: Option<Usage>,
    /// A call whose arguments are still streaming.
    streaming: Option<StreamedCall>,
    /// Web searches made and sources cited so far.
    found: Found,
}

#[derive(Default)]
enum Open {
    #[default]
    Nothing,
    Text {
        text: String,
        signature: Option<String>,
    },
    Thought {
        text: String,
        signature: Option<String>,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    #[serde(default)]
    candidates: Vec<Candidate>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    usage_metadata: Option<WireUsage>,
    #[serde(default)]
    response_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
    /// Google Search grounding: `webSearchQueries` and
    /// `groundingChunks[].web.{uri,title}`. Read as a value, so a shape we
    /// do not expect cannot break the answer.
    #[serde(default)]
    grounding_metadata: Option<Value>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Vec<WirePart>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePart {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: bool,
    #[serde(default)]
    thought_signature: Option<String>,
    #[serde(default)]
    function_call: Option<FunctionCall>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FunctionCall {
    #[serde(default)]
    name: String,
    #[serde(default)]
    args: Option<Value>,
    /// Streamed arguments (`streamFunctionCallArguments`).
    #[serde(default)]
    partial_args: Vec<PartialArg>,
    /// More pieces of this call follow.
    #[serde(default)]
    will_continue: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

#[derive(Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    #[serde(default)]
    prompt_token_count: Option<u64>,
    #[serde(default)]
    cached_content_token_count: Option<u64>,
    #[serde(default)]
    candidates_token_count: Option<u64>,
    #[serde(default)]
    thoughts_token_count: Option<u64>,
}

impl SseDecoder for GeminiDecoder {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<Progress, LlmError> {
        let value: Value = serde_json::from_str(&event.data).map_err(|error| {
            LlmError::stream(format!(
                "Gemini sent a malformed chunk ({error}); try again"
            ))
        })?;
        // A JSON array of chunks is what the non-SSE stream sends; accept it.
        let chunks = match value {
            Value::Array(chunks) => chunks,
            chunk => vec![chunk],
        };
        for chunk in chunks {
            if let Some(error) = error_of(&chunk) {
                return Err(api_error(error));
            }
            let chunk: Chunk = serde_json::from_value(chunk).map_err(|error| {
                LlmError::stream(format!(
                    "Gemini sent a malformed chunk ({error}); try again"
                ))
            })?;
            self.chunk(chunk, out)?;
        }
        Ok(Progress::Continue)
    }

    fn end(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), LlmError> {
        let Some(reason) = self.stop_reason() else {
            return Err(LlmError::stream(
                "the Gemini stream ended before the answer was complete; try again",
            ));
        };
        self.close_open(out);
        self.end_streamed_call(out)?;
        self.found.emit(out);
        out.push_back(ModelEvent::Finished(reason));
        Ok(())
    }

    fn salvage(&mut self, out: &mut VecDeque<ModelEvent>) {
        if matches!(self.open, Open::Text { .. }) {
            self.close_open(out);
        }
    }

    fn unframed(
        &mut self,
        text: &str,
        _out: &mut VecDeque<ModelEvent>,
    ) -> Result<Progress, LlmError> {
        let start = text.find(['{', '[']).unwrap_or(text.len());
        for value in serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>() {
            let Ok(value) = value else { break };
            let candidates = match value {
                Value::Array(items) => items,
                other => vec![other],
            };
            if let Some(error) = candidates.iter().find_map(error_of) {
                return Err(api_error(error));
            }
        }
        Ok(Progress::Continue)
    }
}

impl GeminiDecoder {
    /// Notes the searches and sources of a chunk's grounding metadata.
    fn note_grounding(&mut self, grounding: &Value) {
        let queries = grounding.get("webSearchQueries").and_then(Value::as_array);
        for query in queries.into_iter().flatten().filter_map(Value::as_str) {
            self.found.query(query);
        }
        let chunks = grounding.get("groundingChunks").and_then(Value::as_array);
        for web in chunks.into_iter().flatten().filter_map(|c| c.get("web")) {
            if let Some(uri) = web.get("uri").and_then(Value::as_str) {
                let title = web.get("title").and_then(Value::as_str);
                self.found.source(uri, title.unwrap_or_default());
            }
        }
    }

    fn chunk(&mut self, chunk: Chunk, out: &mut VecDeque<ModelEvent>) -> Result<(), LlmError> {
        if self.response_id.is_none() {
            self.response_id = chunk.response_id.filter(|id| !id.is_empty());
        }
        if let Some(reason) = chunk.prompt_feedback.and_then(|f| f.block_reason)
            && !reason.is_empty()
            && reason != "BLOCK_REASON_UNSPECIFIED"
        {
            self.blocked = true;
        }
        // `candidateCount` is never set, so the first candidate is the answer.
        if let Some(candidate) = chunk.candidates.into_iter().next() {
            if let Some(grounding) = &candidate.grounding_metadata {
                self.note_grounding(grounding);
            }
            for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
                self.part(part, out)?;
            }
            if let Some(reason) = candidate.finish_reason.filter(|r| !r.is_empty()) {
                self.close_open(out);
                self.end_streamed_call(out)?;
                self.finish_reason = Some(reason);
            }
        }
        if let Some(usage) = chunk.usage_metadata {
            let usage = usage.normalised();
            if self.last_usage != Some(usage) {
                self.last_usage = Some(usage);
                out.push_back(ModelEvent::Usage(usage));
            }
        }
        Ok(())
    }

    fn part(&mut self, part: WirePart, out: &mut VecDeque<ModelEvent>) -> Result<(), LlmError> {
        if let Some(call) = part.function_call {
            self.close_open(out);
            return self.function_call(call, part.thought_signature, out);
        }
        let Some(piece) = part.text else {
            // Parts we do not handle (inline data, code execution); keep a
            // signature they carry, so the next request can return it.
            if let Some(signature) = part.thought_signature {
                self.close_open(out);
                out.push_back(ModelEvent::PartCompleted(carrier(signature)));
            }
            return Ok(());
        };
        // A second signature in one part starts a new part, so both are kept.
        let resigned =
            |signature: &Option<String>| signature.is_some() && part.thought_signature.is_some();
        let same_kind = match &self.open {
            Open::Text { signature, .. } => !part.thought && !resigned(signature),
            Open::Thought { signature, .. } => part.thought && !resigned(signature),
            Open::Nothing => false,
        };
        if !same_kind {
            self.close_open(out);
            self.open = if part.thought {
                Open::Thought {
                    text: String::new(),
                    signature: None,
                }
            } else {
                Open::Text {
                    text: String::new(),
                    signature: None,
                }
            };
        }
        let (Open::Text { text, signature } | Open::Thought { text, signature }) = &mut self.open
        else {
            return Ok(());
        };
        if part.thought_signature.is_some() {
            *signature = part.thought_signature;
        }
        if !piece.is_empty() {
            text.push_str(&piece);
            if text.len() > MAX_PART_BYTES {
                return Err(LlmError::stream(format!(
                    "one part of Gemini's answer grew past {} MiB, so the stream is broken; try again",
                    MAX_PART_BYTES >> 20
                )));
            }
            out.push_back(if part.thought {
                ModelEvent::ReasoningDelta(piece)
            } else {
                ModelEvent::TextDelta(piece)
            });
        }
        Ok(())
    }

    /// A `functionCall` part: a whole call, or a piece of a streamed one.
    fn function_call(
        &mut self,
        call: FunctionCall,
        signature: Option<String>,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), LlmError> {
        let signature = signature.filter(|s| !s.is_empty());
        let continues = self.streaming.as_ref().is_some_and(|pending| {
            (call.name.is_empty() || call.name == pending.name) && call.args.is_none()
        });
        if !continues {
            self.end_streamed_call(out)?;
        }
        let pieces = !call.partial_args.is_empty() || call.will_continue;
        if !continues && !pieces {
            if call.name.is_empty() && call.args.is_none() {
                // An empty `functionCall` with no call streaming: nothing
                // to run (never a call with no name and made-up arguments).
                return Ok(());
            }
            let arguments = match call.args {
                None | Some(Value::Null) => "{}".to_owned(),
                Some(args) => args.to_string(),
            };
            return self.call(call.name, arguments, signature, out);
        }
        let pending = self
            .streaming
            .get_or_insert_with(|| StreamedCall::new(call.name.clone(), None, None));
        if pending.name.is_empty() {
            pending.name = call.name;
        }
        if let Some(args) = call.args {
            pending.merge(args);
        }
        if signature.is_some() {
            pending.signature = signature;
        }
        for piece in call.partial_args {
            pending.apply(piece);
        }
        if !call.will_continue {
            self.end_streamed_call(out)?;
        }
        Ok(())
    }

    /// Reports the call whose arguments were streaming, if any, whole.
    fn end_streamed_call(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), LlmError> {
        let Some(pending) = self.streaming.take() else {
            return Ok(());
        };
        let arguments = pending.arguments();
        self.call(pending.name, arguments, pending.signature, out)
    }

    fn call(
        &mut self,
        name: String,
        arguments: String,
        signature: Option<String>,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), LlmError> {
        if self.calls >= MAX_TOOL_CALLS {
            return Err(LlmError::stream(format!(
                "Gemini made more than {MAX_TOOL_CALLS} tool calls in one answer, so the stream is broken; try again"
            )));
        }
        let response_id = self.response_id.clone();
        let prefix = self.call_prefix.get_or_insert_with(|| match response_id {
            Some(id) => format!("call_{id}"),
            None => format!("call_{}", uuid::Uuid::now_v7().simple()),
        });
        let id = format!("{prefix}_{}", self.calls);
        self.calls += 1;
        out.push_back(ModelEvent::ToolCallStarted {
            id: id.clone(),
            name: name.clone(),
        });
        let mut call = ToolCall::new(id, name, arguments);
        call.signature = signature;
        out.push_back(ModelEvent::PartCompleted(Part::ToolCall(call)));
        Ok(())
    }

    /// Completes the open part, if any.
    fn close_open(&mut self, out: &mut VecDeque<ModelEvent>) {
        match std::mem::take(&mut self.open) {
            Open::Nothing => {}
            Open::Text { text, signature } => {
                if let Some(signature) = signature {
                    out.push_back(ModelEvent::PartCompleted(carrier(signature)));
                }
                if !text.is_empty() {
                    out.push_back(ModelEvent::PartCompleted(Part::Text { text }));
                }
            }
            Open::Thought { text, signature } => {
                if !text.is_empty() || signature.is_some() {
                    out.push_back(ModelEvent::PartCompleted(Part::Reasoning {
                        text,
                        signature,
                        redacted: false,
                    }));
                }
            }
        }
    }

    fn stop_reason(&self) -> Option<StopReason> {
        if self.blocked {
            return Some(StopReason::Refusal);
        }
        let reason = match self.finish_reason.as_deref()? {
            "MAX_TOKENS" => StopReason::MaxTokens,
            "SAFETY"
            | "RECITATION"
            | "BLOCKLIST"
            | "PROHIBITED_CONTENT"
            | "SPII"
            | "LANGUAGE"
            | "IMAGE_SAFETY"
            | "IMAGE_PROHIBITED_CONTENT"
            | "IMAGE_RECITATION" => StopReason::Refusal,
            "MALFORMED_FUNCTION_CALL"
            | "UNEXPECTED_TOOL_CALL"
            | "TOO_MANY_TOOL_CALLS"
            | "MISSING_THOUGHT_SIGNATURE"
            | "MALFORMED_RESPONSE" => StopReason::Error,
            // STOP, OTHER and reasons added later: the model stopped.
            _ if self.calls > 0 => StopReason::ToolUse,
            _ => StopReason::EndTurn,
        };
        Some(reason)
    }
}

/// An empty reasoning part that holds a text part's signature.
fn carrier(signature: String) -> Part {
    Part::Reasoning {
        text: String::new(),
        signature: Some(signature),
        redacted: false,
    }
}

impl WireUsage {
    fn normalised(&self) -> Usage {
        let cached = self.cached_content_token_count.unwrap_or(0);
        let thoughts = self.thoughts_token_count.unwrap_or(0);
        Usage {
            input_tokens: self.prompt_token_count.unwrap_or(0).saturating_sub(cached),
            output_tokens: self.candidates_token_count.unwrap_or(0) + thoughts,
            reasoning_tokens: thoughts,
            cache_read_tokens: cached,
            cache_write_tokens: 0,
        }
    }
}

/// The `error` object of an error body or chunk.
fn error_of(value: &Value) -> Option<&Value> {
    value.get("error").filter(|e| e.is_object())
}

/// Classifies a Google API error object (`{code, message, status, details}`).
pub(super) fn api_error(error: &Value) -> LlmError {
    let status = error.get("status").and_then(Value::as_str).unwrap_or("");
    let code = error.get("code").and_then(Value::as_u64);
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    let quoted = classify::quote(message);
    let retry_after = retry_delay(error);
    let overflow = classify::mentions_context_overflow(&quoted) || {
        let lower = quoted.to_lowercase();
        lower.contains("exceeds the maximum number of tokens")
            || (lower.contains("token count") && lower.contains("exceeds"))
    };
    let invalid = if overflow {
        ErrorKind::ContextOverflow
    } else {
        ErrorKind::InvalidRequest
    };
    // The status says more than the code; the code decides without one.
    let kind = match (status, code) {
        ("RESOURCE_EXHAUSTED", _) => ErrorKind::RateLimited { retry_after },
        ("UNAVAILABLE", _) => ErrorKind::Overloaded { retry_after },
        ("PERMISSION_DENIED" | "UNAUTHENTICATED", _) => ErrorKind::Auth,
        ("INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" | "NOT_FOUND", _) => invalid,
        ("", Some(429)) => ErrorKind::RateLimited { retry_after },
        ("", Some(503)) => ErrorKind::Overloaded { retry_after },
        ("", Some(401 | 403)) => ErrorKind::Auth,
        ("", Some(400 | 404 | 413)) => invalid,
        // INTERNAL, DEADLINE_EXCEEDED, UNKNOWN, and the rest.
        _ => ErrorKind::Server,
    };
    let detail = match (status.is_empty(), quoted.is_empty()) {
        (false, false) => format!("{status}: {quoted}"),
        (false, true) => status.to_owned(),
        (true, false) => quoted,
        (true, true) => "no details given".to_owned(),
    };
    let advice = match kind {
        ErrorKind::RateLimited {
            retry_after: Some(wait),
        }
        | ErrorKind::Overloaded {
            retry_after: Some(wait),
        } => {
            format!("retry after {} s", classify::seconds(wait))
        }
        ErrorKind::ContextOverflow => "compact the conversation or start a new session".to_owned(),
        ErrorKind::Auth => format!("check the key in {}", PROVIDER.key_env),
        ErrorKind::InvalidRequest => "the request needs to change before it can succeed".to_owned(),
        _ => "try again in a moment".to_owned(),
    };
    LlmError::new(
        kind,
        None,
        format!("Gemini reported an error ({detail}); {advice}"),
    )
}

/// The wait a `google.rpc.RetryInfo` detail asks for (`"retryDelay": "30s"`).
fn retry_delay(error: &Value) -> Option<Duration> {
    let details = error.get("details")?.as_array()?;
    details.iter().find_map(|detail| {
        let delay = detail.get("retryDelay")?.as_str()?;
        let seconds: f64 = delay.trim().strip_suffix('s')?.parse().ok()?;
        (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
    })
}

#[cfg(test)]
mod tests;
