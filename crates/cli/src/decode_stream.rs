//! `gyre debug decode-stream`: one raw provider response in on stdin, what
//! gyre made of it out on stdout, one JSON object per line.
//!
//! The bytes go through `gyre_llm::decode_recorded`, i.e. exactly the
//! decoders of the live path, as they arrive. Lines, in stream order:
//! `{"text"}` and `{"reasoning"}` per completed part, `{"tool_call"}` per
//! completed client-side call, then `{"usage"}` (the last one reported) and
//! `{"stop_reason"}`; when the provider reported an error, `{"usage"}`,
//! `{"error"}` and then `{"stop_reason":"error"}` (`"context_overflow"` when
//! the prompt did not fit), after any text that arrived before it. A stream the provider reported an error in is still a
//! decoded stream: the command exits 0 once the input was read; it exits 1
//! when stdin cannot be read and 2 on bad usage.

use std::io::Write;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use gyre_llm::header::{HeaderMap, HeaderName, HeaderValue};
use gyre_llm::{ErrorKind, LlmError, ModelEvent, WireApi, decode_recorded};
use gyre_protocol::{Part, StopReason, Usage};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio_util::io::ReaderStream;

use crate::args::RawInput;
use gyre_host::Exit;

/// The most bytes of an HTTP head (status line and headers) that are read.
const MAX_HEAD_BYTES: usize = 64 << 10;

pub async fn run(api: WireApi, input: RawInput) -> Result<i32, Exit> {
    let mut stdin = tokio::io::stdin();
    let (status, headers, prefix) = match input {
        RawInput::Sse => (200, HeaderMap::new(), Vec::new()),
        RawInput::Http => read_head(&mut stdin).await?,
    };
    let chunked = headers
        .get("transfer-encoding")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let rest = ReaderStream::new(stdin).map(|chunk| {
        chunk
            .map_err(|e| LlmError::new(ErrorKind::Network, None, format!("cannot read stdin: {e}")))
    });
    let body = futures::stream::iter([Ok(Bytes::from(prefix))]).chain(rest);
    let body: std::pin::Pin<Box<dyn Stream<Item = Result<Bytes, LlmError>> + Send>> = if chunked {
        Box::pin(dechunk(body).await?)
    } else {
        Box::pin(body)
    };

    let mut events = decode_recorded(api, status, headers, body);
    let mut out = std::io::stdout().lock();
    let mut usage: Option<Usage> = None;
    let mut print = |line: Value| -> Result<(), Exit> {
        writeln!(out, "{line}").map_err(|e| Exit::failure(format!("cannot write to stdout: {e}")))
    };
    while let Some(item) = events.next().await {
        match item {
            Ok(ModelEvent::PartCompleted(part)) => {
                if let Some(line) = part_line(&part) {
                    print(line)?;
                }
            }
            Ok(ModelEvent::Usage(latest)) => usage = Some(latest),
            Ok(ModelEvent::Finished(reason)) => {
                if let Some(usage) = usage.take() {
                    print(usage_line(&usage))?;
                }
                print(json!({"stop_reason": stop_name(reason)}))?;
            }
            Ok(ModelEvent::TextDelta(_) | ModelEvent::ReasoningDelta(_))
            | Ok(ModelEvent::ToolCallStarted { .. }) => {}
            Err(error) => {
                if let Some(usage) = usage.take() {
                    print(usage_line(&usage))?;
                }
                print(error_line(&error))?;
                // The answer ended in an error: say so as its stop reason.
                let reason = match error.kind {
                    ErrorKind::ContextOverflow => StopReason::ContextOverflow,
                    _ => StopReason::Error,
                };
                print(json!({"stop_reason": stop_name(reason)}))?;
            }
        }
    }
    Ok(0)
}

fn part_line(part: &Part) -> Option<Value> {
    match part {
        Part::Text { text } => Some(json!({"text": text})),
        // An empty, unredacted reasoning part only carries a signature that
        // came on another part (Gemini's text signatures): not reasoning the
        // provider sent.
        Part::Reasoning {
            text,
            redacted: false,
            ..
        } if text.is_empty() => None,
        Part::Reasoning { text, .. } => Some(json!({"reasoning": text})),
        Part::ToolCall(call) => {
            let arguments = call
                .arguments_json()
                .unwrap_or_else(|| Value::String(call.arguments.clone()));
            Some(json!({"tool_call": {"id": call.id, "name": call.name, "arguments": arguments}}))
        }
        Part::ToolResult(_) | Part::Image { .. } => None,
    }
}

fn usage_line(usage: &Usage) -> Value {
    json!({"usage": {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "cache_read": usage.cache_read_tokens,
        "cache_write": usage.cache_write_tokens,
    }})
}

