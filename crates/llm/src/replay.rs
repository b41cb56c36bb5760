//! Decoding a recorded provider response with the live decoders, for
//! `gyre debug decode-stream`: a user shows what gyre made of a stream, and
//! fixture tests feed raw bytes through exactly the code a live answer takes.
//!
//! A successful response's body goes through the API's SSE decoder as it
//! arrives (nothing is buffered beyond what the decoder itself buffers); an
//! error status is classified from its (bounded) body as a live error
//! response is.

use std::str::FromStr;
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use reqwest::header::HeaderMap;

use crate::classify::{self, KeyPresence, Provider};
use crate::http::read_bounded;
use crate::{LlmError, ModelStream};

/// How long to wait for more of a recorded error body.
const RECORDED_BODY_WAIT: Duration = Duration::from_secs(10);

/// A wire API gyre speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireApi {
    Anthropic,
    OpenAiChat,
    OpenAiResponses,
    Gemini,
}

impl WireApi {
    /// The names the command line uses.
    pub const NAMES: [&'static str; 4] = ["anthropic", "openai", "openai-responses", "gemini"];

    fn provider(self) -> Provider {
        match self {
            WireApi::Anthropic => crate::anthropic::PROVIDER,
            WireApi::OpenAiChat => crate::openai_chat::PROVIDER,
            WireApi::OpenAiResponses => crate::openai_responses::PROVIDER,
            WireApi::Gemini => crate::gemini::PROVIDER,
        }
    }

    fn decode<S>(self, body: S) -> ModelStream
    where
        S: Stream<Item = Result<Bytes, LlmError>> + Send + 'static,
    {
        match self {
            WireApi::Anthropic => crate::decode_anthropic_sse(body),
            WireApi::OpenAiChat => crate::decode_openai_chat_sse(body),
            WireApi::OpenAiResponses => crate::decode_openai_responses_sse(body),
            WireApi::Gemini => crate::decode_gemini_sse(body),
        }
    }
}

impl FromStr for WireApi {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "anthropic" => Ok(WireApi::Anthropic),
            "openai" => Ok(WireApi::OpenAiChat),
            "openai-responses" => Ok(WireApi::OpenAiResponses),
            "gemini" => Ok(WireApi::Gemini),
            other => Err(format!(
                "unknown wire API `{other}`; use one of: {}",
                WireApi::NAMES.join(", ")
            )),
        }
    }
}

/// Decodes a recorded response: `status` and `headers` as received (a bare
/// SSE body is a 200 with no headers), `body` as it arrives.
pub fn decode_recorded<S>(api: WireApi, status: u16, headers: HeaderMap, body: S) -> ModelStream
where
    S: Stream<Item = Result<Bytes, LlmError>> + Send + 'static,
{
    if (200..300).contains(&status) {
        return api.decode(body);
    }
    let classified = async move {
        // A recorded body has all its bytes; the wait only guards a stdin
        // that is never closed.
        let text = read_bounded(body, RECORDED_BODY_WAIT).await;
        Err(classify::http_error(
            api.provider(),
            "the recorded request",
            KeyPresence::Given,
            status,
            &headers,
            &text,
        ))
    };
    Box::pin(futures::stream::once(classified))
}
