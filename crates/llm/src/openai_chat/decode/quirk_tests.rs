//! Quirks of OpenAI-compatible servers, each decoded at many chunkings.

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
        r#"{{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{delta},"finish_reason":{finish_reason}}}]}}"#
    )
}

fn transcript(chunks: &[String]) -> String {
    let events: Vec<(&str, &str)> = chunks.iter().map(|c| ("", c.as_str())).collect();
    sse(&events)
}

fn calls(events: &[ModelEvent]) -> Vec<ToolCall> {
    completed_parts(events)
        .into_iter()
        .filter_map(|p| match p {
            Part::ToolCall(call) => Some(call),
            _ => None,
        })
        .collect()
}

fn call_delta(fields: &str) -> String {
    chunk(&format!(r#"{{"tool_calls":[{{{fields}}}]}}"#), "null")
}

#[tokio::test]
async fn repeated_ids_get_a_suffix_and_whole_arguments_in_one_chunk_work() {
    let chunks = [
        call_delta(
            r#""index":0,"id":"call_0","function":{"name":"read","arguments":"{\"p\":\"a\"}"}"#,
        ),
        call_delta(
            r#""index":1,"id":"call_0","function":{"name":"read","arguments":"{\"p\":\"b\"}"}"#,
        ),
        call_delta(r#""index":2,"id":"call_0","function":{"name":"ls","arguments":"{}"}"#),
        chunk("{}", r#""tool_calls""#),
        "[DONE]".to_owned(),
    ];
    let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
    assert_eq!(error, None);
    assert_eq!(
        calls(&events),
        [
            ToolCall::new("call_0", "read", r#"{"p":"a"}"#),
            ToolCall::new("call_0_2", "read", r#"{"p":"b"}"#),
            ToolCall::new("call_0_3", "ls", "{}"),
        ]
    );
    assert!(events.contains(&ModelEvent::ToolCallStarted {
        id: "call_0_2".into(),
        name: "read".into()
    }));
}

#[tokio::test]
async fn every_call_numbered_zero_with_its_own_id() {
    let chunks = [
        call_delta(r#""index":0,"id":"a","function":{"name":"read","arguments":"{\"p\":"}"#),
        call_delta(r#""index":0,"function":{"arguments":"1}"}"#),
        call_delta(r#""index":0,"id":"b","function":{"name":"ls","arguments":""}"#),
        call_delta(r#""index":0,"function":{"arguments":"{}"}"#),
        chunk("{}", r#""tool_calls""#),
        "[DONE]".to_owned(),
    ];
    let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
    assert_eq!(error, None);
    assert_eq!(
        calls(&events),
        [
            ToolCall::new("a", "read", r#"{"p":1}"#),
            ToolCall::new("b", "ls", "{}")
        ]
    );
}

#[tokio::test]
async fn the_name_repeated_in_every_fragment_is_still_one_call() {
    let chunks = [
        call_delta(r#""index":0,"id":"x","function":{"name":"bash","arguments":"{\"command\":"}"#),
        call_delta(r#""index":0,"id":"x","function":{"name":"bash","arguments":" \"ls\"}"}"#),
        chunk("{}", r#""tool_calls""#),
        "[DONE]".to_owned(),
    ];
    let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
    assert_eq!(error, None);
    assert_eq!(
        calls(&events),
        [ToolCall::new("x", "bash", r#"{"command": "ls"}"#)]
    );
}

#[tokio::test]
async fn whole_calls_without_ids_or_indices_get_unique_ids() {
    let chunks = [
        call_delta(r#""function":{"name":"read","arguments":"{\"p\":\"a\"}"}"#),
        call_delta(r#""function":{"name":"read","arguments":"{\"p\":\"b\"}"}"#),
        chunk("{}", r#""stop""#),
        "[DONE]".to_owned(),
    ];
    let body = transcript(&chunks);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..3 {
        let (events, error) = crate::testing::decode_once(&body, decode).await;
        assert_eq!(error, None);
        let calls = calls(&events);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].arguments, r#"{"p":"b"}"#);
        for call in &calls {
            assert!(call.id.starts_with("call_"), "{}", call.id);
            assert!(seen.insert(call.id.clone()), "{} repeated", call.id);
        }
        // `stop` after calls is a request to run them.
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Finished(StopReason::ToolUse))
        );
    }
}

#[tokio::test]
async fn reasoning_is_completed_before_the_calls_that_follow() {
    let chunks = [
        chunk(
            r#"{"role":"assistant","reasoning_content":"I will "}"#,
            "null",
        ),
        chunk(r#"{"reasoning_content":"list it"}"#, "null"),
        call_delta(r#""index":0,"id":"c","function":{"name":"ls","arguments":"{}"}"#),
        chunk("{}", r#""tool_calls""#),
        "[DONE]".to_owned(),
    ];
    let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
    assert_eq!(error, None);
    let reasoning = Part::Reasoning {
        text: "I will list it".into(),
        signature: None,
        redacted: false,
    };
    assert_eq!(
        events,
        [
            ModelEvent::ReasoningDelta("I will ".into()),
            ModelEvent::ReasoningDelta("list it".into()),
            ModelEvent::PartCompleted(reasoning),
            ModelEvent::ToolCallStarted {
                id: "c".into(),
                name: "ls".into()
            },
            ModelEvent::PartCompleted(Part::ToolCall(ToolCall::new("c", "ls", "{}"))),
            ModelEvent::Finished(StopReason::ToolUse),
        ]
    );
}

#[tokio::test]
async fn usage_in_the_finishing_chunk_or_not_at_all() {
    // Ollama and llama.cpp put usage in the chunk with the finish reason.
    let last = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":5,"prompt_cache_hit_tokens":30}}"#;
    let chunks = [
        chunk(r#"{"content":"Hi"}"#, "null"),
        last.to_owned(),
        "[DONE]".to_owned(),
    ];
    let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
    assert_eq!(error, None);
    assert_eq!(
        events[events.len() - 3..],
        [
            ModelEvent::PartCompleted(Part::text("Hi")),
            ModelEvent::Usage(Usage {
                input_tokens: 20,
                output_tokens: 5,
                cache_read_tokens: 30,
                ..Usage::default()
            }),
            ModelEvent::Finished(StopReason::EndTurn),
        ]
    );
    let chunks = [
        chunk(r#"{"content":"Hi"}"#, r#""length""#),
        "[DONE]".to_owned(),
    ];
    let (events, _) = decode_all_ways(&transcript(&chunks), decode).await;
    assert!(!events.iter().any(|e| matches!(e, ModelEvent::Usage(_))));
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finished(StopReason::MaxTokens))
    );
}

#[tokio::test]
async fn done_without_a_trailing_newline_and_crlf_framing() {
    let body = format!(
        "data: {}\r\n\r\ndata: [DONE]",
        chunk(r#"{"content":"Hi"}"#, r#""stop""#)
    );
    let (events, error) = decode_all_ways(&body, decode).await;
    assert_eq!(error, None);
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finished(StopReason::EndTurn))
    );
}

#[tokio::test]
async fn the_llama_cpp_error_field_is_classified() {
    let body = format!(
        "data: {}\n\nerror: {}\n\n",
        chunk(r#"{"content":"Hi"}"#, "null"),
        r#"{"code":500,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}"#
    );
    let (events, error) = decode_all_ways(&body, decode).await;
    assert_eq!(
        events,
        [
            ModelEvent::TextDelta("Hi".into()),
            ModelEvent::PartCompleted(Part::Text { text: "Hi".into() })
        ]
    );
    let (kind, message) = error.unwrap();
    assert_eq!(kind, ErrorKind::ContextOverflow);
    assert!(
        message.contains("exceeds the available context size"),
        "{message}"
    );

    let body =
        "error: {\"code\":503,\"message\":\"Loading model\",\"type\":\"unavailable_error\"}\n\n";
    let (_, error) = decode_all_ways(body, decode).await;
    assert_eq!(error.unwrap().0, ErrorKind::Server);
    let (_, error) = decode_all_ways("error: model crashed\n\n", decode).await;
    let (kind, message) = error.unwrap();
    assert_eq!(kind, ErrorKind::Server);
    assert!(message.contains("model crashed"), "{message}");
}

#[tokio::test]
async fn an_error_event_with_a_wrapped_error_and_a_retry_hint() {
    let body = "event: error\ndata: {\"error\":{\"message\":\"Rate limit reached. Please try again in 20s.\",\"code\":\"rate_limit_exceeded\"}}\n\n";
    let (_, error) = decode_all_ways(body, decode).await;
    let (kind, message) = error.unwrap();
    assert_eq!(
        kind,
        ErrorKind::RateLimited {
            retry_after: Some(std::time::Duration::from_secs(20))
        }
    );
    assert!(message.ends_with("retry after 20 s"), "{message}");
}

#[tokio::test]
async fn a_google_error_chunk_with_retry_info() {
    let error = r#"{"error":{"code":429,"message":"Resource exhausted.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}"#;
    let (_, outcome) = decode_all_ways(&transcript(&[error.to_owned()]), decode).await;
    assert_eq!(
        outcome.unwrap().0,
        ErrorKind::RateLimited {
            retry_after: Some(std::time::Duration::from_secs(7))
        }
    );
}

#[tokio::test]
async fn a_json_error_body_without_framing_is_classified() {
    let body = "[{\n  \"error\": {\n    \"code\": 503,\n    \"message\": \"The model is overloaded. Please try again later.\",\n    \"status\": \"UNAVAILABLE\"\n  }\n}\n]\n";
    let (events, error) = decode_all_ways(body, decode).await;
    assert!(events.is_empty());
    let (kind, message) = error.unwrap();
    assert_eq!(kind, ErrorKind::Overloaded { retry_after: None });
    assert!(message.contains("The model is overloaded"), "{message}");
    // Text that is not an error leaves the verdict to the end of the stream.
    let (_, error) = decode_all_ways("hello\n", decode).await;
    assert_eq!(error.unwrap().0, ErrorKind::Stream);
}

#[tokio::test]
async fn a_finish_reason_alone_is_never_an_error() {
    for reason in ["content_filter", "error", "length"] {
        let chunks = [chunk("{}", &format!("\"{reason}\"")), "[DONE]".to_owned()];
        let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
        assert_eq!(error, None, "{reason}");
        assert!(matches!(events.last(), Some(ModelEvent::Finished(_))));
    }
}

#[tokio::test]
async fn a_chunk_cut_short_at_the_end_is_an_incomplete_stream() {
    let body = format!(
        "data: {}\n\ndata: {{\"choices\":[{{\"delta\"",
        chunk(r#"{"content":"Hi"}"#, "null")
    );
    let (_, error) = decode_all_ways(&body, decode).await;
    assert_eq!(
        error,
        Some((
            ErrorKind::Stream,
            "the OpenAI-compatible stream ended before the answer was complete; try again".into()
        ))
    );
}

#[tokio::test]
async fn the_same_index_and_id_after_text_is_another_call() {
    let chunks = [
        call_delta(r#""index":0,"id":"call_1","function":{"name":"read","arguments":"{}"}"#),
        chunk(r#"{"content":"and"}"#, "null"),
        call_delta(r#""index":0,"id":"call_1","function":{"name":"ls","arguments":"{}"}"#),
        chunk("{}", r#""tool_calls""#),
        "[DONE]".to_owned(),
    ];
    let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
    assert_eq!(error, None);
    assert_eq!(
        calls(&events),
        [
            ToolCall::new("call_1", "read", "{}"),
            ToolCall::new("call_1_2", "ls", "{}")
        ]
    );
}

#[tokio::test]
async fn interleaved_fragments_of_parallel_calls_are_keyed_by_index() {
    let chunks = [
        chunk(
            r#"{"tool_calls":[{"index":0,"id":"a","function":{"name":"read","arguments":""}},{"index":1,"id":"b","function":{"name":"grep","arguments":""}}]}"#,
            "null",
        ),
        call_delta(r#""index":1,"function":{"arguments":"{\"pattern\":"}"#),
        call_delta(r#""index":0,"function":{"arguments":"{\"file_path\":"}"#),
        call_delta(r#""index":0,"function":{"arguments":"\"a.rs\"}"}"#),
        call_delta(r#""index":1,"function":{"arguments":"\"x\"}"}"#),
        chunk("{}", r#""tool_calls""#),
        "[DONE]".to_owned(),
    ];
    let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
    assert_eq!(error, None);
    assert_eq!(
        calls(&events),
        [
            ToolCall::new("a", "read", r#"{"file_path":"a.rs"}"#),
            ToolCall::new("b", "grep", r#"{"pattern":"x"}"#),
        ]
    );
}

#[tokio::test]
async fn a_call_completes_early_only_once_its_arguments_are_whole() {
    let chunks = [
        call_delta(r#""index":0,"id":"a","function":{"name":"read","arguments":"{\"p\":1}"}"#),
        call_delta(r#""index":1,"id":"b","function":{"name":"ls","arguments":"{\"p\""}"#),
        call_delta(r#""index":2,"id":"c","function":{"name":"ls","arguments":"{}"}"#),
        call_delta(r#""index":1,"function":{"arguments":":2}"}"#),
        chunk("{}", r#""tool_calls""#),
        "[DONE]".to_owned(),
    ];
    let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
    assert_eq!(error, None);
    let completed = |id: &str| {
        events
            .iter()
            .position(|e| matches!(e, ModelEvent::PartCompleted(Part::ToolCall(c)) if c.id == id))
    };
    let b_started = events
        .iter()
        .position(|e| matches!(e, ModelEvent::ToolCallStarted { id, .. } if id == "b"))
        .unwrap();
    // `a` was whole when `b` began: it could start at once. `b` was not
    // whole when `c` began, so neither completed before the end, in order.
    assert!(completed("a").unwrap() < b_started, "{events:#?}");
    assert!(completed("b").unwrap() < completed("c").unwrap());
    assert_eq!(
        calls(&events),
        [
            ToolCall::new("a", "read", r#"{"p":1}"#),
            ToolCall::new("b", "ls", r#"{"p":2}"#),
            ToolCall::new("c", "ls", "{}"),
        ]
    );
}

#[tokio::test]
async fn only_choice_zero_is_the_answer_and_a_refusal_is_text_and_a_stop_reason() {
    let chunks = [
        r#"{"choices":[{"index":1,"delta":{"content":"B"}},{"index":0,"delta":{"content":"A"}}]}"#
            .to_owned(),
        r#"{"choices":[{"index":2,"delta":{"content":"C"}}]}"#.to_owned(),
        "[DONE]".to_owned(),
    ];
    let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
    assert_eq!(error, None);
    assert_eq!(completed_parts(&events), [Part::text("A")]);
    let chunks = [
        chunk(r#"{"role":"assistant","refusal":"No, "}"#, "null"),
        chunk(r#"{"refusal":"sorry."}"#, r#""stop""#),
        "[DONE]".to_owned(),
    ];
    let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
    assert_eq!(error, None);
    assert_eq!(completed_parts(&events), [Part::text("No, sorry.")]);
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finished(StopReason::Refusal))
    );
}

#[tokio::test]
async fn a_gemini_thought_signature_on_a_call_is_kept() {
    let chunks = [
        call_delta(
            r#""index":0,"id":"function-call-1","type":"function","extra_content":{"google":{"thought_signature":"CsYC+q3Z=="}},"function":{"name":"ls","arguments":"{}"}"#,
        ),
        chunk("{}", r#""tool_calls""#),
        "[DONE]".to_owned(),
    ];
    let (events, error) = decode_all_ways(&transcript(&chunks), decode).await;
    assert_eq!(error, None);
    let mut expected = ToolCall::new("function-call-1", "ls", "{}");
    expected.signature = Some("CsYC+q3Z==".into());
    assert_eq!(calls(&events), [expected]);
}

#[tokio::test]
async fn llama_cpp_unparsed_output_is_the_models_failure() {
    let body = format!(
        "data: {}\n\ndata: {}\n\n",
        chunk(r#"{"content":"I will"}"#, "null"),
        r#"{"error":{"code":500,"message":"Failed to parse input at pos 7: the model output does not match the expected Hermes 2 Pro format","type":"server_error"}}"#
    );
    let (events, error) = decode_all_ways(&body, decode).await;
    assert_eq!(completed_parts(&events), [Part::text("I will")]);
    let (kind, message) = error.unwrap();
    assert_eq!(kind, ErrorKind::ModelOutput);
    assert!(kind.is_transient());
    assert!(
        message.contains("the model failed, not the connection"),
        "{message}"
    );
}
