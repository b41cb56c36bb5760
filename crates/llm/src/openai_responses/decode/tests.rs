use gyre_protocol::{Part, StopReason, ToolCall, Usage};
use pretty_assertions::assert_eq;

use crate::ModelEvent;
use crate::error::ErrorKind;
use crate::http::ByteStream;
use crate::openai_responses::decode_openai_responses_sse;
use crate::testing::{completed_parts, decode_all_ways, sse};

fn decode(bytes: ByteStream) -> crate::ModelStream {
    decode_openai_responses_sse(bytes)
}

/// An SSE transcript from JSON data lines; the event name is their `type`.
fn transcript(events: &[&str]) -> String {
    let named: Vec<(String, &str)> = events
        .iter()
        .map(|data| {
            let value: serde_json::Value = serde_json::from_str(data).unwrap();
            (value["type"].as_str().unwrap_or("").to_owned(), *data)
        })
        .collect();
    let pairs: Vec<(&str, &str)> = named.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    sse(&pairs)
}

const CREATED: &str = r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}}"#;

const USAGE: &str = r#"{"input_tokens":1200,"input_tokens_details":{"cached_tokens":1000},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":120},"total_tokens":1500}"#;

fn completed() -> String {
    format!(
        r#"{{"type":"response.completed","sequence_number":99,"response":{{"id":"resp_1","status":"completed","usage":{USAGE}}}}}"#
    )
}

fn usage() -> Usage {
    Usage {
        input_tokens: 200,
        output_tokens: 300,
        reasoning_tokens: 120,
        cache_read_tokens: 1000,
        cache_write_tokens: 0,
    }
}

const REASONING: &[&str] = &[
    r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}"#,
    r#"{"type":"response.reasoning_summary_part.added","output_index":0,"item_id":"rs_1","summary_index":0,"part":{"type":"summary_text","text":""}}"#,
    r#"{"type":"response.reasoning_summary_text.delta","output_index":0,"item_id":"rs_1","summary_index":0,"delta":"**Plan** read "}"#,
    r#"{"type":"response.reasoning_summary_text.delta","output_index":0,"item_id":"rs_1","summary_index":0,"delta":"both — ✓"}"#,
    r#"{"type":"response.reasoning_summary_text.delta","output_index":0,"item_id":"rs_1","summary_index":1,"delta":"Then answer."}"#,
    r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"**Plan** read both — ✓"},{"type":"summary_text","text":"Then answer."}],"encrypted_content":"gAAAAABenc=="}}"#,
];

const MESSAGE: &[&str] = &[
    r#"{"type":"response.output_item.added","output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}"#,
    r#"{"type":"response.content_part.added","output_index":1,"item_id":"msg_1","content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}"#,
    r#"{"type":"response.output_text.delta","output_index":1,"item_id":"msg_1","content_index":0,"delta":"Reading "}"#,
    r#"{"type":"response.output_text.delta","output_index":1,"item_id":"msg_1","content_index":0,"delta":"both."}"#,
    r#"{"type":"response.output_text.done","output_index":1,"item_id":"msg_1","content_index":0,"text":"Reading both."}"#,
    r#"{"type":"response.output_item.done","output_index":1,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Reading both.","annotations":[]}]}}"#,
];

fn call(index: u64, call_id: &str, name: &str, pieces: &[&str]) -> Vec<String> {
    let whole: String = pieces.concat();
    let mut events = vec![format!(
        r#"{{"type":"response.output_item.added","output_index":{index},"item":{{"id":"fc_{index}","type":"function_call","status":"in_progress","arguments":"","call_id":"{call_id}","name":"{name}"}}}}"#
    )];
    for piece in pieces {
        events.push(format!(
            r#"{{"type":"response.function_call_arguments.delta","output_index":{index},"item_id":"fc_{index}","delta":{}}}"#,
            serde_json::Value::from(*piece)
        ));
    }
    let whole_json = serde_json::Value::from(whole.as_str());
    events.push(format!(
        r#"{{"type":"response.function_call_arguments.done","output_index":{index},"item_id":"fc_{index}","arguments":{whole_json}}}"#
    ));
    events.push(format!(
        r#"{{"type":"response.output_item.done","output_index":{index},"item":{{"id":"fc_{index}","type":"function_call","status":"completed","arguments":{whole_json},"call_id":"{call_id}","name":"{name}"}}}}"#
    ));
    events
}