/// Stop reasons as the command prints them: a paused turn ends the turn.
fn stop_name(reason: StopReason) -> &'static str {
    match reason {
        StopReason::EndTurn | StopReason::PauseTurn => "end_turn",
        StopReason::ToolUse => "tool_use",
        StopReason::MaxTokens => "max_tokens",
        StopReason::Refusal => "refusal",
        StopReason::ContextOverflow => "context_overflow",
        StopReason::Error => "error",
    }
}

fn error_line(error: &LlmError) -> Value {
    let kind = match error.kind {
        ErrorKind::RateLimited { .. } => "rate_limit",
        ErrorKind::Overloaded { .. } => "overloaded",
        ErrorKind::ContextOverflow => "context_overflow",
        ErrorKind::Server => "server",
        ErrorKind::InvalidRequest => "invalid_request",
        ErrorKind::Auth => "auth",
        ErrorKind::Network => "network",
        ErrorKind::Unreachable => "unreachable",
        ErrorKind::Endpoint => "endpoint",
        ErrorKind::Stream => "stream",
        ErrorKind::ModelOutput => "model_output",
    };
    let retry_after = error.retry_after().map(seconds_value);
    json!({"error": {"kind": kind, "retry_after_s": retry_after, "message": error.message}})
}

/// A wait in seconds as precisely as it was asked for (to the millisecond):
/// a whole number when it is one, so `37` stays `37` and `6.268` stays
/// `6.268`.
fn seconds_value(wait: std::time::Duration) -> Value {
    let millis = wait.as_millis();
    if millis.is_multiple_of(1000) {
        json!((millis / 1000) as u64)
    } else {
        json!(millis as f64 / 1000.0)
    }
}

/// Reads the status line and headers of an HTTP response; returns them and
/// the bytes of the body read past the blank line.
async fn read_head(stdin: &mut tokio::io::Stdin) -> Result<(u16, HeaderMap, Vec<u8>), Exit> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let (head_end, body_start) = loop {
        if let Some(found) = find_blank_line(&buffer) {
            break found;
        }
        if buffer.len() > MAX_HEAD_BYTES {
            return Err(Exit::usage(
                "the input has no blank line after its headers; is it a whole HTTP response? (use --input sse for a bare event stream)",
            ));
        }
        let n = stdin
            .read(&mut chunk)
            .await
            .map_err(|e| Exit::failure(format!("cannot read stdin: {e}")))?;
        if n == 0 {
            match find_blank_line(&buffer) {
                Some(found) => break found,
                // A head without a body.
                None => break (buffer.len(), buffer.len()),
            }
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| status_line.starts_with("HTTP/"))
        .ok_or_else(|| {
            Exit::usage(format!(
                "the input does not start with an HTTP status line (`HTTP/1.1 200 OK`), it starts with `{}`",
                status_line.chars().take(40).collect::<String>()
            ))
        })?;
    let mut headers = HeaderMap::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.trim().as_bytes()),
            HeaderValue::from_str(value.trim()),
        ) {
            headers.append(name, value);
        }
    }
    Ok((status, headers, buffer.split_off(body_start)))
}

/// Where the head ends and the body starts (`\r\n\r\n` or `\n\n`).
fn find_blank_line(buffer: &[u8]) -> Option<(usize, usize)> {
    let crlf = buffer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, i + 4));
    let lf = buffer
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|i| (i, i + 2));
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// Undoes chunked transfer encoding. A recorded response is small, so the
/// body is read whole (bounded) and re-chunked as it was received.
async fn dechunk<S>(body: S) -> Result<impl Stream<Item = Result<Bytes, LlmError>>, Exit>
where
    S: Stream<Item = Result<Bytes, LlmError>>,
{
    const MAX_BODY: usize = 256 << 20;
    let mut raw = Vec::new();
    let mut body = std::pin::pin!(body);
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| Exit::failure(e.message))?;
        raw.extend_from_slice(&chunk);
        if raw.len() > MAX_BODY {
            return Err(Exit::usage("the chunked body is larger than 256 MiB"));
        }
    }
    let mut pieces = Vec::new();
    let mut rest = raw.as_slice();
    while let Some(line_end) = rest.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&rest[..line_end]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size_text, 16) else {
            return Err(Exit::usage(format!(
                "the body says it is chunked but `{size_text}` is not a chunk size"
            )));
        };
        rest = &rest[line_end + 2..];
        if size == 0 {
            break;
        }
        let take = size.min(rest.len());
        pieces.push(Ok(Bytes::copy_from_slice(&rest[..take])));
        rest = rest.get(take + 2..).unwrap_or_default();
    }
    Ok(futures::stream::iter(pieces))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blank_line_is_found_with_either_line_ending() {
        assert_eq!(
            find_blank_line(b"HTTP/1.1 200\r\na: b\r\n\r\nbody"),
            Some((18, 22))
        );
        assert_eq!(
            find_blank_line(b"HTTP/1.1 200\na: b\n\nbody"),
            Some((17, 19))
        );
        assert_eq!(find_blank_line(b"HTTP/1.1 200\r\n"), None);
    }
}
