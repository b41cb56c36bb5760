//! Recorded provider responses replayed byte for byte through the real HTTP
//! path at several chunkings: a run must reach the same meaning at every
//! chunking. The recordings are the `gyre debug decode-stream` fixtures of the
//! cli crate (`crates/cli/tests/fixtures/streams`); their `.jsonl` files say
//! what each answer means.

use gyre_mock::{Chunking, RawReply};
use gyre_protocol::{Event, FinishReason, Part, Role, StopReason, Usage};
use serde_json::{Value, json};

use crate::faults::{Timeouts, assert_clean_transcript, first_then, retries, rig};
use crate::harness::*;

const CHUNKINGS: [Chunking; 4] = [
    Chunking::Whole,
    Chunking::Every(1),
    Chunking::Every(7),
    Chunking::Seeded { seed: 42, max: 13 },
];

fn fixture_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/fixtures/streams")
}

/// What a run made of its first answer, in the lines `decode-stream` prints.
#[derive(Debug, PartialEq)]
struct Outcome {
    reason: FinishReason,
    final_text: String,
    /// The first answer's parts, usage and stop reason (or the retry reason
    /// when the first answer failed).
    first_answer: Vec<Value>,
    tool_results: usize,
    requests: usize,
}

fn part_line(part: &Part) -> Option<Value> {
    match part {
        Part::Text { text } => Some(json!({"text": text})),
        Part::Reasoning { text, .. } => Some(json!({"reasoning": text})),
        Part::ToolCall(call) => Some(json!({"tool_call": {
            "id": call.id, "name": call.name,
            "arguments": call.arguments_json().unwrap_or(Value::String(call.arguments.clone())),
        }})),
        _ => None,
    }
}

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

fn usage_line(usage: &Usage) -> Value {
    json!({"usage": {
        "input": usage.input_tokens, "output": usage.output_tokens,
        "cache_read": usage.cache_read_tokens, "cache_write": usage.cache_write_tokens,
    }})
}

async fn replay(wire: Wire, body: &str, chunking: Chunking) -> Outcome {
    let raw = RawReply {
        body: body.to_owned(),
        chunking,
        ..RawReply::default()
    };
    let h = rig(
        wire,
        first_then(raw.into(), vec![text("done")]),
        Timeouts::Default,
    )
    .await;
    let done = h.run("hello").await;
    let context = format!("{wire:?} {chunking:?}");
    assert_clean_transcript(&h, &done, &context).await;
    let stored = h.stored(&done.session).await;
    let mut first_answer = Vec::new();
    match retries(&done.events).first() {
        Some((_, reason)) => first_answer.push(json!({"retry": reason})),
        None => {
            let answer = stored.get(1).filter(|m| m.role == Role::Assistant);
            first_answer.extend(
                answer
                    .iter()
                    .flat_map(|m| m.parts.iter().filter_map(part_line)),
            );
            let turn = done.events.iter().find_map(|e| match e {
                Event::TurnCompleted {
                    usage, stop_reason, ..
                } => Some((*usage, *stop_reason)),
                _ => None,
            });
            let (usage, stop) = turn.expect("a completed turn");
            first_answer.push(usage_line(&usage));
            first_answer.push(json!({"stop_reason": stop_name(stop)}));
        }
    }
    Outcome {
        reason: done.summary.reason,
        final_text: done.summary.final_text.clone(),
        first_answer,
        tool_results: results(&done.events).len(),
        requests: h.bodies().len(),
    }
}

/// The fixture's expected lines as a run sees them: an error is a retry
/// (named as retry events name it), and an answer without reported usage
/// has zero usage.
fn expected_meaning(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(fixture_dir().join(format!("{name}.jsonl"))).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    if let Some(error) = lines.iter().find_map(|l| l.get("error")) {
        let kind = error["kind"].as_str().unwrap();
        let reason = if kind == "server" {
            "server_error"
        } else {
            kind
        };
        return vec![json!({"retry": reason})];
    }
    // The fixtures replayed here have exact lines (no `~` or `$id:`
    // patterns: the ids gyre makes up at random would differ per run).
    assert!(!text.contains("\"~") && !text.contains("$id:"), "{name}");
    let mut out = lines.clone();
    if !lines.iter().any(|l| l.get("usage").is_some()) {
        out.insert(out.len() - 1, usage_line(&Usage::default()));
    }
    out
}

