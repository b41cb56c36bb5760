use gyre_protocol::{Part, StopReason, ToolCall, Usage};
use pretty_assertions::assert_eq;

use crate::ModelEvent;
use crate::anthropic::decode_anthropic_sse;
use crate::error::ErrorKind;
use crate::http::ByteStream;
use crate::testing::{completed_parts, decode_all_ways, sse};

fn decode(bytes: ByteStream) -> crate::ModelStream {
    decode_anthropic_sse(bytes)
}

const START: (&str, &str) = (
    "message_start",
    r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-x","stop_reason":null,"usage":{"input_tokens":120,"cache_creation_input_tokens":30,"cache_read_input_tokens":1000,"output_tokens":1}}}"#,
);

fn stop_with(reason: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "message_delta",
            format!(
                r#"{{"type":"message_delta","delta":{{"stop_reason":"{reason}","stop_sequence":null}},"usage":{{"output_tokens":42}}}}"#
            ),
        ),
        ("message_stop", r#"{"type":"message_stop"}"#.to_owned()),
    ]
}

fn transcript(events: &[(&str, &str)], tail: &[(&'static str, String)]) -> String {
    let tail: Vec<(&str, &str)> = tail.iter().map(|(n, d)| (*n, d.as_str())).collect();
    let mut all = events.to_vec();
    all.extend(tail);
    sse(&all)
}

#[tokio::test]
async fn a_full_answer_decodes_the_same_at_every_chunking() {
    let events = [
        START,
        ("ping", r#"{"type": "ping"}"#),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"think — ✓"}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAh"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Reading "}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{}}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"both files."}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":1}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"file_"}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"path\": \"a.rs\"}"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":2}"#,
        ),
        ("some_future_event", r#"{"type":"some_future_event","x":1}"#),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":3,"content_block":{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{}}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":3}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":4,"content_block":{"type":"tool_use","id":"toolu_2","name":"bash","input":{}}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"{\"command\":"}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":" \"ls\"}"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":4}"#,
        ),
    ];
    let mut tail = stop_with("tool_use");
    // Anything after message_stop is not read.
    tail.push((
        "error",
        r#"{"type":"error","error":{"type":"api_error"}}"#.to_owned(),
    ));
    let (events, error) = decode_all_ways(&transcript(&events, &tail), decode).await;
    assert_eq!(error, None);
    let first_usage = Usage {
        input_tokens: 120,
        output_tokens: 1,
        reasoning_tokens: 0,
        cache_read_tokens: 1000,
        cache_write_tokens: 30,
    };
    let final_usage = Usage {
        output_tokens: 42,
        ..first_usage
    };
    let reading = Part::Reasoning {
        text: "Let me think — ✓".into(),
        signature: Some("EqQBCgIYAh".into()),
        redacted: false,
    };
    let read = ToolCall::new("toolu_1", "read", r#"{"file_path": "a.rs"}"#);
    let bash = ToolCall::new("toolu_2", "bash", r#"{"command": "ls"}"#);
    assert_eq!(
        events,
        vec![
            ModelEvent::Usage(first_usage),
            ModelEvent::ReasoningDelta("Let me ".into()),
            ModelEvent::ReasoningDelta("think — ✓".into()),
            ModelEvent::PartCompleted(reading),
            ModelEvent::TextDelta("Reading ".into()),
            ModelEvent::TextDelta("both files.".into()),
            ModelEvent::PartCompleted(Part::text("Reading both files.")),
            ModelEvent::ToolCallStarted {
                id: "toolu_1".into(),
                name: "read".into()
            },
            ModelEvent::PartCompleted(Part::ToolCall(read)),
            ModelEvent::ToolCallStarted {
                id: "toolu_2".into(),
                name: "bash".into()
            },
            ModelEvent::PartCompleted(Part::ToolCall(bash)),
            ModelEvent::Usage(final_usage),
            ModelEvent::Finished(StopReason::ToolUse),
        ]
    );
}

#[tokio::test]
async fn stop_reasons_are_normalised() {
    for (wire, expected) in [
        ("end_turn", StopReason::EndTurn),
        ("stop_sequence", StopReason::EndTurn),
        ("pause_turn", StopReason::EndTurn),
        ("tool_use", StopReason::ToolUse),
        ("max_tokens", StopReason::MaxTokens),
        ("refusal", StopReason::Refusal),
        ("model_context_window_exceeded", StopReason::ContextOverflow),
        ("something_new", StopReason::EndTurn),
    ] {
        let (events, error) =
            decode_all_ways(&transcript(&[START], &stop_with(wire)), decode).await;
        assert_eq!(error, None);
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Finished(expected)),
            "{wire}"
        );
    }
}

#[tokio::test]
async fn redacted_thinking_and_a_call_without_arguments() {
    let events = [
        START,
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwKAhgB"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":1}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t","name":"ls","input":{}}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":2}"#,
        ),
    ];
    let (events, error) =
        decode_all_ways(&transcript(&events, &stop_with("tool_use")), decode).await;
    assert_eq!(error, None);
    assert_eq!(
        completed_parts(&events),
        vec![
            Part::Reasoning {
                text: String::new(),
                signature: Some("EmwKAhgB".into()),
                redacted: true
            },
            Part::ToolCall(ToolCall::new("t", "ls", "{}")),
        ]
    );
}

