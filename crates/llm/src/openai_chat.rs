//! The OpenAI Chat Completions API (`POST {base_url}/chat/completions`,
//! streamed), also spoken by Ollama, vLLM, llama.cpp, LM Studio and OpenRouter.
//!
//! The request body is built in [`request`], the chunk stream decoded in
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
    label: "the OpenAI-compatible server",
    key_env: "OPENAI_API_KEY",
};

/// A client for the OpenAI Chat Completions API and compatible servers.
#[derive(Debug, Clone)]
pub struct OpenAiChatClient {
    config: ClientConfig,
}

impl OpenAiChatClient {
    pub fn new(config: ClientConfig) -> Self {
        Self { config }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }
}

impl ModelClient for OpenAiChatClient {
    fn api(&self) -> &'static str {
        "openai"
    }

    fn offers_web_search(&self, _model: &str, _with_tools: bool) -> bool {
        false
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ModelStream {
        let cache_key = request
            .cache_key
            .filter(|_| self.config.sends_prompt_cache_key());
        let body = match body_bytes(&request::body(request, cache_key), request.sampling) {
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
                url: format!("{}/chat/completions", self.config.base_url),
                headers,
                body,
                decode: decode_openai_chat_sse,
            },
        )
    }
}

/// Decodes a raw Chat Completions event stream (the body of a streaming
/// response) into model events: the exact path live responses take, minus
/// HTTP and the idle timeout.
pub fn decode_openai_chat_sse<S, E>(bytes: S) -> ModelStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<LlmError> + Send + 'static,
{
    crate::sse::decode_with(bytes, decode::ChatDecoder::default())
}
