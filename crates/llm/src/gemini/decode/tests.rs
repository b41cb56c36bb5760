use std::collections::VecDeque;
use std::time::Duration;

use gyre_protocol::{Part, StopReason, ToolCall, Usage};
use pretty_assertions::assert_eq;

use super::GeminiDecoder;
use crate::ModelEvent;
use crate::error::ErrorKind;
use crate::gemini::decode_gemini_sse;
use crate::http::ByteStream;
use crate::sse::SseDecoder;
use crate::testing::{completed_parts, decode_all_ways, sse};

fn decode(bytes: ByteStream) -> crate::ModelStream {
    decode_gemini_sse(bytes)
}

fn transcript(chunks: &[&str]) -> String {
    let events: Vec<(&str, &str)> = chunks.iter().map(|c| ("", *c)).collect();
    sse(&events)
}

fn chunk(parts: &str) -> String {
    format!(
        r#"{{"candidates":[{{"content":{{"parts":{parts},"role":"model"}},"index":0}}],"usageMetadata":{{"promptTokenCount":1200,"totalTokenCount":1200}},"modelVersion":"gemini-2.5-pro","responseId":"resp-A"}}"#
    )
}

fn last(parts: &str, finish_reason: &str) -> String {
    format!(
        r#"{{"candidates":[{{"content":{{"parts":{parts},"role":"model"}},"finishReason":"{finish_reason}","index":0}}],"usageMetadata":{{"promptTokenCount":1200,"cachedContentTokenCount":1000,"candidatesTokenCount":80,"thoughtsTokenCount":40,"totalTokenCount":1320}},"modelVersion":"gemini-2.5-pro","responseId":"resp-A"}}"#
    )
}

fn first_usage() -> Usage {
    Usage {
        input_tokens: 1200,
        ..Usage::default()
    }
}

fn final_usage() -> Usage {
    Usage {
        input_tokens: 200,
        output_tokens: 120,
        reasoning_tokens: 40,
        cache_read_tokens: 1000,
        cache_write_tokens: 0,
    }
}

fn signed(id: &str, name: &str, arguments: &str, signature: Option<&str>) -> Part {
    let mut call = ToolCall::new(id, name, arguments);
    call.signature = signature.map(str::to_owned);
    Part::ToolCall(call)
}

