//! The request body's mapping and its cache breakpoints.

use std::sync::Arc;

use gyre_protocol::{Outcome, ToolResult};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::Sampling;

fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("{name} a file"),
        input_schema: json!({"type": "object", "properties": {"file_path": {"type": "string"}}}),
    }
}

fn history() -> Vec<Arc<Message>> {
    let mut failed = ToolResult::text("c2", "write", "permission denied", Outcome::Error);
    failed.content.push(ToolResultContent::Image {
        media_type: "image/png".into(),
        data: "iVBOR".into(),
    });
    vec![
        Arc::new(Message::new(
            "u1",
            Role::User,
            vec![
                Part::text("look at this"),
                Part::Image {
                    media_type: "image/jpeg".into(),
                    data: "/9j/".into(),
                },
            ],
        )),
        Arc::new(Message::new(
            "a1",
            Role::Assistant,
            vec![
                Part::Reasoning {
                    text: "I should read it".into(),
                    signature: Some("sig-1".into()),
                    redacted: false,
                },
                Part::Reasoning {
                    text: String::new(),
                    signature: Some("opaque".into()),
                    redacted: true,
                },
                Part::Reasoning {
                    text: "unsigned, from another model".into(),
                    signature: None,
                    redacted: false,
                },
                Part::text(""),
                Part::text("Reading both."),
                Part::ToolCall(ToolCall::new("c1", "read", r#"{"file_path":"a.rs"}"#)),
                Part::ToolCall(ToolCall::new("c2", "write", "[1,2]")),
            ],
        )),
        Arc::new(Message::new(
            "u2",
            Role::User,
            vec![
                Part::text("and hurry"),
                Part::ToolResult(ToolResult::text(
                    "c1",
                    "read",
                    "fn main() {}",
                    Outcome::Success,
                )),
                Part::ToolResult(failed),
            ],
        )),
        Arc::new(Message::new("a2", Role::Assistant, vec![Part::text("")])),
    ]
}

#[test]
fn body_maps_every_part() {
    let messages = history();
    let tools = [spec("read"), spec("write")];
    let request = ModelRequest {
        model: "claude-x",
        system: "You are gyre.",
        messages: &messages,
        tools: &tools,
        tool_choice: ToolChoice::Auto,
        max_output_tokens: 8192,
        cache_key: None,
        cache_points: &[],
        sampling: &Sampling::NONE,
    };
    let actual = serde_json::to_value(body(&request)).unwrap();
    let schema = json!({"type": "object", "properties": {"file_path": {"type": "string"}}});
    let expected = json!({
        "model": "claude-x",
        "max_tokens": 8192,
        "stream": true,
        "system": [{"type": "text", "text": "You are gyre.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "look at this"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}}
            ]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should read it", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Reading both."},
                {"type": "tool_use", "id": "c1", "name": "read", "input": {"file_path": "a.rs"}},
                {"type": "tool_use", "id": "c2", "name": "write", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": [
                    {"type": "text", "text": "fn main() {}"}
                ]},
                {"type": "tool_result", "tool_use_id": "c2", "is_error": true, "content": [
                    {"type": "text", "text": "permission denied"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}}
                ]},
                {"type": "text", "text": "and hurry", "cache_control": {"type": "ephemeral"}}
            ]}
        ],
        "tools": [
            {"name": "read", "description": "read a file", "input_schema": schema},
            {"name": "write", "description": "write a file", "input_schema": schema, "cache_control": {"type": "ephemeral"}}
        ],
        "tool_choice": {"type": "auto"}
    });
    assert_eq!(actual, expected);
}

#[test]
fn empty_system_and_no_tools_are_omitted() {
    let messages = vec![Arc::new(Message::user_text("u", "hi"))];
    let request = ModelRequest {
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        tool_choice: ToolChoice::None,
        max_output_tokens: 100,
        cache_key: None,
        cache_points: &[],
        sampling: &Sampling::NONE,
    };
    let actual = serde_json::to_string(&body(&request)).unwrap();
    assert_eq!(
        actual,
        r#"{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}"#
    );
}

#[test]
fn tool_choice_none_is_sent_with_tools() {
    let messages = vec![Arc::new(Message::user_text("u", "hi"))];
    let tools = [spec("read")];
    let request = ModelRequest {
        model: "m",
        system: "s",
        messages: &messages,
        tools: &tools,
        tool_choice: ToolChoice::None,
        max_output_tokens: 1,
        cache_key: None,
        cache_points: &[],
        sampling: &Sampling::NONE,
    };
    let actual = serde_json::to_value(body(&request)).unwrap();
    assert_eq!(actual["tool_choice"], json!({"type": "none"}));
}

const MARKER: &str = r#","cache_control":{"type":"ephemeral"}"#;

fn request<'a>(messages: &'a [Arc<Message>], tools: &'a [ToolSpec]) -> ModelRequest<'a> {
    ModelRequest {
        model: "claude-x",
        system: "You are gyre.",
        messages,
        tools,
        tool_choice: ToolChoice::Auto,
        max_output_tokens: 8192,
        cache_key: Some("session"),
        cache_points: &[],
        sampling: &Sampling::NONE,
    }
}

