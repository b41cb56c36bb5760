//! The Anthropic Messages API (`POST {base_url}/v1/messages`, streamed).
//!
//! The request body is built in [`request`], the event stream decoded in
//! [`decode`]; this module only ties them to HTTP.

mod decode;
mod lookback;
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
    label: "Anthropic",
    key_env: "ANTHROPIC_API_KEY",
};

const API_VERSION: &str = "2023-06-01";

/// A client for the Anthropic Messages API.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    config: ClientConfig,
}

impl AnthropicClient {
    pub fn new(config: ClientConfig) -> Self {
        Self { config }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }
}

impl ModelClient for AnthropicClient {
    fn api(&self) -> &'static str {
        "anthropic"
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ModelStream {
        let body = match body_bytes(&request::body(request), request.sampling) {
            Ok(body) => body,
            Err(error) => return failed(serialise_error(&error)),
        };
        let mut headers = HeaderMap::new();
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(key) = &self.config.api_key {
            match HeaderValue::from_str(key) {
                Ok(mut value) => {
                    value.set_sensitive(true);
                    headers.insert("x-api-key", value);
                }
                Err(_) => return failed(bad_key_error(PROVIDER)),
            }
        }
        stream_sse(
            &self.config,
            SseRequest {
                provider: PROVIDER,
                url: format!("{}/v1/messages", self.config.base_url),
                headers,
                body,
                decode: decode_anthropic_sse,
            },
        )
    }
}

/// Decodes a raw Anthropic Messages event stream (the body of a streaming
/// response) into model events: the exact path live responses take, minus
/// HTTP and the idle timeout.
pub fn decode_anthropic_sse<S, E>(bytes: S) -> ModelStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<LlmError> + Send + 'static,
{
    crate::sse::decode_with(bytes, decode::AnthropicDecoder::default())
}
