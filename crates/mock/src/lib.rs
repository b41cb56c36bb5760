//! A scripted model server that speaks the providers' wire APIs over real HTTP
//! and SSE, with fault injection. Used by tests, benchmarks, `gyre demo` and
//! `gyre mock-server`; never by the loop or the providers.
//!
//! A [`Script`] is a list of [`Step`]s. For each request the server takes the
//! first step whose [`When`] matches the request and that is not used up
//! (`times`), and renders its [`Reply`] in the wire format of the endpoint that
//! was called:
//! - `POST /v1/messages` — Anthropic Messages (SSE when `"stream": true`);
//! - `POST /v1/chat/completions` — OpenAI Chat Completions (SSE when streaming);
//! - `POST /v1/responses` — OpenAI Responses (SSE when streaming);
//! - `POST /v1beta/models/{model}:streamGenerateContent` — Gemini (SSE with
//!   `alt=sse`, a JSON array without), and `:generateContent` (one response).
//!
//! The mock is an independent implementation of these wire formats (it does
//! not use gyre's clients), which is what makes it a useful test oracle.
//!
//! Matching looks only at the request itself (its API, its turn number = the
//! number of earlier model answers in its history, its tool results, its
//! text), so several conversations can share one server. Every request is
//! recorded ([`MockServer::requests`], or `GET /__mock/requests`); the script can be
//! replaced at run time ([`MockServer::set_script`], or `POST /__mock/script`).
//! A request no step answers gets HTTP 400 in the API's error format, naming
//! the turn and the number of tool results the server saw.
//!
//! Context window: the mock counts a request's input tokens as its body's
//! bytes / 4 (at least 1), records the count
//! ([`RecordedRequest::input_tokens`]) and reports it as the answer's default
//! input usage. With a [`Script::context_window`], a request counting more is
//! refused with HTTP 400 and that provider's real context-overflow error
//! (Anthropic `prompt is too long: N tokens > W maximum`, OpenAI
//! `context_length_exceeded`, Gemini `INVALID_ARGUMENT` "The input token count
//! (N) exceeds the maximum number of tokens allowed (W)."), before a step is
//! chosen: it is recorded but uses up no step.
//!
//! Prompt cache: after [`MockServer::enable_prompt_cache`], an answered
//! request whose prompt (model, tools, system, messages) starts like an
//! earlier one's reports the shared part as cache reads in its API's usage
//! fields (Anthropic `cache_read_input_tokens`/`cache_creation_input_tokens`,
//! OpenAI `cached_tokens`, Gemini `cachedContentTokenCount`) and in its record
//! ([`RecordedRequest::cache_read_tokens`]).
//!
//! Faults, for both reply kinds ([`StreamReply`], [`HttpReply`]): error
//! statuses with headers (`retry-after`, …) and bodies, a stall before the
//! headers, pauses between events, a stall at a position, a truncated stream
//! (a clean end without the final event), a reset (the connection dropped
//! mid-body: the client sees a broken body, never a clean end), and a stream
//! held open after its last event. An [`HttpReply`] body (or its shorthand, a
//! [`RawReply`]) replays given bytes split at arbitrary boundaries; an
//! [`Item::RawEvent`] puts a malformed event into an otherwise rendered
//! stream.

mod body;
mod cache;
mod capture;
mod facts;
mod faults;
mod matching;
mod raw;
mod render;
mod respond;
mod script;
mod server;
mod tokens;
mod wire_error;

pub use cache::without_cache_control;
pub use faults::{At, End, Stall};
pub use raw::{Chunking, RawReply};
pub use script::{HttpReply, Item, Reply, Script, ScriptError, Step, StreamReply, When};
pub use server::{
    Api, MAX_RECORDED_BYTES, MAX_RECORDED_REQUESTS, MAX_REQUEST_BYTES, MockServer, RecordedRequest,
    serve_forever,
};
