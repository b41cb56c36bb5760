//! The HTTP server: routes, request recording, and turning a chosen reply
//! into a response.
//!
//! Invariants:
//! - A request is recorded before it is answered, in arrival order, with
//!   its token count ([`crate::tokens`]); a request over the script's
//!   `context_window` is then refused with the provider's overflow error
//!   before a step is chosen.
//! - The record is bounded ([`MAX_RECORDED_REQUESTS`] requests and
//!   [`MAX_RECORDED_BYTES`] of bodies); past either bound the oldest records
//!   are dropped, so a long benchmark cannot exhaust memory.
//! - Shutting down (explicitly or by dropping the [`MockServer`]) stops
//!   accepting, ends every delay, stall and stream, and lets hyper close the
//!   connections; [`MockServer::shutdown`] waits for that.

use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::header;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::cache::{CacheSplit, PromptCache};
use crate::facts::RequestFacts;
use crate::matching::{Choice, ScriptState};
use crate::render::{RenderContext, Shape};
use crate::respond::{Answering, error_response, respond};
use crate::script::Script;
use crate::tokens::input_tokens;
use crate::wire_error::context_overflow_body;

/// The most requests kept by the record.
pub const MAX_RECORDED_REQUESTS: usize = 10_000;
/// The most request-body bytes kept by the record.
pub const MAX_RECORDED_BYTES: usize = 256 * 1024 * 1024;
/// Larger request bodies are refused (413) before they are read.
pub const MAX_REQUEST_BYTES: usize = 32 * 1024 * 1024;
/// How long [`MockServer::shutdown`] waits for connections to close.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The wire API of an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Api {
    /// `POST /v1/messages`
    #[serde(rename = "anthropic")]
    Anthropic,
    /// `POST /v1/chat/completions`
    #[serde(rename = "openai_chat")]
    OpenAiChat,
    /// `POST /v1/responses`
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// `POST /v1beta/models/{model}:streamGenerateContent` (and
    /// `:generateContent`)
    #[serde(rename = "gemini")]
    Gemini,
}

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    pub api: Api,
    pub path: String,
    /// Lower-cased names; repeated headers joined with `, `.
    pub headers: BTreeMap<String, String>,
    /// The JSON body, or the raw text as a JSON string when it was not JSON.
    pub body: Value,
    /// The mock's token count of the request: its body's bytes / 4, at
    /// least 1 (the count the script's `context_window` is checked against,
    /// and the default input usage of the answer). Absent in older records.
    #[serde(default)]
    pub input_tokens: u64,
    /// Of `input_tokens`, those served from the modelled prompt cache
    /// ([`MockServer::enable_prompt_cache`]; 0 when it is off).
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, those written to the cache (Anthropic only).
    #[serde(default)]
    pub cache_write_tokens: u64,
}

#[derive(Debug, Default)]
struct RequestLog {
    /// Each record with the size of its raw body.
    entries: VecDeque<(RecordedRequest, usize)>,
    bytes: usize,
}

impl RequestLog {
    fn push(&mut self, request: RecordedRequest, size: usize) {
        self.entries.push_back((request, size));
        self.bytes = self.bytes.saturating_add(size);
        while self.entries.len() > MAX_RECORDED_REQUESTS
            || (self.bytes > MAX_RECORDED_BYTES && self.entries.len() > 1)
        {
            if let Some((_, dropped)) = self.entries.pop_front() {
                self.bytes = self.bytes.saturating_sub(dropped);
            }
        }
    }
}

#[derive(Debug)]
struct Shared {
    script: Mutex<ScriptState>,
    log: Mutex<RequestLog>,
    /// `Some` once the prompt cache is modelled.
    cache: Mutex<Option<PromptCache>>,
    /// The token count's share of bytes / 4, in percent (100 by default).
    token_percent: AtomicU64,
    shutdown: CancellationToken,
}

