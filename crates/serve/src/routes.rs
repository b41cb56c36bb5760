//! The endpoints (README "gyre serve"; `GET /openapi.json` describes them).
//!
//! Invariants:
//! - Every answer is JSON (the event stream aside); every error is
//!   `{"error": "one sentence"}` with a 4xx (the client's mistake) or 5xx
//!   status. Bodies are JSON, sent as `Content-Type: application/json`
//!   (the [`guard`] refuses any other type before a handler runs), with
//!   unknown fields refused so a typo is said, not ignored.
//! - Posting a prompt or reading events opens a stored session that is not
//!   open here (from any host's store); reading a session, answering a
//!   permission request or aborting never loads one.
//! - What is read back from the store (titles, messages) passes through the
//!   redactor, as `gyre sessions show` does; the live event stream is the
//!   run's own, as `--output-format stream-json` is.
//! - No handler waits for a run: a prompt is accepted (202) with its run
//!   number, and what it does is read from the event stream.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use gyre_core::{Abort, PermissionAnswer, RunRequest, SessionStatus, Submitted};
use gyre_store::SessionMeta;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::auth::{Token, require_token};
use super::error::ApiError;
use super::guard::{self, Guard, Guarded};
use super::openapi;
use super::sse::{self, Seen};
use super::state::AppState;

type Shared = Arc<AppState>;
type Answer = Result<Response, ApiError>;

/// Every route, behind the [`guard`] (for a server listening on `bound`),
/// and the token check in front of all when there is a token.
pub fn router(state: Shared, token: Option<Token>, bound: SocketAddr) -> Router {
    let api = Router::new()
        .route("/openapi.json", get(openapi_document))
        .route("/sessions", get(list).post(create))
        .route("/sessions/{id}", get(show))
        .route("/sessions/{id}/prompt", post(prompt))
        .route("/sessions/{id}/events", get(events))
        .route(
            "/sessions/{id}/permissions/{request_id}",
            post(answer_permission),
        )
        .route("/sessions/{id}/abort", post(abort))
        .fallback(no_such_endpoint)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state);
    let guarded = match token {
        Some(_) => Guarded::ByToken,
        None => Guarded::ByOrigin,
    };
    let guard = Guard::new(bound, guarded);
    // The layer added last runs first: the token, then the guard.
    let api = api.layer(axum::middleware::from_fn_with_state(guard, guard::check));
    match token {
        Some(token) => api.layer(axum::middleware::from_fn_with_state(token, require_token)),
        None => api,
    }
}

/// A session as listed: its stored facts, and its status when it is open
/// in this process.
#[derive(Serialize)]
struct SessionView<'a> {
    #[serde(flatten)]
    meta: &'a SessionMeta,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<SessionStatus>,
}

/// What a submitted prompt became.
#[derive(Serialize)]
struct RunView {
    run: u64,
    /// Runs that go before it (the running one included); 0: it started.
    ahead: usize,
}

impl From<Submitted> for RunView {
    fn from(submitted: Submitted) -> Self {
        match submitted {
            Submitted::Started { run } => RunView { run, ahead: 0 },
            Submitted::Queued { run, ahead } => RunView { run, ahead },
        }
    }
}

async fn openapi_document() -> Response {
    Json(openapi::document()).into_response()
}

#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct CreateBody {
    cwd: Option<PathBuf>,
    agent: Option<String>,
    title: Option<String>,
    prompt: Option<String>,
}

