//! The Gemini API (`POST {base_url}/v1beta/models/MODEL:streamGenerateContent?alt=sse`).
//!
//! The request body is built in [`request`], the chunk stream decoded in
//! [`decode`]; this module only ties them to HTTP. The key travels in the
//! `x-goog-api-key` header, never in the URL (URLs end up in error messages
//! and logs).

mod decode;
mod request;

use bytes::Bytes;
use futures::Stream;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};

use crate::classify::{Provider, bad_key_error, serialise_error};
use crate::error::LlmError;
use crate::http::{ClientConfig, SseRequest, failed, stream_sse};
use crate::sampling::body_bytes;
use crate::{ModelClient, ModelRequest, ModelStream};

pub(crate) const PROVIDER: Provider = Provider {
    label: "Gemini",
    key_env: "GEMINI_API_KEY",
};

/// A client for the Gemini API (Google AI Studio keys).
#[derive(Debug, Clone)]
pub struct GeminiClient {
    config: ClientConfig,
}

impl GeminiClient {
    pub fn new(config: ClientConfig) -> Self {
        Self { config }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }
}

impl ModelClient for GeminiClient {
    fn api(&self) -> &'static str {
        "gemini"
    }

    fn offers_web_search(&self, model: &str, with_tools: bool) -> bool {
        request::search_beside(model, with_tools)
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ModelStream {
        let body = match body_bytes(&request::body(request), request.sampling) {
            Ok(body) => body,
            Err(error) => return failed(serialise_error(&error)),
        };
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(key) = &self.config.api_key {
            match HeaderValue::from_str(key) {
                Ok(mut value) => {
                    value.set_sensitive(true);
                    headers.insert("x-goog-api-key", value);
                }
                Err(_) => return failed(bad_key_error(PROVIDER)),
            }
        }
        // "models/gemini-x" (the API's resource name) names the same model.
        let model = request
            .model
            .strip_prefix("models/")
            .unwrap_or(request.model);
        stream_sse(
            &self.config,
            SseRequest {
                provider: PROVIDER,
                url: format!(
                    "{}/v1beta/models/{model}:streamGenerateContent?alt=sse",
                    self.config.base_url
                ),
                headers,
                body,
                decode: decode_gemini_sse,
            },
        )
    }
}

/// Decodes a raw Gemini event stream (the body of a
/// `streamGenerateContent?alt=sse` response) into model events: the exact
/// path live responses take, minus HTTP and the idle timeout.
pub fn decode_gemini_sse<S, E>(bytes: S) -> ModelStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<LlmError> + Send + 'static,
{
    crate::sse::decode_with(bytes, decode::GeminiDecoder::default())
}
