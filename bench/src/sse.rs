//! SSE decode throughput: a generated answer (see `sse_wire`), encoded per
//! wire API, fed in fixed-size chunks through gyre's public decoders on a
//! current-thread tokio runtime, as the CLI runs them.
//!
//! Invariants:
//! - The stream is generated and cut into chunks before the clock starts; the
//!   clock covers creating the decoder, polling it to its end and moving every
//!   `ModelEvent` into a pre-sized vector. Checking the events and dropping
//!   them happen after the clock stops.
//! - Every run is checked: no error item, the concatenated text deltas equal
//!   the answer's text, the completed tool calls equal the answer's calls
//!   (name and parsed arguments, in order), and the last event is `Finished`.
//!   The check does not count events of a particular kind, so a decoder that
//!   reports usage or starts differently still passes.
//! - One warm-up run per decoder (checked, not recorded).

use std::time::Instant;

use anyhow::{Context, bail, ensure};
use bytes::Bytes;
use futures::StreamExt;
use gyre_llm::{ModelEvent, ModelStream};
use gyre_protocol::Part;
use serde_json::Value;

use crate::sse_answer::Answer;
use crate::sse_wire::Wire;

/// The byte stream every decoder is given.
pub type ByteStream = futures::stream::Iter<std::vec::IntoIter<Result<Bytes, std::io::Error>>>;

/// One decoder to measure.
pub struct Case {
    pub wire: Wire,
    pub decode: fn(ByteStream) -> ModelStream,
}

/// The decoders measured, in table order. Adding a decoder is one line here
/// (its stream generator already exists in `sse_wire`).
pub const CASES: &[Case] = &[
    Case {
        wire: Wire::Anthropic,
        decode: gyre_llm::decode_anthropic_sse,
    },
    Case {
        wire: Wire::OpenAiChat,
        decode: gyre_llm::decode_openai_chat_sse,
    },
    Case {
        wire: Wire::OpenAiResponses,
        decode: gyre_llm::decode_openai_responses_sse,
    },
    Case {
        wire: Wire::Gemini,
        decode: gyre_llm::decode_gemini_sse,
    },
];

/// Text deltas in the generated answer: about 20 MiB as Anthropic events.
pub const TEXT_DELTAS: usize = 150_000;
const SEED: u64 = 0x5EED_55E0;

/// The generated answer shared by every case.
pub fn answer() -> Answer {
    Answer::generate(TEXT_DELTAS, SEED)
}

/// The samples of one decoder.
#[derive(Debug, Clone)]
pub struct SseSamples {
    pub label: &'static str,
    pub bytes: usize,
    pub sse_events: usize,
    pub model_events: usize,
    pub wall_ms: Vec<f64>,
}

impl SseSamples {
    pub fn mib(&self) -> f64 {
        self.bytes as f64 / (1024.0 * 1024.0)
    }

    /// Nanoseconds per SSE event, one per run.
    pub fn ns_per_event(&self) -> Vec<f64> {
        self.wall_ms
            .iter()
            .map(|ms| ms * 1e6 / self.sse_events as f64)
            .collect()
    }
}

/// Decodes the answer as `case`'s wire `runs` times (after a warm-up), handed
/// over in chunks of `chunk_bytes`.
pub fn measure(
    case: &Case,
    answer: &Answer,
    runs: usize,
    chunk_bytes: usize,
) -> anyhow::Result<SseSamples> {
    let encoded = case.wire.encode(answer);
    let text = answer.text();
    let calls = answer.calls();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a tokio runtime")?;
    let mut samples = SseSamples {
        label: case.wire.label(),
        bytes: encoded.bytes.len(),
        sse_events: encoded.events,
        model_events: 0,
        wall_ms: Vec::new(),
    };
    for run in 0..=runs {
        let chunks: Vec<Result<Bytes, std::io::Error>> = (0..encoded.bytes.len())
            .step_by(chunk_bytes)
            .map(|at| {
                Ok(encoded
                    .bytes
                    .slice(at..(at + chunk_bytes).min(encoded.bytes.len())))
            })
            .collect();
        let mut events: Vec<ModelEvent> = Vec::with_capacity(encoded.events + 16);
        let (elapsed, failure) = runtime.block_on(async {
            let start = Instant::now();
            let mut stream = (case.decode)(futures::stream::iter(chunks));
            let mut failure = None;
            while let Some(item) = stream.next().await {
                match item {
                    Ok(event) => events.push(event),
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
            (start.elapsed(), failure)
        });
        let label = if run == 0 {
            "warm-up run".to_owned()
        } else {
            format!("run {run} of {runs}")
        };
        if let Some(e) = failure {
            bail!(
                "SSE decode {}, {label}: the decoder failed: {e}",
                samples.label
            );
        }
        check(&events, &text, &calls)
            .with_context(|| format!("SSE decode {}, {label}", samples.label))?;
        samples.model_events = events.len();
        if run > 0 {
            samples.wall_ms.push(elapsed.as_secs_f64() * 1e3);
        }
    }
    Ok(samples)
}

fn check(events: &[ModelEvent], text: &str, calls: &[(String, Value)]) -> anyhow::Result<()> {
    let mut got_text = String::with_capacity(text.len());
    let mut got_calls = Vec::with_capacity(calls.len());
    for event in events {
        match event {
            ModelEvent::TextDelta(piece) => got_text.push_str(piece),
            ModelEvent::PartCompleted(Part::ToolCall(call)) => {
                let arguments: Value =
                    serde_json::from_str(&call.arguments).with_context(|| {
                        format!("tool call {} has arguments that are not JSON", call.id)
                    })?;
                got_calls.push((call.name.clone(), arguments));
            }
            _ => {}
        }
    }
    ensure!(
        got_text == text,
        "the text deltas add up to {} bytes, not the {} bytes sent (or differ)",
        got_text.len(),
        text.len()
    );
    ensure!(
        got_calls.len() == calls.len(),
        "{} tool calls decoded, {} sent",
        got_calls.len(),
        calls.len()
    );
    if let Some(i) = (0..calls.len()).find(|&i| got_calls[i] != calls[i]) {
        bail!(
            "tool call {i} differs: {:?} vs sent {:?}",
            got_calls[i],
            calls[i]
        );
    }
    ensure!(
        matches!(events.last(), Some(ModelEvent::Finished(_))),
        "the last event is {:?}, not Finished",
        events.last()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_decodes_a_small_answer_and_checks_out() {
        let answer = Answer::generate(3000, 11);
        for case in CASES {
            let samples = measure(case, &answer, 1, 1000).expect("decodes");
            assert_eq!(samples.wall_ms.len(), 1);
            assert!(samples.model_events > 3000, "{}", samples.model_events);
            assert!(samples.sse_events > 3000);
        }
    }

    #[test]
    fn a_wrong_answer_fails_the_check() {
        let answer = Answer::generate(1000, 2);
        let other = Answer::generate(1000, 3);
        let encoded = Wire::Anthropic.encode(&other);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let events: Vec<ModelEvent> = runtime.block_on(async {
            let chunks: Vec<Result<Bytes, std::io::Error>> = vec![Ok(encoded.bytes)];
            gyre_llm::decode_anthropic_sse(futures::stream::iter(chunks))
                .map(|e| e.expect("decodes"))
                .collect()
                .await
        });
        assert!(check(&events, &other.text(), &other.calls()).is_ok());
        assert!(check(&events, &answer.text(), &answer.calls()).is_err());
        assert!(check(&events[..events.len() - 1], &other.text(), &other.calls()).is_err());
    }
}
