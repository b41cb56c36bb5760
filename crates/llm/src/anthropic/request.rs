//! The Messages API request body, borrowed from the history (no copies of
//! message text).
//!
//! Mapping rules and why:
//! - Empty text blocks are never sent: the API rejects them.
//! - Reasoning without a signature is dropped: the API rejects thinking blocks
//!   it cannot verify (such parts come from other providers' models).
//! - In a user message, tool results come first: the API requires every
//!   `tool_result` block to precede other content.
//! - A tool call's `input` is its parsed arguments, `{}` when they are not a
//!   JSON object. Parsing is deterministic, so the same history serialises to
//!   the same bytes and the prompt cache stays warm.
//! - A message left without blocks is skipped (the API rejects empty content).
//! - Prompt caching: three `cache_control: {"type": "ephemeral"}` breakpoints
//!   (the API allows four): the system prompt, the last tool, and the last
//!   block of the newest message that may carry one (thinking blocks may
//!   not); a fourth on the message the previous request ended with when a
//!   turn added more blocks than the API looks back (`lookback`). The API caches tools, then system, then messages, so each request
//!   reads the prefix the previous one wrote. Between compactions a body is the
//!   previous one plus appended messages, byte for byte, except that the
//!   newest message's breakpoint moves: the marker is the only thing that
//!   differs, and it is appended after the block's own fields.
//! - Web search (`[web_search]`) is Anthropic's server tool, declared before
//!   the function tools; the API runs it, so it never becomes a tool call.
//! - `temperature` and `top_p` ([`crate::Sampling`]) are top-level fields,
//!   sent only when set; provider options are merged in last, as the body is
//!   serialised.

use gyre_protocol::{Message, Part, Role, ToolCall, ToolResult, ToolResultContent, ToolSpec};
use serde::Serialize;

use crate::tool_schema::{SchemaDialect, transform};
use serde_json::Value;

use crate::{ModelRequest, ToolChoice};

#[derive(Debug, Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Marked<'a>>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<AnyTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice>,
}

/// Extended thinking (`--effort`): `{"type": "enabled", "budget_tokens": N}`.
#[derive(Debug, Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Marked<'a>>,
}

/// A content block that may carry a cache breakpoint.
#[derive(Debug, Serialize)]
struct Marked<'a> {
    #[serde(flatten)]
    block: Block<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