#[tokio::test]
async fn a_full_answer_decodes_the_same_at_every_chunking() {
    let mut events: Vec<String> = vec![CREATED.to_owned()];
    events.extend(REASONING.iter().map(|e| (*e).to_owned()));
    events.extend(MESSAGE.iter().map(|e| (*e).to_owned()));
    events.extend(call(
        2,
        "call_a",
        "read",
        &["{\"file_", "path\": \"a.rs\"}"],
    ));
    events.push(r#"{"type":"response.some_future_event","x":1}"#.to_owned());
    events.push(r#"{"type":"response.output_item.added","output_index":3,"item":{"id":"ws_1","type":"web_search_call","status":"in_progress"}}"#.to_owned());
    events.push(r#"{"type":"response.output_item.done","output_index":3,"item":{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"x"}}}"#.to_owned());
    events.extend(call(4, "call_b", "bash", &["{\"command\": \"ls\"}"]));
    events.push(completed());
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();

    let (events, error) = decode_all_ways(&transcript(&refs), decode).await;

    assert_eq!(error, None);
    assert_eq!(
        events,
        vec![
            ModelEvent::ReasoningDelta("**Plan** read ".into()),
            ModelEvent::ReasoningDelta("both — ✓".into()),
            ModelEvent::ReasoningDelta("\n\n".into()),
            ModelEvent::ReasoningDelta("Then answer.".into()),
            ModelEvent::PartCompleted(Part::Reasoning {
                text: "**Plan** read both — ✓\n\nThen answer.".into(),
                signature: Some("gAAAAABenc==".into()),
                redacted: false,
            }),
            ModelEvent::TextDelta("Reading ".into()),
            ModelEvent::TextDelta("both.".into()),
            ModelEvent::PartCompleted(Part::text("Reading both.")),
            ModelEvent::ToolCallStarted {
                id: "call_a".into(),
                name: "read".into()
            },
            ModelEvent::PartCompleted(Part::ToolCall(ToolCall::new(
                "call_a",
                "read",
                r#"{"file_path": "a.rs"}"#
            ))),
            ModelEvent::ToolCallStarted {
                id: "call_b".into(),
                name: "bash".into()
            },
            ModelEvent::PartCompleted(Part::ToolCall(ToolCall::new(
                "call_b",
                "bash",
                r#"{"command": "ls"}"#
            ))),
            // The hosted search's query, after the answer (crate::web_search).
            ModelEvent::TextDelta("\n\nSearched the web: \"x\"\n".into()),
            ModelEvent::PartCompleted(Part::text("\n\nSearched the web: \"x\"\n")),
            ModelEvent::Usage(usage()),
            ModelEvent::Finished(StopReason::ToolUse),
        ]
    );
}

#[tokio::test]
async fn a_text_answer_ends_the_turn() {
    let mut events: Vec<&str> = vec![CREATED];
    events.extend(MESSAGE);
    let done = completed();
    events.push(&done);
    let (events, error) = decode_all_ways(&transcript(&events), decode).await;
    assert_eq!(error, None);
    assert_eq!(completed_parts(&events), vec![Part::text("Reading both.")]);
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finished(StopReason::EndTurn))
    );
}

#[tokio::test]
async fn items_that_arrive_only_whole_still_stream() {
    let events = [
        r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"raw thoughts"}]}}"#,
        r#"{"type":"response.output_item.done","output_index":1,"item":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi."}]}}"#,
        r#"{"type":"response.output_item.done","output_index":2,"item":{"type":"function_call","call_id":"call_z","name":"ls","arguments":"{}"}}"#,
        r#"{"type":"response.completed","response":{"status":"completed"}}"#,
    ];
    let (events, error) = decode_all_ways(&transcript(&events), decode).await;
    assert_eq!(error, None);
    assert_eq!(
        events,
        vec![
            ModelEvent::ReasoningDelta("raw thoughts".into()),
            ModelEvent::PartCompleted(Part::Reasoning {
                text: "raw thoughts".into(),
                signature: None,
                redacted: false
            }),
            ModelEvent::TextDelta("Hi.".into()),
            ModelEvent::PartCompleted(Part::text("Hi.")),
            ModelEvent::ToolCallStarted {
                id: "call_z".into(),
                name: "ls".into()
            },
            ModelEvent::PartCompleted(Part::ToolCall(ToolCall::new("call_z", "ls", "{}"))),
            ModelEvent::Finished(StopReason::ToolUse),
        ]
    );
}

