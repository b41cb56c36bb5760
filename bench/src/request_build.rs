//! Request build time over a large history, in-process: what the loop does
//! before a request goes out, for each wire API.
//!
//! `ModelClient::stream` serialises the request body synchronously and sends
//! nothing until the stream is polled, so the clock covers exactly the
//! `stream` call (building the wire's JSON for the system prompt, the 12 tool
//! schemas and the whole history, then `serde_json::to_vec`); the stream is
//! dropped unpolled after the clock stops.
//!
//! Not covered: gyre_core's token estimate before a request (`Meter`) is
//! crate-private, so it cannot be timed from here (it sums the lengths of
//! the history's strings: one pass over the messages, no serialisation).
//!
//! Invariants:
//! - The history, the clients and the tool specs are made before the clock.
//! - One warm-up per wire is polled to its end against the in-process mock
//!   server, which proves the client sends what it serialised: the recorded
//!   body must hold at least the history's text bytes, and the answer must
//!   end cleanly. Its body size is reported. Warm-ups are not recorded.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use futures::StreamExt;
use gyre_llm::{
    AnthropicClient, ClientConfig, GeminiClient, ModelClient, ModelEvent, ModelRequest,
    OpenAiChatClient, OpenAiResponsesClient, Sampling, ToolChoice,
};
use gyre_mock::{Item, MockServer, Reply, Script, Step, StreamReply, When};
use gyre_protocol::Message;
use gyre_tools::Registry;

use crate::history;
use crate::sse_wire::Wire;

/// The wires measured, in table order.
pub const WIRES: [Wire; 4] = [
    Wire::Anthropic,
    Wire::OpenAiChat,
    Wire::OpenAiResponses,
    Wire::Gemini,
];

/// A warm-up request must be answered within this.
const WARM_UP_LIMIT: Duration = Duration::from_secs(60);

/// The runs of one wire.
#[derive(Debug, Clone)]
pub struct WireSamples {
    pub wire: Wire,
    /// The serialised body, as the mock received it.
    pub body_bytes: usize,
    pub ms: Vec<f64>,
}

/// Times `stream` for each wire over `messages`, `runs` times each.
pub fn measure(messages: &[Message], runs: usize) -> anyhow::Result<Vec<WireSamples>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a tokio runtime")?;
    let workspace = tempfile::tempdir().context("cannot make a temp dir")?;
    let system = gyre_core::prompt::system_prompt(workspace.path(), None);
    let tools = Registry::builtin().specs();
    let history: Vec<Arc<Message>> = messages.iter().cloned().map(Arc::new).collect();
    let text_bytes = history::text_bytes(messages);
    let request = ModelRequest {
        model: "bench-model",
        system: &system,
        messages: &history,
        tools: &tools,
        tool_choice: ToolChoice::Auto,
        max_output_tokens: 8_192,
        cache_key: Some("bench-session"),
        cache_points: &[],
        sampling: &Sampling::NONE,
    };
    let mock = runtime
        .block_on(MockServer::start(answer_anything()))
        .context("cannot start the mock server")?;

    let mut out = Vec::new();
    for wire in WIRES {
        let client = client(wire, &mock);
        let body_bytes = runtime
            .block_on(warm_up(client.as_ref(), &request, &mock))
            .with_context(|| format!("{} warm-up request", wire.label()))?;
        ensure!(
            body_bytes >= text_bytes,
            "{}: the body sent was {body_bytes} bytes, less than the history's {text_bytes} \
             bytes of text",
            wire.label()
        );
        // Inside the runtime's context, as the loop calls it.
        let _context = runtime.enter();
        let mut ms = Vec::with_capacity(runs);
        for _ in 0..runs {
            let start = Instant::now();
            let stream = client.stream(&request);
            let elapsed = start.elapsed();
            drop(stream);
            ms.push(elapsed.as_secs_f64() * 1e3);
        }
        out.push(WireSamples {
            wire,
            body_bytes,
            ms,
        });
    }
    drop(mock);
    Ok(out)
}

/// One text answer for every request, on every wire.
fn answer_anything() -> Script {
    Script::new(vec![Step {
        when: When::default(),
        times: None,
        reply: Reply::Stream(StreamReply {
            items: vec![Item::Text("ok".into())],
            ..StreamReply::default()
        }),
    }])
}

pub(crate) fn client(wire: Wire, mock: &MockServer) -> Arc<dyn ModelClient> {
    let key = Some("bench".to_owned());
    match wire {
        Wire::Anthropic => Arc::new(AnthropicClient::new(ClientConfig::new(
            mock.anthropic_base_url(),
            key,
        ))),
        Wire::OpenAiChat => Arc::new(OpenAiChatClient::new(ClientConfig::new(
            mock.openai_base_url(),
            key,
        ))),
        Wire::OpenAiResponses => Arc::new(OpenAiResponsesClient::new(ClientConfig::new(
            mock.openai_base_url(),
            key,
        ))),
        Wire::Gemini => Arc::new(GeminiClient::new(ClientConfig::new(
            mock.gemini_base_url(),
            key,
        ))),
    }
}

/// Sends the request for real and reads the answer to its end; returns the
/// size of the body the mock received.
async fn warm_up(
    client: &dyn ModelClient,
    request: &ModelRequest<'_>,
    mock: &MockServer,
) -> anyhow::Result<usize> {
    let before = mock.requests().len();
    let mut stream = client.stream(request);
    let mut finished = false;
    let read = async {
        while let Some(event) = stream.next().await {
            match event {
                Ok(ModelEvent::Finished(_)) => finished = true,
                Ok(_) => {}
                Err(e) => bail!("the request failed: {e}"),
            }
        }
        Ok(())
    };
    tokio::time::timeout(WARM_UP_LIMIT, read)
        .await
        .with_context(|| format!("no answer within {WARM_UP_LIMIT:?}"))??;
    ensure!(finished, "the answer did not finish cleanly");
    let requests = mock.requests();
    ensure!(
        requests.len() == before + 1,
        "the mock saw {} requests, not one",
        requests.len() - before
    );
    let body = requests
        .last()
        .context("the mock recorded no request")?
        .body
        .to_string();
    Ok(body.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_every_wire_and_checks_what_was_sent() {
        let messages = history::generate(50_000, 3);
        let samples = measure(&messages, 2).expect("measures");
        let wires: Vec<Wire> = samples.iter().map(|s| s.wire).collect();
        assert_eq!(wires, WIRES);
        for s in &samples {
            assert_eq!(s.ms.len(), 2);
            assert!(s.body_bytes > history::text_bytes(&messages), "{s:?}");
        }
    }
}
