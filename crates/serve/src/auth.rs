//! Who may use the API: a bearer token, required off loopback.
//!
//! Invariants:
//! - Bound to anything but a loopback address, the server does not start
//!   without a token (exit 2, one line saying how to give one): the API runs
//!   commands on this machine.
//! - With a token (also on loopback, when one is set) every request needs
//!   `Authorization: Bearer TOKEN`, `/openapi.json` included; anything else
//!   is 401 with a JSON error and a `WWW-Authenticate` header.
//! - The token is compared in constant time (over the expected token's
//!   length: only a length mismatch shows), and it is never printed.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use gyre_host::Exit;

/// The variable read for the token when `--token-env` names none.
pub const TOKEN_VAR: &str = "GYRE_SERVER_TOKEN";

/// The bearer token clients must send (never shown by `Debug`).
#[derive(Clone)]
pub struct Token(Arc<str>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

/// The token for a server bound to `host`: from `--token-env VAR` (which
/// must then be set), else from `GYRE_SERVER_TOKEN` if set; refused when
/// `host` is not loopback and there is none.
pub fn token_for(
    host: IpAddr,
    token_env: Option<&str>,
    read: impl Fn(&str) -> Option<String>,
) -> Result<Option<Token>, Exit> {
    let token = match token_env {
        Some(var) => match read(var).filter(|t| !t.trim().is_empty()) {
            Some(token) => Some(token),
            None => {
                return Err(Exit::usage(format!(
                    "--token-env names {var}, which is not set (or empty): set it to the bearer token clients must send"
                )));
            }
        },
        None => read(TOKEN_VAR).filter(|t| !t.trim().is_empty()),
    };
    if token.is_none() && !host.is_loopback() {
        return Err(Exit::usage(format!(
            "gyre serve on {host} (not a loopback address) needs a bearer token: set {TOKEN_VAR} (or name another variable with --token-env), or listen on 127.0.0.1"
        )));
    }
    Ok(token.map(|t| Token(Arc::from(t.trim()))))
}

/// Rejects requests without the right `Authorization: Bearer` header.
pub async fn require_token(State(token): State<Token>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim);
    match presented {
        Some(given) if same(given.as_bytes(), token.0.as_bytes()) => next.run(request).await,
        Some(_) => unauthorized("the bearer token is wrong"),
        None => unauthorized("this server needs `Authorization: Bearer TOKEN` on every request"),
    }
}

fn unauthorized(message: &str) -> Response {
    let mut response = ApiError::new(StatusCode::UNAUTHORIZED, message).into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"gyre\""),
    );
    response
}

/// Equal, in time that depends only on `expected`'s length.
fn same(given: &[u8], expected: &[u8]) -> bool {
    let mut difference = u8::from(given.len() != expected.len());
    for (i, want) in expected.iter().enumerate() {
        // Past the end of `given`, compare with 0 (the length already differs).
        let got = given.get(i).copied().unwrap_or(0);
        difference |= got ^ want;
    }
    difference == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |var| pairs.iter().find(|(k, _)| k == var).map(|(_, v)| v.clone())
    }

    #[test]
    fn loopback_needs_no_token_elsewhere_one_is_required() {
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        let anywhere: IpAddr = "0.0.0.0".parse().unwrap();
        assert!(token_for(loopback, None, env(&[])).unwrap().is_none());
        let err = token_for(anywhere, None, env(&[])).unwrap_err();
        assert_eq!(err.code, gyre_host::exit::USAGE);
        assert!(err.message.contains(TOKEN_VAR), "{err}");
        assert!(
            token_for(anywhere, None, env(&[(TOKEN_VAR, "  ")])).is_err(),
            "blank is none"
        );
        let token = token_for(anywhere, None, env(&[(TOKEN_VAR, "s3cret")]))
            .unwrap()
            .unwrap();
        assert_eq!(&*token.0, "s3cret");
        assert!(!format!("{token:?}").contains("s3cret"));
    }

    #[test]
    fn token_env_must_name_a_set_variable() {
        let loopback: IpAddr = "::1".parse().unwrap();
        let err = token_for(loopback, Some("MY_TOKEN"), env(&[])).unwrap_err();
        assert!(err.message.contains("MY_TOKEN"), "{err}");
        let token = token_for(loopback, Some("MY_TOKEN"), env(&[("MY_TOKEN", "x")]))
            .unwrap()
            .unwrap();
        assert_eq!(&*token.0, "x");
    }

    #[test]
    fn comparison() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abd", b"abc"));
        assert!(!same(b"ab", b"abc"));
        assert!(!same(b"abcd", b"abc"));
        assert!(!same(b"", b"abc"));
    }
}
