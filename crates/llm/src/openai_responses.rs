//! The OpenAI Responses API (`POST {base_url}/responses`, streamed, with
//! `store: false`: the whole conversation travels in every request, and
//! reasoning comes back encrypted so that it can be sent again).
//!
//! The request body is built in [`request`], the event stream decoded in
//! [`decode`]; this module only ties them to HTTP.

mod decode;
mod request;

use bytes::Bytes;
use futures::Stream;

use crate::classify::{Provider, serialise_error};
use crate::error::LlmError;
use crate::http::{ClientConfig, SseRequest, bearer_json_headers, failed, stream_sse};
use crate::sampling::body_bytes;
use crate::{ModelClient, ModelRequest, ModelStream};

pub(crate) const PROVIDER: Provider = Provider {
    label: "OpenAI",
    key_env: "OPENAI_API_KEY",
};

/// A client for the OpenAI Responses API.
#[derive(Debug, Clone)]
pub struct OpenAiResponsesClient {
    config: ClientConfig,
}

impl OpenAiResponsesClient {
    pub fn new(config: ClientConfig) -> Self {
        Self { config }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }
}

impl ModelClient for OpenAiResponsesClient {
    fn api(&self) -> &'static str {
        "openai-responses"
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ModelStream {
        let body = match body_bytes(&request::body(request), request.sampling) {
            Ok(body) => body,
            Err(error) => return failed(serialise_error(&error)),
        };
        let headers = match bearer_json_headers(&self.config, PROVIDER) {
            Ok(headers) => headers,
            Err(error) => return failed(error),
        };
        stream_sse(
            &self.config,
            SseRequest {
                provider: PROVIDER,
                url: format!("{}/responses", self.config.base_url),
                headers,
                body,
                decode: decode_openai_responses_sse,
            },
        )
    }
}

/// Decodes a raw Responses API event stream (the body of a streaming
/// response) into model events: the exact path live responses take, minus
/// HTTP and the idle timeout.
pub fn decode_openai_responses_sse<S, E>(bytes: S) -> ModelStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<LlmError> + Send + 'static,
{
    crate::sse::decode_with(bytes, decode::ResponsesDecoder::default())
}