/// What made-up call ids of this answer are built from: the turn, unless
/// the history already holds an id built from it (after a client compacted
/// its history, the turn count starts again), then the turn and the first
/// free round. Ids stay unique within a conversation, as a provider's are.
fn id_stem(raw_body: &str, turn: u32) -> String {
    let taken = |stem: &str| {
        ["toolu", "call"]
            .iter()
            .any(|prefix| raw_body.contains(&format!("\"{prefix}_{stem}_0\"")))
    };
    let plain = turn.to_string();
    if !taken(&plain) {
        return plain;
    }
    (1u32..)
        .map(|round| format!("{turn}r{round}"))
        .find(|stem| !taken(stem))
        .unwrap_or(plain)
}

/// A poisoned lock only means a panic elsewhere; the data is still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running mock server. Dropping it stops it (without waiting).
#[derive(Debug)]
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl MockServer {
    /// Starts a server on an ephemeral port of 127.0.0.1.
    pub async fn start(script: Script) -> std::io::Result<MockServer> {
        Self::start_on(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0), script).await
    }

    /// Starts a server on `addr` (port 0: any free port).
    pub async fn start_on(addr: SocketAddr, script: Script) -> std::io::Result<MockServer> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script: Mutex::new(ScriptState::new(script)),
            log: Mutex::new(RequestLog::default()),
            cache: Mutex::new(None),
            token_percent: AtomicU64::new(100),
            shutdown: CancellationToken::new(),
        });
        let stop = shared.shutdown.clone().cancelled_owned();
        let serve = axum::serve(listener, router(Arc::clone(&shared))).with_graceful_shutdown(stop);
        let task = tokio::spawn(std::future::IntoFuture::into_future(serve));
        Ok(MockServer {
            addr,
            shared,
            task: Some(task),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://HOST:PORT` (an unspecified bind address shows as loopback).
    pub fn url(&self) -> String {
        let mut addr = self.addr;
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr.ip() {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
            });
        }
        format!("http://{addr}")
    }

    /// The base URL an Anthropic client takes (it appends `/v1/messages`).
    pub fn anthropic_base_url(&self) -> String {
        self.url()
    }

    /// The base URL an OpenAI client takes (it appends `/chat/completions` or
    /// `/responses`).
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// The base URL a Gemini client takes (it appends
    /// `/v1beta/models/MODEL:streamGenerateContent?alt=sse`).
    pub fn gemini_base_url(&self) -> String {
        self.url()
    }

    /// The recorded requests, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.log)
            .entries
            .iter()
            .map(|(request, _)| request.clone())
            .collect()
    }

    /// Models the providers' prompt cache from now on: an answered request
    /// whose prompt starts like an earlier one's reports the shared part as
    /// cache reads (see the `cache` module), in its usage and its record.
    pub fn enable_prompt_cache(&self) {
        lock(&self.shared.cache).get_or_insert_with(PromptCache::default);
    }

    /// Counts every request's tokens at `percent` % of bytes / 4 from now
    /// on (a tokenizer denser than a client's estimate, as llama.cpp's is
    /// for code): the count recorded, checked against the window and
    /// reported as usage.
    pub fn count_tokens_at(&self, percent: u64) {
        self.shared
            .token_percent
            .store(percent.max(1), Ordering::Relaxed);
    }

    /// Replaces the script; the new steps start unused.
    pub fn set_script(&self, script: Script) {
        *lock(&self.shared.script) = ScriptState::new(script);
    }

    /// Stops the server and waits (a bounded time) for its connections to close.
    pub async fn shutdown(mut self) {
        self.shared.shutdown.cancel();
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
                .await
                .is_err()
        {
            tracing::warn!("mock server: connections still open after shutdown grace period");
            task.abort();
        }
    }

    /// Serves until Ctrl-C, then shuts down (for `gyre mock-server`).
    pub async fn run_until_ctrl_c(self) -> std::io::Result<()> {
        let stopped = tokio::signal::ctrl_c().await;
        self.shutdown().await;
        stopped
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
    }
}