#[tokio::test]
async fn recorded_answers_mean_the_same_at_every_chunking() {
    // The quirks hardest on the SSE layer: CRLF framing, `[DONE]` without a
    // newline, JSON outside the framing after the last event, multi-byte
    // UTF-8 split anywhere; and tool calls on every wire.
    let fixtures = [
        ("anthropic-crlf.sse", Wire::Anthropic),
        ("anthropic-text-tool-use.sse", Wire::Anthropic),
        ("openai-done-no-newline.sse", Wire::OpenAi),
        ("openai-repeated-ids.sse", Wire::OpenAi),
        ("openai-reasoning-content.sse", Wire::OpenAi),
        ("openai-responses-text.sse", Wire::OpenAiResponses),
        ("openai-responses-function-call.sse", Wire::OpenAiResponses),
        (
            "openai-responses-reasoning-encrypted.sse",
            Wire::OpenAiResponses,
        ),
        ("gemini-text.sse", Wire::Gemini),
        ("gemini-parallel-calls.sse", Wire::Gemini),
        ("gemini-bare-error-after-last-event.sse", Wire::Gemini),
        // Real providers' shapes (issue 19): calls whose fragments
        // interleave, streamed Gemini arguments, hosted-tool items, a whole
        // message in `message_start`, several choices, refusals, signatures,
        // llama.cpp's unparsed output, an error then `response.failed`.
        ("openai-interleaved-parallel-calls.sse", Wire::OpenAi),
        ("openai-n-choices.sse", Wire::OpenAi),
        ("openai-refusal-delta.sse", Wire::OpenAi),
        ("openai-gemini-thought-signature.sse", Wire::OpenAi),
        ("openai-llamacpp-unparsed-output.sse", Wire::OpenAi),
        ("gemini-streamed-call-args.sse", Wire::Gemini),
        ("gemini-streamed-call-args-no-end.sse", Wire::Gemini),
        (
            "openai-responses-hosted-tool-items.sse",
            Wire::OpenAiResponses,
        ),
        (
            "openai-responses-error-then-failed.sse",
            Wire::OpenAiResponses,
        ),
        ("anthropic-complete-message-in-start.sse", Wire::Anthropic),
    ];
    for (name, wire) in fixtures {
        let body = std::fs::read_to_string(fixture_dir().join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut first: Option<Outcome> = None;
        for chunking in CHUNKINGS {
            let got = replay(wire, &body, chunking).await;
            match &first {
                None => first = Some(got),
                Some(whole) => assert_eq!(&got, whole, "{name} at {chunking:?}"),
            }
        }
        let outcome = first.unwrap();
        let expected = expected_meaning(name);
        assert_eq!(outcome.first_answer, expected, "{name}");
        assert_eq!(outcome.reason, FinishReason::Completed, "{name}");
        let calls = expected
            .iter()
            .filter(|l| l.get("tool_call").is_some())
            .count();
        assert_eq!(outcome.tool_results, calls, "{name}: every call ran once");
        let retried = usize::from(expected[0].get("retry").is_some());
        let tool_round = usize::from(calls > 0);
        assert_eq!(outcome.requests, 1 + retried + tool_round, "{name}");
        let last_text = if calls > 0 || retried > 0 {
            "done".to_owned()
        } else {
            expected
                .iter()
                .filter_map(|l| l["text"].as_str())
                .collect::<Vec<_>>()
                .join("")
        };
        assert_eq!(outcome.final_text, last_text, "{name}");
    }
}

// ---------------------------------------------------------------------------
// Rate limits: the delay asked for, in each form.

#[tokio::test]
async fn llama_cpp_output_that_does_not_parse_is_asked_once_more_then_the_models_failure() {
    let body =
        std::fs::read_to_string(fixture_dir().join("openai-llamacpp-unparsed-output.sse")).unwrap();
    for chunking in [Chunking::Whole, Chunking::Every(5)] {
        let raw = RawReply {
            body: body.clone(),
            chunking,
            ..RawReply::default()
        };
        let script = gyre_mock::Script {
            context_window: None,
            steps: vec![gyre_mock::Step {
                reply: raw.into(),
                ..gyre_mock::Step::default()
            }],
        };
        let h = rig(Wire::OpenAi, script, Timeouts::Default).await;
        let done = h.run("hello").await;
        assert_eq!(done.summary.reason, FinishReason::Failed, "{chunking:?}");
        assert_eq!(h.bodies().len(), 2, "one more request, not more");
        let reasons: Vec<String> = retries(&done.events).into_iter().map(|r| r.1).collect();
        assert_eq!(reasons, ["model_output"], "{chunking:?}");
        let error = done.summary.error.as_ref().unwrap();
        assert!(
            error.message.contains("the model's output did not parse")
                && error
                    .message
                    .contains("the model failed, not the connection"),
            "{}",
            error.message
        );
        // The text before the error was shown as it streamed, and no half
        // answer stays in the history.
        assert_clean_transcript(&h, &done, &format!("{chunking:?}")).await;
    }
}