#[tokio::test]
async fn a_full_answer_decodes_the_same_at_every_chunking() {
    let chunks = [
        chunk(r#"[{"text":"Both files ","thought":true}]"#),
        chunk(r#"[{"text":"matter — ✓","thought":true}]"#),
        chunk(r#"[{"text":"Reading "}]"#),
        chunk(r#"[{"text":"both.","thoughtSignature":"sig-text"}]"#),
        chunk(
            r#"[{"functionCall":{"name":"read","args":{"file_path":"a.rs"}},"thoughtSignature":"sig-call"},{"functionCall":{"name":"bash","args":{"command":"ls"}}}]"#,
        ),
        last(r#"[{"functionCall":{"name":"ls"}}]"#, "STOP"),
    ];
    let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();

    let (events, error) = decode_all_ways(&transcript(&refs), decode).await;

    assert_eq!(error, None);
    assert_eq!(
        events,
        vec![
            ModelEvent::ReasoningDelta("Both files ".into()),
            ModelEvent::Usage(first_usage()),
            ModelEvent::ReasoningDelta("matter — ✓".into()),
            ModelEvent::PartCompleted(Part::Reasoning {
                text: "Both files matter — ✓".into(),
                signature: None,
                redacted: false,
            }),
            ModelEvent::TextDelta("Reading ".into()),
            ModelEvent::TextDelta("both.".into()),
            ModelEvent::PartCompleted(Part::Reasoning {
                text: String::new(),
                signature: Some("sig-text".into()),
                redacted: false,
            }),
            ModelEvent::PartCompleted(Part::text("Reading both.")),
            ModelEvent::ToolCallStarted {
                id: "call_resp-A_0".into(),
                name: "read".into()
            },
            ModelEvent::PartCompleted(signed(
                "call_resp-A_0",
                "read",
                r#"{"file_path":"a.rs"}"#,
                Some("sig-call")
            )),
            ModelEvent::ToolCallStarted {
                id: "call_resp-A_1".into(),
                name: "bash".into()
            },
            ModelEvent::PartCompleted(signed("call_resp-A_1", "bash", r#"{"command":"ls"}"#, None)),
            ModelEvent::ToolCallStarted {
                id: "call_resp-A_2".into(),
                name: "ls".into()
            },
            ModelEvent::PartCompleted(signed("call_resp-A_2", "ls", "{}", None)),
            ModelEvent::Usage(final_usage()),
            ModelEvent::Finished(StopReason::ToolUse),
        ]
    );
}

#[tokio::test]
async fn a_text_answer_and_a_trailing_signature() {
    let chunks = [
        chunk(r#"[{"text":"Hello"}]"#),
        last(r#"[{"text":"","thoughtSignature":"sig-end"}]"#, "STOP"),
    ];
    let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
    let (events, error) = decode_all_ways(&transcript(&refs), decode).await;
    assert_eq!(error, None);
    assert_eq!(
        completed_parts(&events),
        vec![
            Part::Reasoning {
                text: String::new(),
                signature: Some("sig-end".into()),
                redacted: false
            },
            Part::text("Hello"),
        ]
    );
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finished(StopReason::EndTurn))
    );
}

#[tokio::test]
async fn finish_reasons_map_to_stop_reasons() {
    let cases = [
        ("STOP", StopReason::EndTurn),
        ("MAX_TOKENS", StopReason::MaxTokens),
        ("SAFETY", StopReason::Refusal),
        ("RECITATION", StopReason::Refusal),
        ("BLOCKLIST", StopReason::Refusal),
        ("PROHIBITED_CONTENT", StopReason::Refusal),
        ("SPII", StopReason::Refusal),
        ("MALFORMED_FUNCTION_CALL", StopReason::Error),
        ("OTHER", StopReason::EndTurn),
        ("SOME_FUTURE_REASON", StopReason::EndTurn),
    ];
    for (reason, expected) in cases {
        let text = transcript(&[&last(r#"[{"text":"Hi"}]"#, reason)]);
        let (events, error) = decode_all_ways(&text, decode).await;
        assert_eq!(error, None, "{reason}");
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Finished(expected)),
            "{reason}"
        );
    }
    let with_call = transcript(&[&last(
        r#"[{"functionCall":{"name":"ls","args":{}}}]"#,
        "MAX_TOKENS",
    )]);
    let (events, _) = decode_all_ways(&with_call, decode).await;
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finished(StopReason::MaxTokens))
    );
}

#[tokio::test]
async fn a_blocked_prompt_is_a_refusal() {
    let blocked = r#"{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":10,"totalTokenCount":10},"responseId":"r"}"#;
    let (events, error) = decode_all_ways(&transcript(&[blocked]), decode).await;
    assert_eq!(error, None);
    assert_eq!(
        events,
        vec![
            ModelEvent::Usage(Usage {
                input_tokens: 10,
                ..Usage::default()
            }),
            ModelEvent::Finished(StopReason::Refusal)
        ]
    );
}

#[tokio::test]
async fn an_error_chunk_mid_stream_is_classified() {
    let error = r#"{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"#;
    let first = chunk(r#"[{"text":"Hi"}]"#);
    let (events, error) = decode_all_ways(&transcript(&[&first, error]), decode).await;
    assert_eq!(
        events,
        vec![
            ModelEvent::TextDelta("Hi".into()),
            ModelEvent::Usage(first_usage()),
            ModelEvent::PartCompleted(Part::Text { text: "Hi".into() })
        ]
    );
    assert_eq!(
        error,
        Some((
            ErrorKind::Overloaded { retry_after: None },
            "Gemini reported an error (UNAVAILABLE: The model is overloaded. Please try again later); try again in a moment".into()
        ))
    );
}

#[tokio::test]
async fn a_stream_without_a_finish_reason_is_an_error() {
    let first = chunk(r#"[{"text":"Hi"}]"#);
    let (_, error) = decode_all_ways(&transcript(&[&first]), decode).await;
    assert_eq!(
        error,
        Some((
            ErrorKind::Stream,
            "the Gemini stream ended before the answer was complete; try again".into()
        ))
    );
}

#[tokio::test]
async fn without_a_response_id_call_ids_are_still_unique() {
    let no_id = r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"ls"}},{"functionCall":{"name":"ls"}}]},"finishReason":"STOP"}]}"#;
    let mut ids = Vec::new();
    for _ in 0..2 {
        let bytes = futures::stream::iter(vec![Ok::<_, crate::LlmError>(bytes::Bytes::from(
            transcript(&[no_id]),
        ))]);
        let events: Vec<_> = futures::TryStreamExt::try_collect::<Vec<_>>(decode_gemini_sse(bytes))
            .await
            .unwrap();
        for part in completed_parts(&events) {
            if let Part::ToolCall(call) = part {
                assert!(call.id.starts_with("call_"), "{}", call.id);
                ids.push(call.id);
            }
        }
    }
    assert_eq!(ids.len(), 4);
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 4, "{ids:?}");
}

