//! A scripted model server that speaks the providers' wire APIs over real HTTP
//! and SSE, with fault injection. Used by tests, benchmarks, `gyre demo` and
//! `gyre mock-server`; never by the loop or the providers.
//!
//! A [`Script`] is a list of [`Step`]s. For each request the server takes the
//! first step whose [`When`] matches the request and that is not used up
//! (`times`), and renders its [`Reply`] in the wire format of the endpoint that
//! was called:
//! - `POST /v1/messages` — Anthropic Messages (SSE when `"stream": true`);
//! - `POST /v1/chat/completions` — OpenAI Chat Completions (SSE when streaming).
//!
//! Matching looks only at the request itself (its turn number = the number of
//! assistant messages in its history, its tool results, its text), so several
//! conversations can share one server. Every request is recorded
//! ([`MockServer::requests`], or `GET /__mock/requests`); the script can be
//! replaced at run time ([`MockServer::set_script`], or `POST /__mock/script`).
//! A request no step answers gets HTTP 400 in the API's error format, naming
//! the turn and the number of tool results the server saw.
//!
//! Faults (see [`StreamReply`] and [`HttpReply`]): error statuses with headers,
//! a delay before the headers, pauses between events, a stream cut in the
//! middle of an event (the client sees a broken body), and a stream held open
//! after its last event.

mod body;
mod matching;
mod render;
mod script;
mod server;
mod wire_error;

pub use script::{HttpReply, Item, Reply, Script, ScriptError, Step, StreamReply, When};
pub use server::{
    Api, MAX_RECORDED_BYTES, MAX_RECORDED_REQUESTS, MAX_REQUEST_BYTES, MockServer, RecordedRequest,
    serve_forever,
};
