//! Decoding the Responses API event stream.
//!
//! The answer is a list of output items, each opened by
//! `response.output_item.added`, grown by delta events and reported whole by
//! `response.output_item.done` (`PartCompleted`), in stream order:
//! - `message` → text (`output_text` and `refusal` deltas);
//! - `reasoning` → reasoning: its summaries (or, from open-weight models, its
//!   reasoning text) joined by blank lines, signed with `encrypted_content`.
//!   A blank-line `ReasoningDelta` separates summaries, so the deltas add up
//!   to the completed text;
//! - `function_call` → a tool call, its id the `call_id` (what
//!   `function_call_output` refers to). `ToolCallStarted` at `added`,
//!   `PartCompleted` at `done`: the arguments are complete then.
//! - `web_search_call` (the hosted web search) is not ours to run: its
//!   query, and the `url_citation` annotations of the message's text, are
//!   reported as one text part after the answer ([`crate::web_search`]);
//! - anything else (other server-side tools) is not ours to
//!   run and is ignored, as are event types we do not know, whatever the
//!   types of their fields (every field is read leniently: one of another
//!   type than ours is absent to us).
//!
//! The `done` item is authoritative; accumulated deltas stand in for fields it
//! lacks. `response.completed` and `response.incomplete` report usage and
//! then `Finished`; `response.failed` and `error` are classified errors.
//! Usage is normalised: `input` without the cached tokens, which go to
//! `cache_read`; `output` includes reasoning.
//!
//! The wire's shapes, their lenient reading and the error classification
//! are in `wire`; this module holds the decoder's state machine.

mod wire;

use std::collections::VecDeque;

use gyre_protocol::{Part, StopReason, ToolCall};
use serde_json::Value;

use crate::ModelEvent;
use crate::error::LlmError;
use crate::sse::{Progress, SseDecoder, SseEvent};
use crate::web_search::Found;
use wire::{WireEvent, WireItem, api_error};

/// The most bytes one item (text, reasoning, tool arguments) may reach.
const MAX_ITEM_BYTES: usize = 32 << 20;
/// The most items that may be open at once.
const MAX_OPEN_ITEMS: usize = 256;

#[derive(Default)]
pub(super) struct ResponsesDecoder {
    /// Open items by output index, in the order they were opened.
    open: Vec<(u64, Item)>,
    made_tool_calls: bool,
    refused: bool,
    /// Web searches made and sources cited so far.
    found: Found,
}

enum Item {
    Message(String),
    Reasoning {
        text: String,
        /// The summary (or content) index the last delta belonged to.
        section: Option<u64>,
    },
    Call {
        call_id: String,
        name: String,
        arguments: String,
        started: bool,
    },
    Ignored,
}

