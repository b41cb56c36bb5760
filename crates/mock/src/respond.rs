//! Turning a chosen reply into an HTTP response: the status and headers, the
//! body's frames, and the faults shared by every reply kind (a stall before
//! the headers, then [`BodyPlan`]'s stalls, truncations and resets).
//!
//! Invariants:
//! - Scripted headers are sent as given and override the defaults
//!   (`content-type`); an invalid scripted header is skipped with a warning,
//!   an invalid scripted status is answered with a 500 naming it.
//! - A scripted HTTP body is sent verbatim (in its chunks), whatever the API;
//!   without one the provider's usual error JSON for the status is sent.

use std::collections::BTreeMap;

use axum::Json;
use axum::body::Bytes;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio_util::sync::CancellationToken;

use crate::body::BodyPlan;
use crate::render::{RenderContext, Shape, render};
use crate::script::Reply;
use crate::server::Api;
use crate::wire_error::error_json;

/// How the request asked to be answered.
#[derive(Debug, Clone)]
pub(crate) struct Answering {
    pub api: Api,
    pub shape: Shape,
    pub ctx: RenderContext,
}

/// The provider's error JSON with `status`.
pub(crate) fn error_response(api: Api, status: StatusCode, message: &str) -> Response {
    (status, Json(error_json(api, status.as_u16(), message))).into_response()
}

fn invalid_status(api: Api, status: u16) -> Response {
    error_response(
        api,
        StatusCode::INTERNAL_SERVER_ERROR,
        &format!("mock: the script asks for an invalid status {status}"),
    )
}

fn json_or_text(body: &str) -> &'static str {
    if serde_json::from_str::<serde::de::IgnoredAny>(body).is_ok() {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    }
}

/// The response to `reply`, after its stall before the headers.
pub(crate) async fn respond(
    answering: &Answering,
    reply: Reply,
    shutdown: &CancellationToken,
) -> Response {
    let api = answering.api;
    let faults = match &reply {
        Reply::Http(reply) => reply.faults(),
        Reply::Stream(reply) => reply.faults(),
    };
    if !faults.stall_before_headers.wait(shutdown).await {
        return error_response(
            api,
            StatusCode::SERVICE_UNAVAILABLE,
            "mock: server shutting down",
        );
    }
    let (status, defaults, scripted, frames) = match reply {
        Reply::Http(reply) => {
            let Ok(status) = StatusCode::from_u16(reply.status) else {
                return invalid_status(api, reply.status);
            };
            let body = reply.body.unwrap_or_else(|| {
                let reason = status.canonical_reason().unwrap_or("scripted error");
                error_json(
                    api,
                    status.as_u16(),
                    &format!("mock: {} {reason}", status.as_u16()),
                )
                .to_string()
            });
            let content_type = json_or_text(&body);
            (
                status,
                vec![(header::CONTENT_TYPE, content_type)],
                reply.headers,
                reply.chunking.split(Bytes::from(body)),
            )
        }
        Reply::Stream(reply) => {
            let frames = render(api, answering.shape, &reply, &answering.ctx);
            (
                StatusCode::OK,
                vec![
                    (header::CONTENT_TYPE, answering.shape.content_type()),
                    (header::CACHE_CONTROL, "no-cache"),
                ],
                BTreeMap::new(),
                frames,
            )
        }
    };
    let body = BodyPlan::new(frames, &faults).into_body(shutdown.clone());
    let mut response = (status, body).into_response();
    for (name, value) in defaults {
        response
            .headers_mut()
            .insert(name, HeaderValue::from_static(value));
    }
    for (name, value) in scripted {
        match (
            HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            (Ok(name), Ok(value)) => {
                response.headers_mut().insert(name, value);
            }
            _ => tracing::warn!(%name, %value, "mock: skipping an invalid scripted header"),
        }
    }
    response
}
