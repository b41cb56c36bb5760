//! One whole streamed answer (`one_answer`) checked against the Messages
//! API's event sequence, the assistant line's fields, and the fields the
//! real Claude Code CLI's lines carry (its output is the fixture).

use super::super::*;
use super::{appended, summary};
use gyre_protocol::{FinishReason, Outcome, ToolCall, ToolResult};

/// A streamed answer: thinking, text, a tool call, then its end.
fn one_answer(out: &mut StreamJson) -> Vec<Value> {
    use gyre_protocol::StopReason;
    let call = ToolCall::new("c1", "read", r#"{"file_path":"a"}"#);
    let answer = Message::new(
        "m1",
        Role::Assistant,
        vec![Part::text("Reading."), Part::ToolCall(call.clone())],
    );
    let usage = Usage {
        input_tokens: 100,
        output_tokens: 20,
        ..Usage::default()
    };
    let started = Event::RunStarted {
        session_id: "s".into(),
        model: "claude-x".into(),
        cwd: "/w".into(),
        tools: vec!["read".into()],
    };
    let events = [
        started,
        Event::TurnStarted { turn: 1 },
        Event::ReasoningDelta { text: "hm".into() },
        Event::TextDelta {
            text: "Read".into(),
        },
        Event::TextDelta {
            text: "ing.".into(),
        },
        Event::ToolCallStarted {
            call_id: "c1".into(),
            name: "read".into(),
        },
        Event::ToolCallReady { call },
        appended(answer),
        Event::TurnCompleted {
            turn: 1,
            usage,
            stop_reason: StopReason::ToolUse,
            cost_usd: None,
        },
    ];
    events.iter().flat_map(|e| out.lines(e)).collect()
}

#[test]
fn partial_messages_follow_the_messages_api_sequence() {
    let mut out = StreamJson::new("s".into(), true);
    let lines = one_answer(&mut out);
    assert!(lines.iter().all(|l| l["uuid"].is_string()));
    let events: Vec<String> = lines
        .iter()
        .filter(|l| l["type"] == "stream_event")
        .map(|l| {
            let e = &l["event"];
            match e.get("index") {
                Some(i) => format!("{}:{i}", e["type"].as_str().unwrap()),
                None => e["type"].as_str().unwrap().to_string(),
            }
        })
        .collect();
    assert_eq!(
        events,
        [
            "message_start",
            "content_block_start:0",
            "content_block_delta:0",
            "content_block_stop:0",
            "content_block_start:1",
            "content_block_delta:1",
            "content_block_delta:1",
            "content_block_stop:1",
            "content_block_start:2",
            "content_block_delta:2",
            "content_block_stop:2",
            "message_delta",
            "message_stop",
        ]
    );
    let delta = lines
        .iter()
        .find(|l| l["event"]["type"] == "message_delta")
        .unwrap();
    assert_eq!(delta["event"]["delta"]["stop_reason"], "tool_use");
    assert_eq!(delta["event"]["usage"]["output_tokens"], 20);
    let args = lines
        .iter()
        .find(|l| l["event"]["delta"]["type"] == "input_json_delta")
        .unwrap();
    assert_eq!(
        args["event"]["delta"]["partial_json"],
        r#"{"file_path":"a"}"#
    );
    assert_eq!(args["parent_tool_use_id"], Value::Null);
    // The assistant line comes after its answer's end, with its usage.
    assert_eq!(lines.last().unwrap()["type"], "assistant");
}

#[test]
fn assistant_lines_carry_model_usage_and_stop_reason() {
    let mut out = StreamJson::new("s".into(), false);
    let lines = one_answer(&mut out);
    assert_eq!(lines.len(), 2, "init and the assistant line: {lines:?}");
    let message = &lines[1]["message"];
    assert_eq!(message["id"], "m1");
    assert_eq!(message["model"], "claude-x");
    assert_eq!(message["usage"]["input_tokens"], 100);
    assert_eq!(message["stop_reason"], "tool_use");
    assert_eq!(lines[1]["parent_tool_use_id"], Value::Null);
    let init = &lines[0];
    assert_eq!(init["claude_code_version"], CLAUDE_CODE_VERSION);
    assert_eq!(init["gyre_version"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn the_result_carries_what_the_sdks_read() {
    let result = result_object(&summary(FinishReason::Completed, "ok"), "s", "claude-x");
    for key in [
        "duration_api_ms",
        "permission_denials",
        "modelUsage",
        "total_cost_usd",
    ] {
        assert!(result.get(key).is_some(), "{key} in {result}");
    }
    assert!(result["modelUsage"]["claude-x"]["inputTokens"].is_u64());
}

/// Every field a line of the real Claude Code CLI has (2.1.332, its output
/// against the mock model, `tests/fixtures`) that the Agent SDKs' parsers
/// require, gyre's line of the same kind has too.
#[test]
fn lines_have_the_fields_claude_codes_lines_have() {
    let fixture = include_str!("../../../tests/fixtures/claude-code-2.1.332-stream.jsonl");
    let claude: Vec<Value> = fixture
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut out = StreamJson::new("s".into(), true);
    let mut ours = one_answer(&mut out);
    let results = Message::new(
        "m2",
        Role::User,
        vec![Part::ToolResult(ToolResult::text(
            "c1",
            "read",
            "x",
            Outcome::Success,
        ))],
    );
    ours.extend(out.lines(&appended(results)));
    ours.extend(out.lines(&Event::RunFinished(summary(FinishReason::Completed, "ok"))));
    let kind = |l: &Value| {
        format!(
            "{}/{}/{}",
            l["type"].as_str().unwrap_or(""),
            l["subtype"].as_str().unwrap_or(""),
            l["event"]["type"].as_str().unwrap_or("")
        )
    };
    // Read by the SDKs (claude_agent_sdk/_internal/message_parser.py,
    // sdk.d.ts) or named by issue 18.
    let required: &[(&str, &[&str])] = &[
        (
            "system/init/",
            &[
                "session_id",
                "uuid",
                "cwd",
                "tools",
                "model",
                "permissionMode",
                "mcp_servers",
                "slash_commands",
                "agents",
                "claude_code_version",
                "apiKeySource",
            ],
        ),
        ("assistant//", &["uuid", "session_id", "parent_tool_use_id"]),
        ("user//", &["uuid", "session_id", "parent_tool_use_id"]),
        (
            "stream_event//",
            &["uuid", "session_id", "parent_tool_use_id", "event"],
        ),
        (
            "result/success/",
            &[
                "uuid",
                "session_id",
                "duration_ms",
                "duration_api_ms",
                "is_error",
                "num_turns",
                "total_cost_usd",
                "usage",
                "modelUsage",
                "permission_denials",
                "result",
            ],
        ),
    ];
    let mut out = StreamJson::new("s".into(), true).with_init(InitInfo::default());
    let init = out
        .lines(&Event::RunStarted {
            session_id: "s".into(),
            model: "m".into(),
            cwd: "/w".into(),
            tools: vec![],
        })
        .remove(0);
    ours.push(init);
    for (prefix, keys) in required {
        let theirs = claude.iter().find(|l| kind(l).starts_with(prefix)).unwrap();
        let mine = ours
            .iter()
            .rev()
            .find(|l| kind(l).starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} line"));
        for key in *keys {
            assert!(theirs.get(*key).is_some(), "fixture {prefix} lacks {key}");
            assert!(mine.get(*key).is_some(), "{prefix} lacks {key}: {mine}");
        }
    }
    // Assistant messages: what the SDKs read inside `message`.
    for key in ["id", "model", "usage", "content", "stop_reason"] {
        let theirs = claude.iter().find(|l| l["type"] == "assistant").unwrap();
        let mine = ours.iter().find(|l| l["type"] == "assistant").unwrap();
        assert!(theirs["message"].get(key).is_some());
        assert!(mine["message"].get(key).is_some(), "message.{key}: {mine}");
    }
    // Every partial event type Claude Code sent, gyre sends, with `index`
    // where it has one.
    for theirs in claude.iter().filter(|l| l["type"] == "stream_event") {
        let event = &theirs["event"];
        let mine = ours
            .iter()
            .find(|l| l["event"]["type"] == event["type"])
            .unwrap_or_else(|| panic!("no {} event", event["type"]));
        assert_eq!(
            event.get("index").is_some(),
            mine["event"].get("index").is_some(),
            "{event} vs {mine}"
        );
    }
}