impl SseDecoder for ResponsesDecoder {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<Progress, LlmError> {
        let wire: WireEvent = match serde_json::from_str(&event.data) {
            Ok(wire) => wire,
            Err(_) if !is_known_event(&event.event) => return Ok(Progress::Continue),
            Err(error) => {
                return Err(LlmError::stream(format!(
                    "OpenAI sent a malformed `{}` event ({error}); try again",
                    event.event
                )));
            }
        };
        let index = wire.output_index.unwrap_or(0);
        match wire.kind.as_str() {
            "response.output_item.added" => {
                if let Some(item) = wire.item {
                    self.add_item(index, item, out)?;
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let refusal = wire.kind == "response.refusal.delta";
                if let Some(delta) = wire.delta.filter(|d| !d.is_empty()) {
                    self.text_delta(index, delta, refusal, out)?;
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let section = wire.summary_index.or(wire.content_index).unwrap_or(0);
                if let Some(delta) = wire.delta.filter(|d| !d.is_empty()) {
                    self.reasoning_delta(index, section, delta, out)?;
                }
            }
            "response.function_call_arguments.delta" => {
                if let (Some(Item::Call { arguments, .. }), Some(delta)) =
                    (self.item_mut(index), wire.delta)
                {
                    arguments.push_str(&delta);
                    check_size(arguments.len())?;
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(Item::Call { arguments, .. }), Some(whole)) =
                    (self.item_mut(index), wire.arguments)
                {
                    *arguments = whole;
                }
            }
            "response.output_item.done" => {
                let item = wire.item.unwrap_or_default();
                self.note_search(&item);
                self.finish_item(index, item, out);
            }
            "response.completed" | "response.incomplete" => {
                let response = wire.response;
                while let Some((index, _)) = self.open.first() {
                    let index = *index;
                    self.finish_item(index, WireItem::default(), out);
                }
                self.found.emit(out);
                if let Some(usage) = response.as_ref().and_then(|r| r.usage.as_ref()) {
                    out.push_back(ModelEvent::Usage(usage.normalised()));
                }
                let reason = if wire.kind == "response.incomplete" {
                    let reason = response
                        .and_then(|r| r.incomplete_details)
                        .and_then(|d| d.reason);
                    match reason.as_deref() {
                        Some("content_filter") => StopReason::Refusal,
                        // max_output_tokens, and reasons added later: the
                        // answer was cut short.
                        _ => StopReason::MaxTokens,
                    }
                } else if self.refused {
                    StopReason::Refusal
                } else if self.made_tool_calls {
                    StopReason::ToolUse
                } else {
                    StopReason::EndTurn
                };
                out.push_back(ModelEvent::Finished(reason));
                return Ok(Progress::Finished);
            }
            "response.failed" => {
                let error = wire.response.and_then(|r| r.error).unwrap_or(Value::Null);
                return Err(api_error(&error));
            }
            "error" => {
                let error = match wire.error {
                    Some(error @ Value::Object(_)) => error,
                    _ => serde_json::json!({"code": wire.code, "message": wire.message}),
                };
                return Err(api_error(&error));
            }
            _ => {}
        }
        Ok(Progress::Continue)
    }

    fn end(&mut self, _out: &mut VecDeque<ModelEvent>) -> Result<(), LlmError> {
        Err(LlmError::stream(
            "the OpenAI stream ended before the answer was complete; try again",
        ))
    }

    fn salvage(&mut self, out: &mut VecDeque<ModelEvent>) {
        let messages: Vec<u64> = (self.open.iter())
            .filter(|(_, item)| matches!(item, Item::Message(_)))
            .map(|(index, _)| *index)
            .collect();
        for index in messages {
            self.finish_item(index, WireItem::default(), out);
        }
    }
}

impl ResponsesDecoder {
    fn item_mut(&mut self, index: u64) -> Option<&mut Item> {
        self.open
            .iter_mut()
            .find(|(open, _)| *open == index)
            .map(|(_, item)| item)
    }

    fn add_item(
        &mut self,
        index: u64,
        item: WireItem,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), LlmError> {
        if self.open.len() >= MAX_OPEN_ITEMS {
            return Err(LlmError::stream(format!(
                "OpenAI opened more than {MAX_OPEN_ITEMS} output items at once, so the stream is broken; try again"
            )));
        }
        let item = match item.kind.as_str() {
            "message" => Item::Message(String::new()),
            "reasoning" => Item::Reasoning {
                text: String::new(),
                section: None,
            },
            "function_call" => {
                // A call without an id gets a made-up one now, so that its
                // start and its completion name the same call.
                let call_id = item
                    .call_id
                    .filter(|c| !c.is_empty())
                    .unwrap_or_else(crate::generated_call_id);
                let name = item.name.unwrap_or_default();
                let started = !name.is_empty();
                if started {
                    out.push_back(ModelEvent::ToolCallStarted {
                        id: call_id.clone(),
                        name: name.clone(),
                    });
                }
                Item::Call {
                    call_id,
                    name,
                    arguments: item.arguments.unwrap_or_default(),
                    started,
                }
            }
            _ => Item::Ignored,
        };
        // A repeated index replaces the old item (it can only be a server bug).
        self.open.retain(|(open, _)| *open != index);
        self.open.push((index, item));
        Ok(())
    }

    fn text_delta(
        &mut self,
        index: u64,
        delta: String,
        refusal: bool,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), LlmError> {
        // Text for an item that was never announced still counts.
        if self.item_mut(index).is_none() {
            self.open.push((index, Item::Message(String::new())));
        }
        if let Some(Item::Message(text)) = self.item_mut(index) {
            text.push_str(&delta);
            check_size(text.len())?;
            self.refused |= refusal;
            out.push_back(ModelEvent::TextDelta(delta));
        }
        Ok(())
    }

    fn reasoning_delta(
        &mut self,
        index: u64,
        section: u64,
        delta: String,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), LlmError> {
        if self.item_mut(index).is_none() {
            self.open.push((
                index,
                Item::Reasoning {
                    text: String::new(),
                    section: None,
                },
            ));
        }
        if let Some(Item::Reasoning {
            text,
            section: last,
        }) = self.item_mut(index)
        {
            if last.is_some_and(|last| last != section) && !text.is_empty() {
                text.push_str("\n\n");
                out.push_back(ModelEvent::ReasoningDelta("\n\n".to_owned()));
            }
            *last = Some(section);
            text.push_str(&delta);
            check_size(text.len())?;
            out.push_back(ModelEvent::ReasoningDelta(delta));
        }
        Ok(())
    }