fn unframed(text: &str) -> Result<(), crate::LlmError> {
    let mut decoder = GeminiDecoder::default();
    decoder.unframed(text, &mut VecDeque::new()).map(|_| ())
}

#[test]
fn a_bare_error_after_the_last_event_is_classified() {
    let object = r#"{
  "error": {
    "code": 429,
    "message": "You exceeded your current quota.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [
      {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
      {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "30s"}
    ]
  }
}
"#;
    let error = unframed(object).unwrap_err();
    assert_eq!(
        error.kind,
        ErrorKind::RateLimited {
            retry_after: Some(Duration::from_secs(30))
        }
    );
    assert_eq!(
        error.message,
        "Gemini reported an error (RESOURCE_EXHAUSTED: You exceeded your current quota); retry after 30 s"
    );
    let array = format!("[{object}]");
    assert_eq!(unframed(&array).unwrap_err().kind, error.kind);
    assert!(unframed("").is_ok());
    assert!(unframed("not json at all").is_ok());
    assert!(unframed(r#"{"candidates": []}"#).is_ok());
}

#[test]
fn api_errors_by_status() {
    let kind = |status: &str, message: &str| {
        super::api_error(&serde_json::json!({"code": 400, "status": status, "message": message}))
            .kind
    };
    assert_eq!(kind("INTERNAL", "oops"), ErrorKind::Server);
    assert_eq!(
        kind("INVALID_ARGUMENT", "bad field"),
        ErrorKind::InvalidRequest
    );
    assert_eq!(
        kind(
            "INVALID_ARGUMENT",
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
        ),
        ErrorKind::ContextOverflow
    );
    assert_eq!(kind("PERMISSION_DENIED", "no"), ErrorKind::Auth);
    assert_eq!(kind("UNAUTHENTICATED", "no"), ErrorKind::Auth);
}

#[tokio::test]
async fn unknown_parts_and_fields_are_ignored() {
    let chunks = [
        r#"{"candidates":[{"content":{"role":"model"},"safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"NEGLIGIBLE"}],"index":0}],"modelVersion":"gemini-3-pro","responseId":"r","someFutureField":{"x":1}}"#,
        r#"{"candidates":[{"content":{"parts":[{"executableCode":{"language":"PYTHON","code":"print(1)"}},{"text":"Done."},{"inlineData":{"mimeType":"image/png","data":"iVBOR"}}],"role":"model"},"citationMetadata":{},"index":0}],"responseId":"r"}"#,
        r#"{"candidates":[{"content":{"parts":[],"role":"model"},"finishReason":"STOP","finishMessage":"ok","index":0}],"responseId":"r"}"#,
    ];
    let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
    assert_eq!(error, None);
    assert_eq!(
        events,
        vec![
            ModelEvent::TextDelta("Done.".into()),
            ModelEvent::PartCompleted(Part::text("Done.")),
            ModelEvent::Finished(StopReason::EndTurn),
        ]
    );
}

#[tokio::test]
async fn streamed_call_arguments_become_one_call_with_its_arguments() {
    let first = chunk(
        r#"[{"functionCall":{"name":"grep","willContinue":true},"thoughtSignature":"sig-1"}]"#,
    );
    let piece = chunk(
        r#"[{"functionCall":{"partialArgs":[{"jsonPath":"$.pattern","stringValue":"fn ","willContinue":true}],"willContinue":true}}]"#,
    );
    let more = chunk(
        r#"[{"functionCall":{"partialArgs":[{"jsonPath":"$.pattern","stringValue":"main"},{"jsonPath":"$.path","stringValue":"src"}],"willContinue":true}}]"#,
    );
    // The terminal empty call ends the streamed one; the next whole call and
    // an empty call with nothing streaming are what they are.
    let end = chunk(r#"[{"functionCall":{}}]"#);
    let whole = chunk(r#"[{"functionCall":{"name":"ls","args":{}}},{"functionCall":{}}]"#);
    let stop = last("[]", "STOP");
    let (events, error) = decode_all_ways(
        &transcript(&[&first, &piece, &more, &end, &whole, &stop]),
        decode,
    )
    .await;
    assert_eq!(error, None);
    assert_eq!(
        completed_parts(&events),
        [
            signed(
                "call_resp-A_0",
                "grep",
                r#"{"pattern":"fn main","path":"src"}"#,
                Some("sig-1")
            ),
            signed("call_resp-A_1", "ls", "{}", None),
        ]
    );
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finished(StopReason::ToolUse))
    );
}