impl<'a> From<Block<'a>> for Marked<'a> {
    fn from(block: Block<'a>) -> Self {
        Self {
            block,
            cache_control: None,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

/// A five-minute cache breakpoint.
const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    Image {
        source: ImageSource<'a>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        content: Vec<Block<'a>>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

#[derive(Debug, Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// A function tool, or the web search server tool (`[web_search]`), which
/// the API runs itself.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum AnyTool<'a> {
    Server(ServerTool),
    Function(WireTool<'a>),
}

/// `{"type": "web_search_20250305", "name": "web_search", "max_uses": N}`.
#[derive(Debug, Serialize)]
struct ServerTool {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_uses: Option<u32>,
}

#[derive(Debug, Serialize)]
struct WireToolChoice {
    #[serde(rename = "type")]
    kind: &'static str,
}

pub(super) fn body<'a>(request: &ModelRequest<'a>) -> Body<'a> {
    let mut functions: Vec<WireTool<'a>> = request.tools.iter().map(tool).collect();
    if let Some(last) = functions.last_mut() {
        last.cache_control = Some(EPHEMERAL);
    }
    // The server tool goes first, so the breakpoint stays on the last
    // function tool whether search is on or not.
    let search = request.sampling.web_search.map(|search| {
        AnyTool::Server(ServerTool {
            kind: "web_search_20250305",
            name: "web_search",
            max_uses: search.max_uses,
        })
    });
    let tools: Vec<AnyTool<'a>> = search
        .into_iter()
        .chain(functions.into_iter().map(AnyTool::Function))
        .collect();
    let tool_choice = (!tools.is_empty()).then_some(WireToolChoice {
        kind: match request.tool_choice {
            ToolChoice::Auto => "auto",
            ToolChoice::None => "none",
        },
    });
    let system = if request.system.is_empty() {
        Vec::new()
    } else {
        vec![Marked {
            block: Block::Text {
                text: request.system,
            },
            cache_control: Some(EPHEMERAL),
        }]
    };
    let mut messages: Vec<WireMessage<'a>> =
        request.messages.iter().filter_map(|m| message(m)).collect();
    let blocks: Vec<usize> = messages.iter().map(|m| m.content.len()).collect();
    if let Some(earlier) = super::lookback::earlier_breakpoint(&blocks) {
        mark_last_cacheable(&mut messages[earlier].content);
    }
    if let Some(newest) = messages.last_mut() {
        mark_last_cacheable(&mut newest.content);
    }
    let thinking = request
        .sampling
        .effort
        .and_then(|effort| effort.anthropic_budget(request.max_output_tokens))
        .map(|budget_tokens| Thinking {
            kind: "enabled",
            budget_tokens,
        });
    // Thinking refuses a set temperature and a top_p under 0.95: neither
    // is sent with it.
    let thinks = thinking.is_some();
    Body {
        model: request.model,
        max_tokens: request.max_output_tokens,
        temperature: request.sampling.temperature.filter(|_| !thinks),
        top_p: request.sampling.top_p.filter(|_| !thinks),
        thinking,
        stream: true,
        system,
        messages,
        tools,
        tool_choice,
    }
}

/// Puts a breakpoint on the last block that may carry one: thinking blocks
/// may not.
fn mark_last_cacheable(content: &mut [Marked<'_>]) {
    let cacheable = content.iter_mut().rev().find(|m| {
        !matches!(
            m.block,
            Block::Thinking { .. } | Block::RedactedThinking { .. }
        )
    });
    if let Some(marked) = cacheable {
        marked.cache_control = Some(EPHEMERAL);
    }
}

fn tool(spec: &ToolSpec) -> WireTool<'_> {
    WireTool {
        name: &spec.name,
        description: &spec.description,
        input_schema: transform(SchemaDialect::Anthropic, &spec.input_schema),
        cache_control: None,
    }
}

fn message(message: &Message) -> Option<WireMessage<'_>> {
    let mut content: Vec<Block<'_>> = Vec::with_capacity(message.parts.len());
    if message.role == Role::User {
        // Tool results first (an API requirement), other parts after, each
        // group in its original order.
        content.extend(message.tool_results().map(tool_result));
    }
    for part in &message.parts {
        match part {
            Part::ToolResult(result) if message.role != Role::User => {
                content.push(tool_result(result));
            }
            Part::ToolResult(_) => {}
            Part::Text { text } if text.is_empty() => {}
            Part::Text { text } => content.push(Block::Text { text }),
            Part::Reasoning {
                signature: Some(signature),
                redacted: true,
                ..
            } => content.push(Block::RedactedThinking { data: signature }),
            Part::Reasoning {
                text,
                signature: Some(signature),
                redacted: false,
            } => content.push(Block::Thinking {
                thinking: text,
                signature,
            }),
            Part::Reasoning {
                signature: None, ..
            } => {}
            Part::ToolCall(call) => content.push(tool_use(call)),
            Part::Image { media_type, data } => content.push(image(media_type, data)),
        }
    }
    if content.is_empty() {
        return None;
    }
    Some(WireMessage {
        role: match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        },
        content: content.into_iter().map(Marked::from).collect(),
    })
}

fn tool_use(call: &ToolCall) -> Block<'_> {
    let input = match call.arguments_json() {
        Some(object @ Value::Object(_)) => object,
        _ => Value::Object(serde_json::Map::new()),
    };
    Block::ToolUse {
        id: &call.id,
        name: &call.name,
        input,
    }
}

fn tool_result(result: &ToolResult) -> Block<'_> {
    let content = result
        .content
        .iter()
        .filter_map(|c| match c {
            ToolResultContent::Text { text } if text.is_empty() => None,
            ToolResultContent::Text { text } => Some(Block::Text { text }),
            ToolResultContent::Image { media_type, data } => Some(image(media_type, data)),
        })
        .collect();
    Block::ToolResult {
        tool_use_id: &result.call_id,
        content,
        is_error: result.is_error,
    }
}

fn image<'a>(media_type: &'a str, data: &'a str) -> Block<'a> {
    Block::Image {
        source: ImageSource {
            kind: "base64",
            media_type,
            data,
        },
    }
}

#[cfg(test)]
mod tests {
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
}
