//! Integration tests of gyre-llm over real HTTP on 127.0.0.1.

// Tests may panic on what they did not expect.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anthropic;
mod clients;
mod effort;
mod errors;
mod gemini;
mod openai;
mod openai_responses;
mod quirks;
mod retry;
mod sampling;
mod server;
mod sse_props;
mod timeouts;
mod tool_schema;
mod web_search;

use futures::StreamExt;
use gyre_llm::{LlmError, ModelEvent, ModelStream};

/// Drains a model stream: its events and the error that ended it, if any.
/// Bounded: a stream that neither ends nor fails within 30 s fails the test.
pub async fn drain(mut stream: ModelStream) -> (Vec<ModelEvent>, Option<LlmError>) {
    let drained = async {
        let mut events = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => events.push(event),
                Err(error) => return (events, Some(error)),
            }
        }
        (events, None)
    };
    tokio::time::timeout(std::time::Duration::from_secs(30), drained)
        .await
        .expect("the stream neither ended nor failed within 30 s")
}
