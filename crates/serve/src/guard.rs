//! What keeps web pages out: a page the user visits must not drive the API
//! through the browser (CSRF), nor read it by rebinding its own name to
//! 127.0.0.1 (DNS rebinding).
//!
//! Invariants:
//! - A request with a body must say `Content-Type: application/json`
//!   (parameters such as `charset` allowed), else 415. A browser sends a
//!   cross-origin request without asking first (a "simple request") only
//!   with `text/plain`, a form type or no type, so none of those ever
//!   reaches a handler. A request without a body (`POST …/abort`) needs no
//!   type.
//! - Without a token: the `Host` (or HTTP/2 `:authority`) must be
//!   `127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT` or the address bound,
//!   with the port bound; an `Origin`, when present, must be `http://` and
//!   one of those. Anything else is 403. A rebound name arrives with the
//!   page's host name, and every cross-origin request a browser sends with a
//!   body carries the page's `Origin`.
//! - With a token, the token is the guard ([`super::auth`]): a browser adds
//!   `Authorization` to a cross-origin request only after a CORS preflight,
//!   which this server never grants; `Host` and `Origin` are not checked, as
//!   a server reached by another name (`--host 0.0.0.0`, a proxy) sees
//!   names it cannot know.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// Whether the bearer token guards the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guarded {
    ByToken,
    ByOrigin,
}

/// What the guard compares with.
#[derive(Debug, Clone)]
pub struct Guard {
    guarded: Guarded,
    /// `HOST:PORT` names the server answers to (lowercase).
    hosts: Arc<[String]>,
}

impl Guard {
    /// The guard of a server listening on `bound`.
    pub fn new(bound: SocketAddr, guarded: Guarded) -> Guard {
        let port = bound.port();
        let mut hosts: Vec<String> = ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .map(|host| format!("{host}:{port}"))
            .collect();
        // `SocketAddr` writes an IPv6 address in brackets, as `Host` does.
        let bound = bound.to_string().to_ascii_lowercase();
        if !hosts.contains(&bound) {
            hosts.push(bound);
        }
        Guard {
            guarded,
            hosts: hosts.into(),
        }
    }

    /// Why `request` is refused, if it is.
    fn refusal(&self, request: &Request) -> Option<ApiError> {
        let headers = request.headers();
        if self.guarded == Guarded::ByOrigin {
            let host = request
                .uri()
                .authority()
                .map(|authority| authority.as_str())
                .or_else(|| headers.get(header::HOST)?.to_str().ok());
            if !host.is_some_and(|host| self.answers_to(host)) {
                return Some(ApiError::new(
                    StatusCode::FORBIDDEN,
                    format!(
                        "this server answers only to {} (the Host header names another)",
                        self.hosts.join(", ")
                    ),
                ));
            }
            if let Some(origin) = headers.get(header::ORIGIN) {
                let allowed = origin
                    .to_str()
                    .ok()
                    .and_then(|origin| origin.strip_prefix("http://"))
                    .is_some_and(|host| self.answers_to(host));
                if !allowed {
                    return Some(ApiError::new(
                        StatusCode::FORBIDDEN,
                        "requests from web pages of other origins are refused",
                    ));
                }
            }
        }
        if has_body(headers) && !is_json(headers) {
            return Some(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "a request body must be JSON sent with `Content-Type: application/json`",
            ));
        }
        None
    }

    fn answers_to(&self, host: &str) -> bool {
        self.hosts
            .iter()
            .any(|known| known.eq_ignore_ascii_case(host))
    }
}

/// Refuses what [`Guard`] refuses (see the module docs).
pub async fn check(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    match guard.refusal(&request) {
        Some(error) => error.into_response(),
        None => next.run(request).await,
    }
}

/// A body is announced by a non-zero length or a chunked transfer.
fn has_body(headers: &HeaderMap) -> bool {
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    match length {
        Some(length) => length > 0,
        None => headers.contains_key(header::TRANSFER_ENCODING),
    }
}

/// `application/json`, with parameters or not, in any case.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    fn request(headers: &[(&str, &str)]) -> Request {
        let mut builder = Request::builder().method("POST").uri("/sessions");
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(Body::empty()).unwrap()
    }

    fn status(guard: &Guard, headers: &[(&str, &str)]) -> Option<u16> {
        guard
            .refusal(&request(headers))
            .map(|error| error.status.as_u16())
    }

    #[test]
    fn on_loopback_without_a_token_only_local_names_and_json_pass() {
        let guard = Guard::new("127.0.0.1:4096".parse().unwrap(), Guarded::ByOrigin);
        let json = ("content-type", "application/json; charset=utf-8");
        let body = ("content-length", "2");
        for host in ["127.0.0.1:4096", "LOCALHOST:4096", "[::1]:4096"] {
            assert_eq!(
                status(&guard, &[("host", host), json, body]),
                None,
                "{host}"
            );
        }
        for host in ["evil.example:4096", "127.0.0.1:80", "localhost", ""] {
            assert_eq!(status(&guard, &[("host", host)]), Some(403), "{host}");
        }
        assert_eq!(status(&guard, &[]), Some(403), "no Host");
        let host = ("host", "127.0.0.1:4096");
        assert_eq!(
            status(&guard, &[host, ("origin", "http://localhost:4096")]),
            None
        );
        for origin in [
            "http://evil.example",
            "null",
            "https://127.0.0.1:4096",
            "http://127.0.0.1:4097",
        ] {
            assert_eq!(
                status(&guard, &[host, ("origin", origin)]),
                Some(403),
                "{origin}"
            );
        }
        for kind in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
        ] {
            let typed = [host, ("content-type", kind), body];
            assert_eq!(status(&guard, &typed), Some(415), "{kind}");
        }
        assert_eq!(status(&guard, &[host, body]), Some(415), "no type");
        let chunked = ("transfer-encoding", "chunked");
        assert_eq!(status(&guard, &[host, chunked]), Some(415));
        assert_eq!(status(&guard, &[host, ("content-length", "0")]), None);
    }

    #[test]
    fn with_a_token_any_name_passes_but_bodies_are_json() {
        let guard = Guard::new("0.0.0.0:4096".parse().unwrap(), Guarded::ByToken);
        let host = ("host", "gyre.internal:4096");
        assert_eq!(
            status(&guard, &[host, ("origin", "https://gyre.internal")]),
            None
        );
        let text = [
            host,
            ("content-type", "text/plain"),
            ("content-length", "9"),
        ];
        assert_eq!(status(&guard, &text), Some(415));
    }

    #[test]
    fn an_other_loopback_address_bound_is_a_name_too() {
        let guard = Guard::new("127.0.0.2:9".parse().unwrap(), Guarded::ByOrigin);
        assert_eq!(status(&guard, &[("host", "127.0.0.2:9")]), None);
        let guard = Guard::new("[::1]:9".parse().unwrap(), Guarded::ByOrigin);
        assert_eq!(status(&guard, &[("host", "[::1]:9")]), None);
    }
}
