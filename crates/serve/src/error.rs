//! Errors as the API sends them: a status and `{"error": "one sentence"}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use gyre_host::exit::{Exit, USAGE};

/// A failed request: what went wrong, in one sentence, with its status.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    pub fn no_session(id: &str) -> Self {
        Self::not_found(format!(
            "there is no session {id}; GET /sessions lists them"
        ))
    }

    pub fn shutting_down() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is shutting down",
        )
    }
}

/// A usage error of the host (a bad `cwd`, an unknown agent) is the client's;
/// anything else is the server's.
impl From<Exit> for ApiError {
    fn from(exit: Exit) -> Self {
        let status = if exit.code == USAGE {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        Self::new(status, exit.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::warn!(status = %self.status, "{}", self.message);
        }
        let body = serde_json::json!({ "error": self.message });
        (self.status, Json(body)).into_response()
    }
}