/// Serves `script` on `addr` until Ctrl-C.
pub async fn serve_forever(addr: SocketAddr, script: Script) -> std::io::Result<()> {
    let server = MockServer::start_on(addr, script).await?;
    tracing::info!(url = %server.url(), "mock server listening");
    server.run_until_ctrl_c().await
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route(
            "/v1/messages",
            post(|state, uri, headers, body| answer(Api::Anthropic, state, uri, headers, body)),
        )
        .route(
            "/v1/chat/completions",
            post(|state, uri, headers, body| answer(Api::OpenAiChat, state, uri, headers, body)),
        )
        .route(
            "/v1/responses",
            post(|state, uri, headers, body| {
                answer(Api::OpenAiResponses, state, uri, headers, body)
            }),
        )
        .route("/v1beta/models/{call}", post(gemini))
        .route("/__mock/requests", get(recorded_requests))
        .route("/__mock/script", post(replace_script))
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES))
        .with_state(shared)
}

async fn recorded_requests(State(shared): State<Arc<Shared>>) -> Json<Vec<RecordedRequest>> {
    let log = lock(&shared.log);
    Json(log.entries.iter().map(|(r, _)| r.clone()).collect())
}

async fn replace_script(
    State(shared): State<Arc<Shared>>,
    Json(script): Json<Script>,
) -> StatusCode {
    *lock(&shared.script) = ScriptState::new(script);
    StatusCode::NO_CONTENT
}

fn header_map(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes());
        out.entry(name.as_str().to_ascii_lowercase())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert_with(|| value.into_owned());
    }
    out
}

/// Where the model name and the answer's shape come from.
#[derive(Debug, Clone)]
enum Endpoint {
    /// The body's `model` and `stream` fields.
    Body(Api),
    /// A Gemini path: the model and the method are in the URL.
    Gemini {
        model: String,
        /// `None`: a method the mock does not know.
        shape: Option<Shape>,
    },
}

async fn gemini(
    state: State<Arc<Shared>>,
    Path(call): Path<String>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (model, method) = call.split_once(':').unwrap_or((call.as_str(), ""));
    let sse = uri
        .query()
        .is_some_and(|q| q.split('&').any(|pair| pair == "alt=sse"));
    let shape = match method {
        "streamGenerateContent" if sse => Some(Shape::Sse),
        "streamGenerateContent" => Some(Shape::JsonArray),
        "generateContent" => Some(Shape::Whole),
        _ => None,
    };
    let endpoint = Endpoint::Gemini {
        model: model.to_string(),
        shape,
    };
    answer_at(endpoint, state, uri, headers, body).await
}

async fn answer(
    api: Api,
    state: State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer_at(Endpoint::Body(api), state, uri, headers, body).await
}

