use gyre_protocol::{Part, StopReason, ToolCall, Usage};
use pretty_assertions::assert_eq;

use crate::ModelEvent;
use crate::error::ErrorKind;
use crate::http::ByteStream;
use crate::openai_chat::decode_openai_chat_sse;
use crate::testing::{completed_parts, decode_all_ways, sse};

fn decode(bytes: ByteStream) -> crate::ModelStream {
    decode_openai_chat_sse(bytes)
}

fn chunk(delta: &str, finish_reason: &str) -> String {
    format!(
        r#"{{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{finish_reason}}}]}}"#
    )
}

fn transcript(chunks: &[String]) -> String {
    let events: Vec<(&str, &str)> = chunks.iter().map(|c| ("", c.as_str())).collect();
    sse(&events)
}

const USAGE: &str = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":90,"total_tokens":1290,"prompt_tokens_details":{"cached_tokens":1000},"completion_tokens_details":{"reasoning_tokens":40}}}"#;

#[tokio::test]
async fn a_full_answer_decodes_the_same_at_every_chunking() {
    let mut chunks = vec![
        chunk(
            r#"{"role":"assistant","content":"","refusal":null}"#,
            "null",
        ),
        chunk(r#"{"reasoning_content":"Both files "}"#, "null"),
        chunk(r#"{"reasoning_content":"matter — ✓"}"#, "null"),
        chunk(r#"{"content":"Reading "}"#, "null"),
        chunk(r#"{"content":"both."}"#, "null"),
        chunk(
            r#"{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":""}}]}"#,
            "null",
        ),
        chunk(
            r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"file_"}}]}"#,
            "null",
        ),
        chunk(
            r#"{"tool_calls":[{"index":0,"function":{"arguments":"path\": \"a.rs\"}"}}]}"#,
            "null",
        ),
        chunk(
            r#"{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"bash","arguments":"{\"comm"}}]}"#,
            "null",
        ),
        chunk(
            r#"{"tool_calls":[{"index":1,"function":{"arguments":"and\": \"ls\"}"}}]}"#,
            "null",
        ),
        chunk("{}", r#""tool_calls""#),
    ];
    chunks.push(USAGE.to_owned());
    chunks.push("[DONE]".to_owned());
    // Nothing after [DONE] is read.
    chunks.push(r#"{"error":{"message":"late"}}"#.to_owned());
    let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
    assert_eq!(error, None);
    let read = ToolCall::new("call_a", "read", r#"{"file_path": "a.rs"}"#);
    let bash = ToolCall::new("call_b", "bash", r#"{"command": "ls"}"#);
    assert_eq!(
        events,
        vec![
            ModelEvent::ReasoningDelta("Both files ".into()),
            ModelEvent::ReasoningDelta("matter — ✓".into()),
            ModelEvent::PartCompleted(Part::Reasoning {
                text: "Both files matter — ✓".into(),
                signature: None,
                redacted: false
            }),
            ModelEvent::TextDelta("Reading ".into()),
            ModelEvent::TextDelta("both.".into()),
            ModelEvent::PartCompleted(Part::text("Reading both.")),
            ModelEvent::ToolCallStarted {
                id: "call_a".into(),
                name: "read".into()
            },
            ModelEvent::PartCompleted(Part::ToolCall(read)),
            ModelEvent::ToolCallStarted {
                id: "call_b".into(),
                name: "bash".into()
            },
            ModelEvent::PartCompleted(Part::ToolCall(bash)),
            ModelEvent::Usage(Usage {
                input_tokens: 200,
                output_tokens: 90,
                reasoning_tokens: 40,
                cache_read_tokens: 1000,
                cache_write_tokens: 0,
            }),
            ModelEvent::Finished(StopReason::ToolUse),
        ]
    );
}

#[tokio::test]
async fn finish_reasons_are_normalised() {
    for (wire, with_call, expected) in [
        ("stop", false, StopReason::EndTurn),
        ("stop", true, StopReason::ToolUse),
        ("tool_calls", true, StopReason::ToolUse),
        ("length", false, StopReason::MaxTokens),
        ("content_filter", false, StopReason::Refusal),
        ("something_new", false, StopReason::EndTurn),
    ] {
        let mut chunks = vec![chunk(r#"{"content":"Hi"}"#, "null")];
        if with_call {
            chunks.push(chunk(
                r#"{"tool_calls":[{"index":0,"id":"c","function":{"name":"ls","arguments":"{}"}}]}"#,
                "null",
            ));
        }
        chunks.push(chunk("{}", &format!("\"{wire}\"")));
        chunks.push("[DONE]".to_owned());
        let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
        assert_eq!(error, None);
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Finished(expected)),
            "{wire}"
        );
    }
}

#[tokio::test]
async fn the_end_of_bytes_after_a_finish_reason_is_a_success_and_includes_usage() {
    let chunks = [chunk(r#"{"content":"Hi"}"#, r#""stop""#), USAGE.to_owned()];
    let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
    assert_eq!(error, None);
    assert!(matches!(events[events.len() - 2], ModelEvent::Usage(_)));
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finished(StopReason::EndTurn))
    );
}

#[tokio::test]
async fn a_stream_that_ends_without_a_finish_reason_is_an_error() {
    let chunks = [chunk(r#"{"content":"Hi"}"#, "null")];
    let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
    assert_eq!(
        events,
        vec![
            ModelEvent::TextDelta("Hi".into()),
            ModelEvent::PartCompleted(Part::Text { text: "Hi".into() })
        ]
    );
    assert_eq!(
        error,
        Some((
            ErrorKind::Stream,
            "the OpenAI-compatible stream ended before the answer was complete; try again".into()
        ))
    );
    // Cut in the middle of the finishing chunk.
    let whole = transcript(&[chunk(r#"{"content":"Hi"}"#, r#""stop""#)]);
    let (_, error) = decode_all_ways(&whole[..whole.len() - 20], decode).await;
    assert_eq!(error.unwrap().0, ErrorKind::Stream);
}

#[tokio::test]
async fn an_error_chunk_is_classified() {
    for (error, kind) in [
        (
            r#"{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}"#,
            ErrorKind::RateLimited { retry_after: None },
        ),
        (
            r#"{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}"#,
            ErrorKind::ContextOverflow,
        ),
        (
            r#"{"message":"The server had an error","type":"server_error"}"#,
            ErrorKind::Server,
        ),
        (r#""model crashed""#, ErrorKind::Server),
    ] {
        let chunks = [
            chunk(r#"{"content":"Hi"}"#, "null"),
            format!(r#"{{"error":{error}}}"#),
        ];
        let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
        assert_eq!(
            events,
            vec![
                ModelEvent::TextDelta("Hi".into()),
                ModelEvent::PartCompleted(Part::Text { text: "Hi".into() })
            ]
        );
        let (actual, message) = error.unwrap();
        assert_eq!(actual, kind, "{message}");
        assert!(
            message.starts_with("The OpenAI-compatible server reported an error mid-stream ("),
            "{message}"
        );
    }
}

#[tokio::test]
async fn comments_unknown_fields_and_reasoning_spellings() {
    let text = format!(
        ": keep-alive\n\n{}",
        transcript(&[
            chunk(r#"{"reasoning":"thinking","extra_field":{"x":1}}"#, "null"),
            chunk(
                r#"{"content":null,"reasoning":null,"tool_calls":null}"#,
                "null"
            ),
            chunk(r#"{"content":"Done."}"#, r#""stop""#),
            r#"{"object":"chat.completion.chunk","choices":[],"usage":null}"#.to_owned(),
            "[DONE]".to_owned(),
        ])
    );
    let (events, error) = decode_all_ways(&text, decode).await;
    assert_eq!(error, None);
    assert_eq!(
        completed_parts(&events),
        vec![
            Part::Reasoning {
                text: "thinking".into(),
                signature: None,
                redacted: false
            },
            Part::text("Done.")
        ]
    );
}

#[tokio::test]
async fn calls_without_ids_or_indices_still_pair_up() {
    // Gemini's compatibility layer sends whole calls without `index`; some
    // local servers send no `id`.
    let chunks = [
        chunk(
            r#"{"tool_calls":[{"id":"g1","function":{"name":"read","arguments":"{\"file_path\":\"a\"}"}}]}"#,
            "null",
        ),
        chunk(
            r#"{"tool_calls":[{"id":"g2","function":{"name":"read","arguments":"{\"file_path\":\"b\"}"}}]}"#,
            "null",
        ),
        chunk(
            r#"{"tool_calls":[{"index":5,"function":{"name":"ls","arguments":"{}"}}]}"#,
            "null",
        ),
        chunk("{}", r#""tool_calls""#),
        "[DONE]".to_owned(),
    ];
    let (events, error) = {
        let mut stream = decode(Box::pin(futures::stream::iter(vec![Ok(
            bytes::Bytes::from(transcript(&chunks)),
        )])));
        let mut events = Vec::new();
        let mut error = None;
        while let Some(item) = futures::StreamExt::next(&mut stream).await {
            match item {
                Ok(event) => events.push(event),
                Err(e) => error = Some(e),
            }
        }
        (events, error)
    };
    assert!(error.is_none());
    let calls: Vec<ToolCall> = completed_parts(&events)
        .into_iter()
        .filter_map(|p| match p {
            Part::ToolCall(call) => Some(call),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 3);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].arguments.as_str()),
        ("g1", r#"{"file_path":"a"}"#)
    );
    assert_eq!(
        (calls[1].id.as_str(), calls[1].arguments.as_str()),
        ("g2", r#"{"file_path":"b"}"#)
    );
    assert!(
        calls[2].id.starts_with("call_") && calls[2].id.len() > 10,
        "{}",
        calls[2].id
    );
    assert!(events.contains(&ModelEvent::ToolCallStarted {
        id: calls[2].id.clone(),
        name: "ls".into()
    }));
}

#[tokio::test]
async fn malformed_chunks_are_stream_errors() {
    let (_, error) = decode_all_ways(&transcript(&["{oops".to_owned()]), decode).await;
    assert_eq!(error.unwrap().0, ErrorKind::Stream);
}
