//! Model clients: one thin adapter per wire API, on reqwest.
//!
//! A [`ModelClient`] turns a [`ModelRequest`] into a stream of [`ModelEvent`]s.
//! Invariants every adapter keeps:
//! - The request body is serialised when [`ModelClient::stream`] is called; the
//!   HTTP request is sent when the stream is first polled. Dropping the stream
//!   aborts the request (that is how a run is cancelled).
//! - Deltas (`TextDelta`, `ReasoningDelta`) come as they arrive; a part is
//!   reported whole, once, by `PartCompleted` when its block ends, in stream
//!   order. A tool call's `PartCompleted` is sent the moment its arguments are
//!   complete, so the loop can start the tool while the model still streams;
//!   a call whose arguments do not parse waits for the stop reason and is
//!   dropped when the output limit cut it off (`cut_calls`).
//! - The last item of a successful stream is `Finished(stop_reason)`; a stream
//!   that ends without one is an error (`ErrorKind::Stream`).
//! - Errors are classified ([`ErrorKind`]) so that the loop can decide to retry,
//!   compact or give up; the message is one sentence a person can act on.
//! - [`Sampling`] fields are sent only when set, so a request without them
//!   serialises exactly as it would if they did not exist; provider options
//!   are merged into the body last.
//! - No retries happen here: retrying (and only before the first byte) is the
//!   loop's decision.
//! - Each adapter's decoder is public ([`decode_anthropic_sse`],
//!   [`decode_openai_chat_sse`], [`decode_openai_responses_sse`],
//!   [`decode_gemini_sse`]) and takes any byte stream; [`decode_recorded`]
//!   adds the HTTP status handling, so `gyre debug decode-stream` runs raw
//!   bytes through exactly the live code path.

mod anthropic;
pub mod catalog;
mod classify;
mod cut_calls;
mod effort;
mod error;
mod gemini;
mod http;
mod openai_chat;
mod openai_responses;
mod replay;
mod sampling;
mod sse;
#[cfg(test)]
mod testing;
pub mod tool_schema;
mod web_search;

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use gyre_protocol::{Message, Part, StopReason, ToolSpec, Usage};

pub use anthropic::{AnthropicClient, decode_anthropic_sse};
pub use effort::Effort;
pub use error::{ErrorKind, LlmError};
pub use gemini::{GeminiClient, decode_gemini_sse};
pub use http::{ClientConfig, http_client, http_client_for};
pub use http::{PromptCacheKey, http_client_with_connect_timeout};
pub use openai_chat::{OpenAiChatClient, decode_openai_chat_sse};
pub use openai_responses::{OpenAiResponsesClient, decode_openai_responses_sse};
pub use replay::{WireApi, decode_recorded};
/// HTTP header types, as `decode_recorded` takes them.
pub use reqwest::header;
pub use sampling::Sampling;
pub use tool_schema::SchemaDialect;
pub use web_search::WebSearch;

/// What to send to the model.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    pub model: &'a str,
    /// The assembled system prompt.
    pub system: &'a str,
    pub messages: &'a [Arc<Message>],
    pub tools: &'a [ToolSpec],
    pub tool_choice: ToolChoice,
    pub max_output_tokens: u32,
    /// A key that groups requests sharing a prefix (the session id), for
    /// providers whose prompt cache routes by it (OpenAI `prompt_cache_key`).
    pub cache_key: Option<&'a str>,
    /// Indices into `messages` where a cache entry should end, most useful
    /// first: the message before the change point of the step just taken
    /// (what this request can read), then the one before the next planned
    /// step's (what that step will read). Anthropic puts breakpoints there,
    /// since its cache is read only where a breakpoint wrote an entry; the
    /// others cache any prefix and ignore them.
    pub cache_points: &'a [usize],
    /// Temperature, top_p and provider options; [`Sampling::NONE`] for the
    /// provider's defaults. A reference, so that the request stays `Copy`.
    pub sampling: &'a Sampling,
}

/// Whether the model may call tools in this request. The tool list is sent
/// either way (providers reject histories with tool calls but no tools, and a
/// stable tool list keeps the prompt cache warm).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolChoice {
    Auto,
    None,
}

/// One normalised item of a model's streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    TextDelta(String),
    ReasoningDelta(String),
    /// A tool call began; its arguments follow.
    ToolCallStarted {
        id: String,
        name: String,
    },
    /// A part is complete: text, reasoning (with its signature) or a tool call
    /// (with its whole raw argument text).
    PartCompleted(Part),
    /// Usage so far; a later `Usage` replaces an earlier one of the same stream.
    Usage(Usage),
    Finished(StopReason),
}

pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, LlmError>> + Send>>;

/// A client for one wire API.
pub trait ModelClient: Send + Sync {
    /// A short name of the wire API (`anthropic`, `openai`, …).
    fn api(&self) -> &'static str;

    /// Serialises `request` now; sends it when the returned stream is polled.
    fn stream(&self, request: &ModelRequest<'_>) -> ModelStream;

    /// Whether a request for `model` (with function tools or not) that asks
    /// for the provider's web search ([`Sampling::web_search`]) offers it:
    /// OpenAI Chat Completions has none, Gemini 2.5 refuses it beside
    /// function tools.
    fn offers_web_search(&self, _model: &str, _with_tools: bool) -> bool {
        true
    }
}

/// A call id for servers that send none: unique across sessions, because
/// results are paired with calls by id in stored transcripts.
pub(crate) fn generated_call_id() -> String {
    format!("call_{}", uuid::Uuid::now_v7().simple())
}
