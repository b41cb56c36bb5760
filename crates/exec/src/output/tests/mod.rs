//! Tests of the headless printers: each event's lines against Claude
//! Code's shapes. This file holds the top-level lines (tool messages,
//! compaction, the result object and its cost and cache fields) and the
//! helpers every group shares; `subagents` holds a child run's lines and
//! `shapes` a whole streamed answer against Claude Code's own output.

mod shapes;
mod subagents;

use super::*;
use gyre_protocol::{FinishReason, Outcome, RunSummary, ToolCall, ToolResult};
use std::sync::Arc;

#[test]
fn tool_messages_map_to_claude_code_shapes() {
    let mut out = StreamJson::new("s1".into(), false);
    let assistant = Message::new(
        "m1",
        Role::Assistant,
        vec![
            Part::text("Reading."),
            Part::ToolCall(ToolCall::new("c1", "read", r#"{"file_path":"a"}"#)),
        ],
    );
    let line = out
        .line(&Event::MessageAppended {
            message: Arc::new(assistant),
        })
        .unwrap();
    assert_eq!(line["type"], "assistant");
    assert_eq!(line["message"]["content"][1]["input"]["file_path"], "a");
    let results = Message::new(
        "m2",
        Role::User,
        vec![Part::ToolResult(ToolResult::text(
            "c1",
            "read",
            "boom",
            Outcome::Error,
        ))],
    );
    let line = out
        .line(&Event::MessageAppended {
            message: Arc::new(results),
        })
        .unwrap();
    assert_eq!(
        line["message"]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "c1", "content": "boom", "is_error": true})
    );
    let prompt = Message::user_text("m0", "hi");
    assert!(
        out.line(&Event::MessageAppended {
            message: Arc::new(prompt)
        })
        .is_none()
    );
}

#[test]
fn compact_boundaries_follow_the_contract() {
    use gyre_protocol::{CompactBoundary, CompactTrigger};
    let mut out = StreamJson::new("s".into(), false);
    let line = out
        .line(&Event::CompactBoundary {
            message_id: "m".into(),
            boundary: CompactBoundary {
                trigger: CompactTrigger::Auto,
                pre_tokens: 123_456,
                post_tokens: 9_876,
                kept_from: None,
            },
        })
        .unwrap();
    assert_eq!(
        line,
        json!({"type": "system", "subtype": "compact_boundary", "session_id": "s",
            "compact_metadata": {"trigger": "auto", "pre_tokens": 123_456, "post_tokens": 9_876}})
    );
}

#[test]
fn partial_messages_only_when_asked() {
    let delta = Event::TextDelta { text: "x".into() };
    assert!(StreamJson::new("s".into(), false).line(&delta).is_none());
    let line = StreamJson::new("s".into(), true).line(&delta).unwrap();
    assert_eq!(line["type"], "stream_event");
    assert_eq!(line["event"]["delta"]["text"], "x");
}

#[test]
fn the_result_tells_what_the_prompt_cache_served() {
    let mut run = summary(FinishReason::Completed, "done");
    run.usage = Usage {
        input_tokens: 1_000,
        output_tokens: 50,
        reasoning_tokens: 0,
        cache_read_tokens: 8_000,
        cache_write_tokens: 1_000,
    };
    let result = result_object(&run, "s1", "claude-x");
    assert_eq!(result["usage"]["cache_read_input_tokens"], 8_000);
    assert_eq!(result["usage"]["cache_creation_input_tokens"], 1_000);
    assert_eq!(
        result["cache"],
        json!({"read_tokens": 8_000, "write_tokens": 1_000, "uncached_tokens": 1_000, "hit_ratio": 0.8, "saved_usd": null})
    );
    let none = result_object(&summary(FinishReason::Completed, ""), "s1", "claude-x");
    assert_eq!(none["cache"]["hit_ratio"], 0.0);

    // With prices (Claude Sonnet 4.5's per MTok): 8,000 reads at $3 less
    // $0.30, less 1,000 writes at $3.75 less $3.
    let prices = Pricing {
        input: 3.0,
        output: 15.0,
        cache_read: 0.3,
        cache_write: 3.75,
    };
    let mut priced = result_object(&run, "s1", "claude-x");
    with_cache_savings(&mut priced, &run.usage, Some(&prices));
    assert_eq!(priced["cache"]["saved_usd"], 0.02085);
    // The stream-json printer prices its result line the same way.
    let mut out = StreamJson::new("s1".into(), false).with_pricing(Some(prices));
    let lines = out.lines(&Event::RunFinished(run.clone()));
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["cache"]["saved_usd"], 0.02085);
}

#[test]
fn each_turns_line_says_what_the_cache_served_read_and_wrote() {
    let mut out = StreamJson::new("s".into(), false);
    let mut lines = Vec::new();
    for event in [
        Event::RunStarted {
            session_id: "s".into(),
            model: "claude-x".into(),
            cwd: "/w".into(),
            tools: vec![],
        },
        Event::TurnStarted { turn: 1 },
        Event::MessageAppended {
            message: Arc::new(Message::new("m1", Role::Assistant, vec![Part::text("ok")])),
        },
        Event::TurnCompleted {
            turn: 1,
            usage: Usage {
                input_tokens: 30,
                output_tokens: 5,
                reasoning_tokens: 0,
                cache_read_tokens: 9_000,
                cache_write_tokens: 700,
            },
            stop_reason: gyre_protocol::StopReason::EndTurn,
            cost_usd: None,
        },
    ] {
        lines.extend(out.lines(&event));
    }
    let answer = lines.iter().find(|l| l["type"] == "assistant").unwrap();
    let usage = &answer["message"]["usage"];
    assert_eq!(usage["input_tokens"], 30, "uncached: {usage}");
    assert_eq!(usage["cache_read_input_tokens"], 9_000);
    assert_eq!(usage["cache_creation_input_tokens"], 700);
    assert_eq!(usage["output_tokens"], 5);
}

#[test]
fn the_result_says_when_the_models_prices_are_unknown() {
    let mut result = result_object(&summary(FinishReason::Completed, "ok"), "s1", "my-local");
    with_cost_note(&mut result, "my-local", true);
    assert!(result.get("cost_note").is_none(), "{result}");
    with_cost_note(&mut result, "my-local", false);
    let note = result["cost_note"].as_str().unwrap();
    assert!(
        note.starts_with("no prices for my-local: total_cost_usd counts only"),
        "{note}"
    );
    assert!(note.contains("[models.\"my-local\"]"), "{note}");
}

pub(super) fn summary(reason: FinishReason, text: &str) -> RunSummary {
    RunSummary {
        reason,
        final_text: text.into(),
        num_turns: 2,
        usage: Usage::default(),
        cost_usd: 0.0,
        duration_ms: 5,
        error: None,
    }
}

/// `inner` as an event of the subagent `task_id`, started by `call_id`.
pub(super) fn nested(call_id: &str, task_id: &str, agent: &str, inner: Event) -> Event {
    Event::Subagent {
        call_id: call_id.into(),
        task_id: task_id.into(),
        agent: agent.into(),
        inner: Box::new(inner),
    }
}

pub(super) fn appended(message: Message) -> Event {
    Event::MessageAppended {
        message: Arc::new(message),
    }
}