async fn create(State(state): State<Shared>, body: Bytes) -> Answer {
    let body: CreateBody = if body.iter().all(u8::is_ascii_whitespace) {
        CreateBody::default()
    } else {
        parse(&body)?
    };
    if let Some(prompt) = &body.prompt {
        check_prompt(prompt)?;
    }
    if let Some(cwd) = &body.cwd
        && !cwd.is_absolute()
    {
        return Err(ApiError::bad_request(format!(
            "cwd must be an absolute path, not {}",
            cwd.display()
        )));
    }
    let title = body
        .title
        .as_deref()
        .or(body.prompt.as_deref())
        .unwrap_or("");
    let live = state
        .create(body.cwd.as_deref(), title, body.agent.as_deref())
        .await?;
    let meta = live
        .with_session(|session| session.meta.clone())
        .ok_or_else(|| ApiError::internal("the new session is busy before its first prompt"))?;
    let run = body
        .prompt
        .map(|prompt| RunView::from(live.submit(RunRequest::prompt(prompt))));
    let session = SessionView {
        meta: &meta,
        status: Some(live.status()),
    };
    let body = json!({ "session": session, "run": run });
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ListQuery {
    /// Subagents' sessions too.
    all: bool,
}

async fn list(
    State(state): State<Shared>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Answer {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let mut sessions = state
        .host
        .store
        .list_sessions()
        .await
        .map_err(|e| ApiError::internal(format!("cannot list the sessions: {e}")))?;
    let redactor = &state.host.settings.redactor;
    for meta in &mut sessions {
        redactor.redact_string(&mut meta.title);
    }
    let statuses = state.statuses();
    let views: Vec<SessionView<'_>> = sessions
        .iter()
        .filter(|meta| query.all || meta.parent_id.is_none())
        .map(|meta| SessionView {
            meta,
            status: statuses.get(&meta.id).copied(),
        })
        .collect();
    Ok(Json(json!({ "sessions": views })).into_response())
}

async fn show(State(state): State<Shared>, Path(id): Path<String>) -> Answer {
    let store = &state.host.store;
    let mut meta = store
        .get_session(&id)
        .await
        .map_err(|e| ApiError::internal(format!("cannot read session {id}: {e}")))?
        .ok_or_else(|| ApiError::no_session(&id))?;
    let mut messages = store
        .load_messages(&id)
        .await
        .map_err(|e| ApiError::internal(format!("cannot read session {id}: {e}")))?;
    let redactor = &state.host.settings.redactor;
    redactor.redact_string(&mut meta.title);
    for message in &mut messages {
        redactor.redact_message(message);
    }
    let live = state.live(&id);
    let session = SessionView {
        meta: &meta,
        status: live.as_ref().map(|live| live.status()),
    };
    let body = json!({
        "session": session,
        "last_seq": live.as_ref().map(|live| live.last_seq()),
        "queued": live.as_ref().map(|live| live.queued()).unwrap_or_default(),
        "messages": messages,
    });
    Ok(Json(body).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PromptBody {
    prompt: String,
}

async fn prompt(State(state): State<Shared>, Path(id): Path<String>, body: Bytes) -> Answer {
    let body: PromptBody = parse(&body)?;
    check_prompt(&body.prompt)?;
    let live = state.open(&id).await?.live;
    let run = RunView::from(live.submit(RunRequest::prompt(body.prompt)));
    let body = json!({ "session_id": id, "run": run.run, "ahead": run.ahead });
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}

#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct EventsQuery {
    after: Option<u64>,
}

async fn events(
    State(state): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    query: Result<Query<EventsQuery>, QueryRejection>,
) -> Answer {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let seen = match headers.get("last-event-id") {
        None => Seen::Upto(query.after.unwrap_or(0)),
        Some(value) => value
            .to_str()
            .ok()
            .and_then(Seen::parse_last_event_id)
            .ok_or_else(|| {
                ApiError::bad_request(
                    "Last-Event-ID must be an event id this server sent (EPOCH-SEQ)",
                )
            })?,
    };
    let opened = state.open(&id).await?;
    let stream = sse::response(opened.live, opened.epoch, seen, state.streams_end.clone());
    Ok(stream.into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PermissionBody {
    answer: String,
}

async fn answer_permission(
    State(state): State<Shared>,
    Path((id, request_id)): Path<(String, String)>,
    body: Bytes,
) -> Answer {
    let body: PermissionBody = parse(&body)?;
    let answer = match body.answer.as_str() {
        "allow" => PermissionAnswer::Allow,
        "always" => PermissionAnswer::AlwaysAllow,
        "deny" => PermissionAnswer::Deny,
        other => {
            return Err(ApiError::bad_request(format!(
                "answer must be \"allow\", \"always\" or \"deny\", not {other:?}"
            )));
        }
    };
    let answered = state
        .live(&id)
        .is_some_and(|live| live.answer_permission(&request_id, answer));
    if !answered {
        return Err(ApiError::not_found(format!(
            "session {id} has no permission request {request_id} waiting here"
        )));
    }
    Ok(Json(json!({ "answered": request_id })).into_response())
}

async fn abort(State(state): State<Shared>, Path(id): Path<String>) -> Answer {
    let (aborted, dropped) =
        match state.live(&id) {
            Some(live) => {
                let busy = live.is_busy();
                (busy, live.abort(Abort::Everything))
            }
            None => {
                // Not open here: nothing runs here, but say 404 for no session.
                let known =
                    state.host.store.get_session(&id).await.map_err(|e| {
                        ApiError::internal(format!("cannot read session {id}: {e}"))
                    })?;
                if known.is_none() {
                    return Err(ApiError::no_session(&id));
                }
                (false, Vec::new())
            }
        };
    Ok(Json(json!({ "aborted": aborted, "dropped": dropped })).into_response())
}

async fn no_such_endpoint(method: Method, uri: Uri) -> ApiError {
    ApiError::not_found(format!(
        "there is no endpoint {method} {}; GET /openapi.json lists them",
        uri.path()
    ))
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "{} does not take {method}; GET /openapi.json lists what it takes",
            uri.path()
        ),
    )
}

fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body is not the JSON expected: {e}")))
}

fn check_prompt(prompt: &str) -> Result<(), ApiError> {
    if prompt.trim().is_empty() {
        return Err(ApiError::bad_request(
            "the prompt is empty: say what gyre should do",
        ));
    }
    Ok(())
}