#[tokio::test]
async fn an_error_event_mid_stream_is_classified() {
    for (error_type, kind) in [
        (
            "overloaded_error",
            ErrorKind::Overloaded { retry_after: None },
        ),
        (
            "rate_limit_error",
            ErrorKind::RateLimited { retry_after: None },
        ),
        ("api_error", ErrorKind::Server),
        ("invalid_request_error", ErrorKind::InvalidRequest),
        ("authentication_error", ErrorKind::Auth),
        ("permission_error", ErrorKind::Auth),
    ] {
        let error_event = format!(
            r#"{{"type":"error","error":{{"type":"{error_type}","message":"Something happened."}}}}"#
        );
        let events = [
            START,
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
            ),
            ("error", error_event.as_str()),
        ];
        let (events, error) = decode_all_ways(&sse(&events), decode).await;
        // The text that came before the error is completed, not lost.
        assert_eq!(
            events.last(),
            Some(&ModelEvent::PartCompleted(Part::Text { text: "Hi".into() }))
        );
        let (actual_kind, message) = error.unwrap();
        assert_eq!(actual_kind, kind, "{error_type}");
        assert_eq!(
            message.split(" (").next(),
            Some("Anthropic reported an error mid-stream")
        );
        assert!(message.contains("Something happened"), "{message}");
    }
    let too_long = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 300000 tokens > 200000 maximum"}}"#;
    let (_, error) = decode_all_ways(&sse(&[START, ("error", too_long)]), decode).await;
    assert_eq!(error.unwrap().0, ErrorKind::ContextOverflow);
}

#[tokio::test]
async fn a_stream_without_message_stop_is_an_error() {
    let events = [
        START,
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
        ),
    ];
    let (_, error) = decode_all_ways(&sse(&events), decode).await;
    let (kind, message) = error.unwrap();
    assert_eq!(kind, ErrorKind::Stream);
    assert_eq!(
        message,
        "the Anthropic stream ended before the answer was complete; try again"
    );
    // An event cut in the middle is the same: never a silent success.
    let whole = transcript(&[START], &stop_with("end_turn"));
    let cut = &whole[..whole.len() - 10];
    let (_, error) = decode_all_ways(cut, decode).await;
    assert_eq!(error.unwrap().0, ErrorKind::Stream);
}

#[tokio::test]
async fn malformed_json_in_a_known_event_is_an_error_and_in_an_unknown_one_is_not() {
    let (_, error) =
        decode_all_ways(&sse(&[START, ("content_block_delta", "{oops")]), decode).await;
    assert_eq!(error.unwrap().0, ErrorKind::Stream);
    let (events, error) = decode_all_ways(
        &transcript(
            &[START, ("vendor_note", "not json")],
            &stop_with("end_turn"),
        ),
        decode,
    )
    .await;
    assert_eq!(error, None);
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finished(StopReason::EndTurn))
    );
}

#[tokio::test]
async fn server_tools_are_never_client_calls_and_signatures_stay_exact() {
    // A signature as the API sends it: base64 with `+`, `/` and `=`, in pieces.
    let events = [
        START,
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Search first."}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"ErUBCkYIAxgCIkD+/a"}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"b==\u002b"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"rust\"}"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":1}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://x","title":"x","encrypted_content":"abc"}]}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":2}"#,
        ),
        ("brand_new_event", r#"{"type":"brand_new_event"}"#),
    ];
    let (events, error) =
        decode_all_ways(&transcript(&events, &stop_with("pause_turn")), decode).await;
    assert_eq!(error, None);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ModelEvent::ToolCallStarted { .. })),
        "{events:?}"
    );
    // The search is shown after the answer, as text (crate::web_search).
    assert_eq!(
        completed_parts(&events),
        vec![
            Part::Reasoning {
                text: "Search first.".into(),
                signature: Some("ErUBCkYIAxgCIkD+/ab==+".into()),
                redacted: false,
            },
            Part::text("\n\nSearched the web: \"rust\"\n"),
        ]
    );
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finished(StopReason::EndTurn))
    );
}

#[tokio::test]
async fn usage_counts_cache_reads_and_writes_and_all_output() {
    let delta = r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":120,"cache_creation_input_tokens":30,"cache_read_input_tokens":1000,"output_tokens":512}}"#;
    let events = [
        START,
        ("message_delta", delta),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ];
    let (events, error) = decode_all_ways(&sse(&events), decode).await;
    assert_eq!(error, None);
    assert_eq!(
        events[events.len() - 2],
        ModelEvent::Usage(Usage {
            input_tokens: 120,
            output_tokens: 512,
            reasoning_tokens: 0,
            cache_read_tokens: 1000,
            cache_write_tokens: 30,
        })
    );
}

#[tokio::test]
async fn a_json_error_instead_of_events_is_classified() {
    let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let (events, error) = decode_all_ways(body, decode).await;
    assert!(events.is_empty());
    assert_eq!(
        error.unwrap().0,
        ErrorKind::Overloaded { retry_after: None }
    );
}