async fn answer_at(
    endpoint: Endpoint,
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let api = match endpoint {
        Endpoint::Body(api) => api,
        Endpoint::Gemini { .. } => Api::Gemini,
    };
    let raw = String::from_utf8_lossy(&body);
    let percent = shared.token_percent.load(Ordering::Relaxed);
    let input_tokens = (input_tokens(body.len()) * percent / 100).max(1);
    let parsed = serde_json::from_slice::<Value>(&body);
    let recorded = RecordedRequest {
        api,
        path: uri.path().to_string(),
        headers: header_map(&headers),
        body: match &parsed {
            Ok(json) => json.clone(),
            Err(_) => Value::String(raw.to_string()),
        },
        input_tokens,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
    };
    let log_size = body.len();

    let json = match parsed {
        Ok(json) => json,
        Err(e) => {
            lock(&shared.log).push(recorded, log_size);
            return error_response(
                api,
                StatusCode::BAD_REQUEST,
                &format!("mock: the request body is not JSON: {e}"),
            );
        }
    };
    let (model, shape) = match endpoint {
        Endpoint::Body(_) => {
            let streaming = json.get("stream").and_then(Value::as_bool).unwrap_or(false);
            let model = json.get("model").and_then(Value::as_str);
            let shape = if streaming { Shape::Sse } else { Shape::Whole };
            (model.unwrap_or("mock-model").to_string(), shape)
        }
        Endpoint::Gemini { model, shape } => match shape {
            Some(shape) => (model, shape),
            None => {
                lock(&shared.log).push(recorded, log_size);
                return error_response(
                    api,
                    StatusCode::NOT_FOUND,
                    &format!("mock: unknown Gemini method in {}", uri.path()),
                );
            }
        },
    };
    let facts = RequestFacts::of(api, &json);
    let choice = lock(&shared.script).choose(&facts, &raw, input_tokens);
    // Only an answered request reads or fills the cache; the record is
    // pushed once its split is known, before the answer goes out.
    let mut recorded = recorded;
    let cache = match &choice {
        Choice::Reply(_) => lock(&shared.cache)
            .as_mut()
            .map(|cache| cache.serve(api, &model, &json, input_tokens))
            .unwrap_or_default(),
        Choice::Overflow { .. } | Choice::NoStep => CacheSplit::default(),
    };
    recorded.cache_read_tokens = cache.read;
    recorded.cache_write_tokens = cache.write;
    lock(&shared.log).push(recorded, log_size);
    let reply = match choice {
        Choice::Reply(reply) => crate::capture::resolve(reply, &raw),
        Choice::Overflow { window } => {
            return (
                StatusCode::BAD_REQUEST,
                [(header::CONTENT_TYPE, "application/json")],
                context_overflow_body(api, input_tokens, window),
            )
                .into_response();
        }
        Choice::NoStep => {
            return error_response(
                api,
                StatusCode::BAD_REQUEST,
                &format!(
                    "mock: no scripted step matches this request (turn {}, {} tool results)",
                    facts.turn, facts.tool_results
                ),
            );
        }
    };
    let answering = Answering {
        api,
        shape,
        ctx: RenderContext {
            turn: facts.turn,
            id_stem: id_stem(&raw, facts.turn),
            input_tokens,
            cache,
            model,
            include_usage: json
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            created: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        },
    };
    respond(&answering, reply, &shared.shutdown).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(n: usize) -> RecordedRequest {
        RecordedRequest {
            api: Api::Anthropic,
            path: format!("/{n}"),
            headers: BTreeMap::new(),
            body: Value::Null,
            input_tokens: 1,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        }
    }

    #[test]
    fn the_record_drops_the_oldest_past_its_bounds() {
        let mut log = RequestLog::default();
        for n in 0..MAX_RECORDED_REQUESTS + 2 {
            log.push(request(n), 1);
        }
        assert_eq!(log.entries.len(), MAX_RECORDED_REQUESTS);
        assert_eq!(
            log.entries.front().map(|(r, _)| r.path.as_str()),
            Some("/2")
        );
        log.push(request(0), MAX_RECORDED_BYTES);
        // The huge one alone stays: the newest is always kept.
        assert_eq!(log.entries.len(), 1);
        assert_eq!(log.bytes, MAX_RECORDED_BYTES);
    }

    #[test]
    fn old_records_without_a_token_count_still_read() {
        let old = r#"{"api": "gemini", "path": "/p", "headers": {}, "body": null}"#;
        let record: RecordedRequest = serde_json::from_str(old).expect("reads");
        assert_eq!(record.input_tokens, 0);
    }

    #[test]
    fn api_names_on_the_wire() {
        let name = |api: Api| serde_json::to_string(&api).unwrap_or_default();
        assert_eq!(name(Api::OpenAiChat), r#""openai_chat""#);
        assert_eq!(name(Api::OpenAiResponses), r#""openai-responses""#);
        assert_eq!(name(Api::Gemini), r#""gemini""#);
    }
}

#[cfg(test)]
mod id_tests {
    use super::id_stem;

    #[test]
    fn made_up_ids_never_repeat_within_a_history() {
        assert_eq!(id_stem(r#"{"messages":[]}"#, 2), "2");
        let compacted = r#"{"messages":[{"id":"toolu_2_0"},{"id":"toolu_2r1_0"}]}"#;
        assert_eq!(id_stem(compacted, 2), "2r2");
        assert_eq!(id_stem(r#"{"call_id":"call_0_0"}"#, 0), "0r1");
    }
}
