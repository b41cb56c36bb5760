//! An incremental server-sent-events parser (the WHATWG event-stream format),
//! fed the body chunk by chunk as it arrives.
//!
//! Invariants and trade-offs:
//! - Lines end at LF, CRLF or CR; a CR that ends one chunk and an LF that
//!   starts the next are one line ending.
//! - Bytes are buffered until a line is whole, and only whole lines are decoded
//!   as UTF-8, so a character split across chunks is never mangled. A line that
//!   is not UTF-8 is a `Stream` error (it cannot be a model's answer).
//! - Lines that lie inside the current chunk are parsed in place; only a line
//!   cut by a chunk boundary is copied, so a big chunk of small events is
//!   parsed in one pass without quadratic copying.
//! - Memory is bounded: at most [`MAX_PENDING_EVENT_BYTES`] may arrive between
//!   two dispatched events (the pending line and event data are part of them),
//!   and at most [`MAX_UNFRAMED_BYTES`] of unframed text is kept.
//! - Fields: `data` (joined with `\n`), `event`, `id` (kept across events, as
//!   the format says), `retry`; one space after the colon is dropped; `:`
//!   lines are comments. The field `error` is not standard: older llama.cpp
//!   servers send errors as `error: {…}`, so it becomes an event named `error`
//!   whose data is the value.
//! - A line that is not one of those fields and not a comment (a bare JSON
//!   error body, say) is unframed text: it is collected for the decoder and
//!   otherwise ignored, as the format says of unknown fields.
//! - At the end of the bytes, an unterminated last line is parsed and a pending
//!   event is dispatched even without the closing blank line (`data: [DONE]`
//!   with no newline is a complete answer).

use std::time::Duration;

use bytes::{Buf, Bytes};

use super::{MAX_PENDING_EVENT_BYTES, SseEvent};
use crate::error::LlmError;

/// The most unframed text kept for the decoder; the rest is dropped. An error
/// body is a few hundred bytes.
pub(crate) const MAX_UNFRAMED_BYTES: usize = 64 << 10;

#[derive(Default)]
pub(crate) struct Parser {
    /// The start of a line cut by a chunk boundary.
    partial: Vec<u8>,
    /// The last line ended with CR: an LF next is part of that line ending.
    after_cr: bool,
    /// No line parsed yet (a byte-order mark may open the stream).
    started: bool,
    /// Bytes since the last dispatched event.
    pending: usize,
    event_type: String,
    data: String,
    has_data: bool,
    last_id: String,
    retry: Option<Duration>,
    unframed: String,
}