    /// Notes a finished item's web search query or cited sources.
    fn note_search(&mut self, item: &WireItem) {
        if item.kind == "web_search_call" {
            self.found.responses_action(item.action.as_ref());
        }
        let annotations = item.content.iter().flatten().flat_map(|c| &c.annotations);
        annotations.for_each(|a| self.found.responses_annotation(a));
    }

    /// Reports the item at `index` whole (`done` is its final form, possibly
    /// empty when the stream ended without one).
    fn finish_item(&mut self, index: u64, done: WireItem, out: &mut VecDeque<ModelEvent>) {
        let Some(position) = self.open.iter().position(|(open, _)| *open == index) else {
            // A `done` without `added`: take it as it is.
            let item = match done.kind.as_str() {
                "message" => Item::Message(String::new()),
                "reasoning" => Item::Reasoning {
                    text: String::new(),
                    section: None,
                },
                "function_call" => Item::Call {
                    call_id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                    started: false,
                },
                _ => return,
            };
            self.open.push((index, item));
            return self.finish_item(index, done, out);
        };
        let (_, item) = self.open.remove(position);
        let part = match item {
            Item::Message(streamed) => {
                let mut whole = String::new();
                for piece in done.content.iter().flatten() {
                    if piece.kind == "refusal" {
                        self.refused = true;
                    }
                    whole.push_str(
                        piece
                            .text
                            .as_deref()
                            .or(piece.refusal.as_deref())
                            .unwrap_or(""),
                    );
                }
                let text = settle(streamed, whole, ModelEvent::TextDelta, out);
                if text.is_empty() {
                    return;
                }
                Part::Text { text }
            }
            Item::Reasoning { text: streamed, .. } => {
                let sections: Vec<&str> = if done.summary.is_empty() {
                    let content = done.content.iter().flatten();
                    content.filter_map(|c| c.text.as_deref()).collect()
                } else {
                    done.summary
                        .iter()
                        .filter_map(|s| s.text.as_deref())
                        .collect()
                };
                let whole = sections.join("\n\n");
                let text = settle(streamed, whole, ModelEvent::ReasoningDelta, out);
                let signature = done.encrypted_content.filter(|s| !s.is_empty());
                if text.is_empty() && signature.is_none() {
                    return;
                }
                Part::Reasoning {
                    text,
                    signature,
                    redacted: false,
                }
            }
            Item::Call {
                call_id,
                name,
                arguments,
                started,
            } => {
                let call_id = match done.call_id.filter(|c| !c.is_empty()) {
                    Some(given) if !started => given,
                    _ if call_id.is_empty() => crate::generated_call_id(),
                    _ => call_id,
                };
                let name = done.name.filter(|n| !n.is_empty()).unwrap_or(name);
                let arguments = done
                    .arguments
                    .filter(|a| !a.is_empty())
                    .unwrap_or(arguments);
                if !started {
                    out.push_back(ModelEvent::ToolCallStarted {
                        id: call_id.clone(),
                        name: name.clone(),
                    });
                }
                self.made_tool_calls = true;
                Part::ToolCall(ToolCall::new(call_id, name, arguments))
            }
            Item::Ignored => return,
        };
        out.push_back(ModelEvent::PartCompleted(part));
    }
}

/// The final text of an item: the `done` form when it has one, else what
/// streamed. Text that arrives only with `done` is sent as one delta first,
/// so that deltas always precede the completed part.
fn settle(
    streamed: String,
    whole: String,
    delta: fn(String) -> ModelEvent,
    out: &mut VecDeque<ModelEvent>,
) -> String {
    if whole.is_empty() {
        return streamed;
    }
    if streamed.is_empty() {
        out.push_back(delta(whole.clone()));
    }
    whole
}

fn is_known_event(name: &str) -> bool {
    name.starts_with("response.") || name == "error"
}

fn check_size(len: usize) -> Result<(), LlmError> {
    if len > MAX_ITEM_BYTES {
        return Err(LlmError::stream(format!(
            "one item of OpenAI's answer grew past {} MiB, so the stream is broken; try again",
            MAX_ITEM_BYTES >> 20
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