#[test]
fn breakpoints_skip_thinking_and_stay_within_four() {
    let messages = vec![Arc::new(Message::new(
        "a1",
        Role::Assistant,
        vec![
            Part::text("Done."),
            Part::Reasoning {
                text: "after the text".into(),
                signature: Some("sig".into()),
                redacted: false,
            },
        ],
    ))];
    let tools = [spec("read"), spec("write")];
    let value = serde_json::to_value(body(&request(&messages, &tools))).unwrap();
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(
        value["messages"][0]["content"][0]["cache_control"],
        ephemeral
    );
    assert_eq!(
        value["messages"][0]["content"][1].get("cache_control"),
        None
    );
    assert_eq!(value["tools"][0].get("cache_control"), None);
    assert_eq!(value["tools"][1]["cache_control"], ephemeral);
    assert_eq!(value["system"][0]["cache_control"], ephemeral);
    let text = serde_json::to_string(&body(&request(&history(), &tools))).unwrap();
    assert!(text.matches("cache_control").count() <= 4);
}

#[test]
fn each_body_is_the_previous_one_plus_appended_messages() {
    let all = history();
    let tools = [spec("read"), spec("write")];
    let serialised = |n: usize| {
        let text = serde_json::to_string(&body(&request(&all[..n], &tools))).unwrap();
        // One breakpoint each on the system prompt, the last tool and
        // the newest message.
        assert_eq!(text.matches(MARKER).count(), 3, "{text}");
        text
    };
    for n in 1..all.len() - 1 {
        let (before, after) = (serialised(n), serialised(n + 1));
        // Without the moving marker, the earlier body up to the end of
        // its messages is a prefix of the later one, and what follows the
        // messages (tools, tool choice) is the same.
        let (before, after) = (
            before.replacen(MARKER, "", 3),
            after.replacen(MARKER, "", 3),
        );
        let cut = |text: &str| text.find(r#"],"tools":"#).unwrap();
        let (before_head, before_tail) = before.split_at(cut(&before));
        let (after_head, after_tail) = after.split_at(cut(&after));
        assert!(
            after_head.starts_with(before_head),
            "{before_head}\n{after_head}"
        );
        assert_eq!(before_tail, after_tail);
    }
}

#[test]
fn cache_points_get_breakpoints_and_four_is_the_most() {
    let mut messages = vec![Arc::new(Message::user_text("u0", "start"))];
    // A turn of one call, then one of 12 calls and their 12 results.
    for (turn, n) in [1, 12].into_iter().enumerate() {
        let mut answer = Message::new(format!("a{turn}"), Role::Assistant, Vec::new());
        let mut results = Message::new(format!("r{turn}"), Role::User, Vec::new());
        for i in 0..n {
            let id = format!("c{turn}-{i}");
            answer
                .parts
                .push(Part::ToolCall(ToolCall::new(&id, "read", "{}")));
            results.parts.push(Part::ToolResult(ToolResult::text(
                &id,
                "read",
                "out",
                Outcome::Success,
            )));
        }
        messages.push(Arc::new(answer));
        messages.push(Arc::new(results));
    }
    let tools = [spec("read")];
    let marks = |request: &ModelRequest<'_>| -> Vec<String> {
        let value = serde_json::to_value(body(request)).unwrap();
        let mut at = Vec::new();
        if value["tools"][0].get("cache_control").is_some() {
            at.push("tools".to_owned());
        }
        if value["system"][0].get("cache_control").is_some() {
            at.push("system".to_owned());
        }
        for (i, m) in value["messages"].as_array().unwrap().iter().enumerate() {
            let content = m["content"].as_array().unwrap();
            if content.iter().any(|b| b.get("cache_control").is_some()) {
                at.push(format!("m{i}"));
            }
        }
        at
    };
    // After the small turn: the newest message, then the points.
    let mut small = request(&messages[..3], &tools);
    assert_eq!(marks(&small), ["tools", "system", "m2"]);
    small.cache_points = &[1];
    assert_eq!(marks(&small), ["tools", "system", "m1", "m2"]);
    // The newest message is never marked twice.
    small.cache_points = &[2];
    assert_eq!(marks(&small), ["tools", "system", "m2"]);
    // Two points: the tools give theirs up.
    small.cache_points = &[0, 1];
    assert_eq!(marks(&small), ["system", "m0", "m1", "m2"]);
    // After the big turn the previous end (m2) is out of the lookback and
    // gets a breakpoint back.
    let mut big = request(&messages, &tools);
    assert_eq!(marks(&big), ["tools", "system", "m2", "m4"]);
    big.cache_points = &[1];
    assert_eq!(marks(&big), ["system", "m1", "m2", "m4"]);
    // Past the budget the cache points come first.
    big.cache_points = &[0, 1];
    assert_eq!(marks(&big), ["system", "m0", "m1", "m4"]);
}
