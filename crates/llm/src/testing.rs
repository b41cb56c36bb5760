//! Test helpers: feeding a transcript to a decoder at many chunkings.

use bytes::Bytes;
use futures::StreamExt;

use crate::error::{ErrorKind, LlmError};
use crate::http::ByteStream;
use crate::{ModelEvent, ModelStream};

/// What a decode produced: the events, and the error that ended it, if any.
pub(crate) type Outcome = (Vec<ModelEvent>, Option<(ErrorKind, String)>);

/// Decodes `transcript` fed whole, byte by byte, line by line and at several
/// pseudo-random splits; asserts that every chunking gives the same outcome and
/// returns it.
pub(crate) async fn decode_all_ways(
    transcript: &str,
    decode: fn(ByteStream) -> ModelStream,
) -> Outcome {
    let bytes = transcript.as_bytes();
    let mut chunkings: Vec<Vec<Bytes>> = vec![
        vec![Bytes::copy_from_slice(bytes)],
        bytes
            .iter()
            .map(|b| Bytes::copy_from_slice(&[*b]))
            .collect(),
        transcript
            .split_inclusive('\n')
            .map(|l| Bytes::copy_from_slice(l.as_bytes()))
            .collect(),
    ];
    for seed in 1..=5u64 {
        chunkings.push(random_split(bytes, seed));
    }
    let first = run(decode, chunkings[0].clone()).await;
    for (n, chunks) in chunkings.into_iter().enumerate().skip(1) {
        let outcome = run(decode, chunks).await;
        assert_eq!(outcome, first, "chunking #{n} decoded differently");
    }
    first
}

/// Decodes `transcript` fed whole, once (for outcomes that differ between
/// runs, such as generated ids).
pub(crate) async fn decode_once(
    transcript: &str,
    decode: fn(ByteStream) -> ModelStream,
) -> Outcome {
    run(decode, vec![Bytes::copy_from_slice(transcript.as_bytes())]).await
}

async fn run(decode: fn(ByteStream) -> ModelStream, chunks: Vec<Bytes>) -> Outcome {
    let source: Vec<Result<Bytes, LlmError>> = chunks.into_iter().map(Ok).collect();
    let mut stream = decode(Box::pin(futures::stream::iter(source)));
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => {
                assert!(stream.next().await.is_none(), "an item followed an error");
                return (events, Some((error.kind, error.message)));
            }
        }
    }
    (events, None)
}

/// Splits at pseudo-random points (1 to 17 bytes apart), reproducibly.
fn random_split(bytes: &[u8], seed: u64) -> Vec<Bytes> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut chunks = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let len = 1 + (state >> 33) as usize % 17;
        let end = (at + len).min(bytes.len());
        chunks.push(Bytes::copy_from_slice(&bytes[at..end]));
        at = end;
    }
    chunks
}

/// The parts an outcome completed, in order.
pub(crate) fn completed_parts(events: &[ModelEvent]) -> Vec<gyre_protocol::Part> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::PartCompleted(part) => Some(part.clone()),
            _ => None,
        })
        .collect()
}

/// Builds an SSE transcript from `(event name, JSON data)` pairs; an empty
/// name writes a data-only event.
pub(crate) fn sse(events: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (name, data) in events {
        if !name.is_empty() {
            out.push_str("event: ");
            out.push_str(name);
            out.push('\n');
        }
        out.push_str("data: ");
        out.push_str(data);
        out.push_str("\n\n");
    }
    out
}