impl Parser {
    /// Parses `chunk` up to and including the next complete event, which it
    /// returns; the rest of the chunk stays in `chunk` for the next call.
    /// Returns `None` once the chunk is used up.
    pub(crate) fn next_event(&mut self, chunk: &mut Bytes) -> Result<Option<SseEvent>, LlmError> {
        while !chunk.is_empty() {
            if std::mem::take(&mut self.after_cr) && chunk[0] == b'\n' {
                self.count(1)?;
                chunk.advance(1);
                continue;
            }
            let Some(end) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') else {
                self.count(chunk.len())?;
                self.partial.extend_from_slice(chunk);
                chunk.clear();
                return Ok(None);
            };
            self.count(end + 1)?;
            self.after_cr = chunk[end] == b'\r';
            let event = if self.partial.is_empty() {
                self.line(&chunk[..end])
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&chunk[..end]);
                self.line(&line)
            };
            chunk.advance(end + 1);
            if let Some(event) = event? {
                self.pending = 0;
                return Ok(Some(event));
            }
        }
        Ok(None)
    }

    /// The bytes ended: parses an unterminated last line and returns the
    /// pending event, if there is one.
    pub(crate) fn finish(&mut self) -> Result<Option<SseEvent>, LlmError> {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            // A lone non-empty line cannot complete an event (only a blank
            // line does), so nothing is dispatched here.
            self.line(&line)?;
        }
        Ok(self.dispatch())
    }

    /// The unframed text collected so far, once.
    pub(crate) fn take_unframed(&mut self) -> Option<String> {
        let text = std::mem::take(&mut self.unframed);
        (!text.trim().is_empty()).then_some(text)
    }

    fn count(&mut self, bytes: usize) -> Result<(), LlmError> {
        self.pending += bytes;
        if self.pending > MAX_PENDING_EVENT_BYTES {
            return Err(LlmError::stream(format!(
                "the provider sent more than {} MiB without completing an event, so the stream is broken; try again",
                MAX_PENDING_EVENT_BYTES >> 20
            )));
        }
        Ok(())
    }

    /// Handles one whole line (without its ending); returns an event when the
    /// line is the blank line that completes one.
    fn line(&mut self, bytes: &[u8]) -> Result<Option<SseEvent>, LlmError> {
        let mut line = std::str::from_utf8(bytes).map_err(|_| {
            LlmError::stream(
                "the provider's stream is not valid UTF-8, so it is not a model's answer; try again",
            )
        })?;
        if !self.started {
            self.started = true;
            line = line.strip_prefix('\u{feff}').unwrap_or(line);
        }
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line.starts_with(':') {
            return Ok(None);
        }
        let (name, value) = match line.split_once(':') {
            Some((name, value)) => (name, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match name {
            "data" => self.push_data(value),
            "event" => value.clone_into(&mut self.event_type),
            "id" if !value.contains('\0') => value.clone_into(&mut self.last_id),
            "id" => {}
            "retry" => {
                if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
                    self.retry = value.parse().ok().map(Duration::from_millis);
                }
            }
            "error" => {
                "error".clone_into(&mut self.event_type);
                self.push_data(value);
            }
            _ => self.collect_unframed(line),
        }
        Ok(None)
    }

    fn push_data(&mut self, value: &str) {
        if self.has_data {
            self.data.push('\n');
        }
        self.has_data = true;
        self.data.push_str(value);
    }

    fn collect_unframed(&mut self, line: &str) {
        if self.unframed.len() + line.len() < MAX_UNFRAMED_BYTES {
            self.unframed.push_str(line);
            self.unframed.push('\n');
        }
    }

    /// Completes the pending event: `None` when it has no data (the format
    /// says such an event is not dispatched).
    fn dispatch(&mut self) -> Option<SseEvent> {
        let event_type = std::mem::take(&mut self.event_type);
        let retry = self.retry.take();
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        Some(SseEvent {
            event: if event_type.is_empty() {
                "message".to_owned()
            } else {
                event_type
            },
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
            retry,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    /// Feeds `chunks` and returns every event, the unframed text and the error
    /// that stopped parsing, if any.
    fn parse(chunks: &[&[u8]]) -> (Vec<SseEvent>, Option<String>, Option<LlmError>) {
        let mut parser = Parser::default();
        let mut events = Vec::new();
        for chunk in chunks {
            let mut chunk = Bytes::copy_from_slice(chunk);
            loop {
                match parser.next_event(&mut chunk) {
                    Ok(Some(event)) => events.push(event),
                    Ok(None) => break,
                    Err(error) => return (events, None, Some(error)),
                }
            }
        }
        match parser.finish() {
            Ok(event) => events.extend(event),
            Err(error) => return (events, None, Some(error)),
        }
        (events, parser.take_unframed(), None)
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    /// Every split of `text` into two chunks, and byte by byte, gives `expected`.
    fn assert_all_splits(text: &[u8], expected: &[&str]) {
        for at in 0..=text.len() {
            let (events, _, error) = parse(&[&text[..at], &text[at..]]);
            assert!(error.is_none(), "split at {at}: {error:?}");
            assert_eq!(data(&events), expected, "split at {at}");
        }
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        let (events, _, error) = parse(&bytes);
        assert!(error.is_none());
        assert_eq!(data(&events), expected, "byte by byte");
    }

    #[test]
    fn lf_crlf_and_cr_line_endings() {
        assert_all_splits(b"data: a\n\ndata: b\n\n", &["a", "b"]);
        assert_all_splits(b"data: a\r\n\r\ndata: b\r\n\r\n", &["a", "b"]);
        assert_all_splits(b"data: a\r\rdata: b\r\r", &["a", "b"]);
        assert_all_splits(b"data: a\r\n\ndata: b\n\r\n", &["a", "b"]);
    }

    #[test]
    fn a_cr_at_the_end_of_a_chunk_and_an_lf_at_the_start_of_the_next_are_one_ending() {
        // Were they two endings, the LF would be a blank line dispatching
        // "a" alone, before "b" joined it.
        let (events, _, _) = parse(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
        assert_eq!(data(&events), ["a\nb"]);
    }

    #[test]
    fn comments_fields_and_the_leading_space() {
        let text = b": keep-alive\nevent: delta\nid: 7\nretry: 1500\ndata:  two spaces\ndata:none\ndata\n\n";
        let (events, unframed, error) = parse(&[text]);
        assert!(error.is_none());
        assert_eq!(unframed, None);
        assert_eq!(
            events,
            [SseEvent {
                event: "delta".into(),
                data: " two spaces\nnone\n".into(),
                id: "7".into(),
                retry: Some(Duration::from_millis(1500)),
            }]
        );
        // The id is kept for later events; the type and retry are not.
        let (events, _, _) = parse(&[b"id: 1\nevent: x\ndata: a\n\ndata: b\n\n"]);
        assert_eq!(
            (events[1].id.as_str(), events[1].event.as_str()),
            ("1", "message")
        );
    }

    #[test]
    fn an_event_without_data_is_not_dispatched_but_empty_data_is() {
        let (events, _, _) = parse(&[b"event: ping\n\ndata:\n\n"]);
        assert_eq!(events.len(), 1);
        assert_eq!(
            (events[0].event.as_str(), events[0].data.as_str()),
            ("message", "")
        );
    }

    #[test]
    fn utf8_split_inside_a_character() {
        let text = "data: ✓ — ünïcödé 🦀\n\n".as_bytes();
        assert_all_splits(text, &["✓ — ünïcödé 🦀"]);
    }

    #[test]
    fn invalid_utf8_is_a_clear_stream_error() {
        let (events, _, error) = parse(&[b"data: ok\n\ndata: \xff\xfe\n\n"]);
        assert_eq!(data(&events), ["ok"]);
        let error = error.unwrap();
        assert_eq!(error.kind, ErrorKind::Stream);
        assert!(
            error.message.contains("not valid UTF-8"),
            "{}",
            error.message
        );
    }

    #[test]
    fn a_missing_final_blank_line_or_newline_still_dispatches() {
        assert_all_splits(b"data: a\n\ndata: [DONE]\n", &["a", "[DONE]"]);
        assert_all_splits(b"data: a\n\ndata: [DONE]", &["a", "[DONE]"]);
        assert_all_splits(b"data: [DONE]\r", &["[DONE]"]);
    }

    #[test]
    fn the_llama_cpp_error_field_is_an_error_event() {
        let (events, unframed, _) =
            parse(&[b"data: a\n\nerror: {\"code\":500,\"message\":\"boom\"}\n\n"]);
        assert_eq!(events[1].event, "error");
        assert_eq!(events[1].data, r#"{"code":500,"message":"boom"}"#);
        assert_eq!(unframed, None);
    }

    #[test]
    fn unframed_lines_are_collected_and_unknown_fields_ignored() {
        let body = b"{\n  \"error\": {\n    \"code\": 429,\n    \"status\": \"RESOURCE_EXHAUSTED\"\n  }\n}\n";
        let (events, unframed, error) = parse(&[b"vendor: x\n", body]);
        assert!(error.is_none());
        assert!(events.is_empty());
        let unframed = unframed.unwrap();
        assert!(
            unframed.starts_with("vendor: x\n{\n  \"error\": {\n"),
            "{unframed}"
        );
        let json = unframed.trim_start_matches("vendor: x\n");
        let value: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(value["error"]["code"], 429);
        // An array body on one line, without a newline.
        let (_, unframed, _) = parse(&[b"[{\"error\": {\"code\": 503}}]"]);
        assert_eq!(
            unframed.as_deref(),
            Some("[{\"error\": {\"code\": 503}}]\n")
        );
    }

    #[test]
    fn unframed_text_is_bounded() {
        let line = format!("{}\n", "x".repeat(1000));
        let many = line.repeat(200);
        let (_, unframed, error) = parse(&[many.as_bytes()]);
        assert!(error.is_none());
        let unframed = unframed.unwrap();
        assert!(unframed.len() <= MAX_UNFRAMED_BYTES, "{}", unframed.len());
        assert!(unframed.len() > MAX_UNFRAMED_BYTES - 2000);
    }

    #[test]
    fn a_byte_order_mark_at_the_start_is_ignored() {
        let (events, unframed, _) = parse(&[b"\xef\xbb", b"\xbfdata: a\n\n"]);
        assert_eq!(data(&events), ["a"]);
        assert_eq!(unframed, None);
    }

    #[test]
    fn a_one_megabyte_data_line_in_small_chunks() {
        let big = "y".repeat(1 << 20);
        let text = format!("data: {big}\n\ndata: after\n\n");
        let chunks: Vec<&[u8]> = text.as_bytes().chunks(1000).collect();
        let (events, _, error) = parse(&chunks);
        assert!(error.is_none());
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].data.len(), 1 << 20);
        assert_eq!(events[1].data, "after");
    }

    #[test]
    fn many_events_in_one_chunk_come_one_at_a_time() {
        let text = "data: x\n\n".repeat(10_000);
        let mut parser = Parser::default();
        let mut chunk = Bytes::from(text);
        let mut count = 0;
        while let Some(event) = parser.next_event(&mut chunk).unwrap() {
            assert_eq!(event.data, "x");
            count += 1;
        }
        assert_eq!(count, 10_000);
        assert!(chunk.is_empty());
    }

    #[test]
    fn the_budget_counts_bytes_between_events() {
        let mut parser = Parser::default();
        let line = Bytes::from(format!("data: {}\n", "z".repeat(1 << 20)));
        let mut error = None;
        for _ in 0..20 {
            let mut chunk = line.clone();
            if let Err(e) = parser.next_event(&mut chunk) {
                error = Some(e);
                break;
            }
        }
        let error = error.unwrap();
        assert_eq!(error.kind, ErrorKind::Stream);
        assert!(error.message.contains("16 MiB"), "{}", error.message);
        // Dispatching resets it: many small events are never too much.
        let mut parser = Parser::default();
        for _ in 0..40 {
            let mut chunk = Bytes::from(format!("data: {}\n\n", "z".repeat(1 << 20)));
            assert!(parser.next_event(&mut chunk).unwrap().is_some());
        }
    }
}