#[tokio::test]
async fn incomplete_answers_map_to_stop_reasons() {
    for (reason, expected) in [
        ("max_output_tokens", StopReason::MaxTokens),
        ("content_filter", StopReason::Refusal),
    ] {
        let incomplete = format!(
            r#"{{"type":"response.incomplete","response":{{"status":"incomplete","incomplete_details":{{"reason":"{reason}"}},"usage":{USAGE}}}}}"#
        );
        let mut events: Vec<&str> = vec![CREATED];
        events.extend(&MESSAGE[..4]);
        events.push(&incomplete);
        let (events, error) = decode_all_ways(&transcript(&events), decode).await;
        assert_eq!(error, None);
        let n = events.len();
        assert_eq!(
            events[n - 3..],
            [
                ModelEvent::PartCompleted(Part::text("Reading both.")),
                ModelEvent::Usage(usage()),
                ModelEvent::Finished(expected),
            ],
            "{reason}"
        );
    }
}

#[tokio::test]
async fn a_refusal_is_text_and_stops_as_refusal() {
    let events = [
        r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[]}}"#,
        r#"{"type":"response.refusal.delta","output_index":0,"item_id":"msg_1","content_index":0,"delta":"I can't help with that."}"#,
        r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"refusal","refusal":"I can't help with that."}]}}"#,
        r#"{"type":"response.completed","response":{"status":"completed"}}"#,
    ];
    let (events, error) = decode_all_ways(&transcript(&events), decode).await;
    assert_eq!(error, None);
    assert_eq!(
        completed_parts(&events),
        vec![Part::text("I can't help with that.")]
    );
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finished(StopReason::Refusal))
    );
}

async fn failure(event: &str) -> (Vec<ModelEvent>, ErrorKind, String) {
    let mut events: Vec<&str> = vec![CREATED];
    events.extend(&MESSAGE[..3]);
    events.push(event);
    let (events, error) = decode_all_ways(&transcript(&events), decode).await;
    let (kind, message) = error.expect("the stream should fail");
    (events, kind, message)
}

#[tokio::test]
async fn failed_responses_and_error_events_are_classified() {
    let (events, kind, message) = failure(
        r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"rate_limit_exceeded","message":"Rate limit reached for gpt-5."}}}"#,
    )
    .await;
    assert_eq!(
        events,
        vec![
            ModelEvent::TextDelta("Reading ".into()),
            ModelEvent::PartCompleted(Part::Text {
                text: "Reading ".into()
            })
        ]
    );
    assert_eq!(kind, ErrorKind::RateLimited { retry_after: None });
    assert_eq!(
        message,
        "OpenAI reported an error mid-stream (rate_limit_exceeded: Rate limit reached for gpt-5); try again in a moment"
    );
    let cases = [
        (
            r#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"The server had an error."}}}"#,
            ErrorKind::Server,
        ),
        (
            r#"{"type":"error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model.","param":"input","sequence_number":4}"#,
            ErrorKind::ContextOverflow,
        ),
        (
            r#"{"type":"error","code":"invalid_prompt","message":"Invalid prompt.","param":null}"#,
            ErrorKind::InvalidRequest,
        ),
        (
            r#"{"type":"error","code":"insufficient_quota","message":"You exceeded your current quota."}"#,
            ErrorKind::InvalidRequest,
        ),
        (
            r#"{"type":"error","error":{"type":"service_unavailable","code":null,"message":"Overloaded"}}"#,
            ErrorKind::Overloaded { retry_after: None },
        ),
    ];
    for (event, expected) in cases {
        let (_, kind, message) = failure(event).await;
        assert_eq!(kind, expected, "{event}: {message}");
    }
    let (_, kind, message) = failure(
        r#"{"type":"error","code":"insufficient_quota","message":"You exceeded your current quota."}"#,
    )
    .await;
    assert!(!kind.is_transient());
    assert!(message.contains("billing"), "{message}");
}

#[tokio::test]
async fn a_stream_without_a_terminal_event_is_an_error() {
    let mut events: Vec<&str> = vec![CREATED];
    events.extend(MESSAGE);
    let (_, error) = decode_all_ways(&transcript(&events), decode).await;
    assert_eq!(
        error,
        Some((
            ErrorKind::Stream,
            "the OpenAI stream ended before the answer was complete; try again".into()
        ))
    );
}

#[tokio::test]
async fn malformed_known_events_fail_and_unknown_ones_are_ignored() {
    let text =
        "event: keepalive\ndata: not json\n\nevent: response.output_text.delta\ndata: {oops\n\n";
    let (_, error) = decode_all_ways(text, decode).await;
    let (kind, message) = error.unwrap();
    assert_eq!(kind, ErrorKind::Stream);
    assert!(
        message.starts_with("OpenAI sent a malformed `response.output_text.delta` event"),
        "{message}"
    );
}
