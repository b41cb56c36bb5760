//! The Chat Completions request body.
//!
//! Mapping rules and why:
//! - The system prompt is the first message (`role: system`), omitted when empty.
//! - A user message's tool results become `role: tool` messages, in order,
//!   before anything else of that message: the API wants them right after the
//!   assistant message whose calls they answer. Images in tool results cannot
//!   travel in a tool message (text only), so they follow in the user message.
//! - User content is a plain string unless images are present (content parts
//!   then); several text parts are joined by a blank line.
//! - Assistant tool calls carry their raw argument text exactly as the model
//!   produced it; reasoning is not sent back (the API has no field for it).
//!   An assistant message with neither text nor calls is skipped (rejected).
//! - `prompt_cache_key` (the session id) is sent only when the caller says so
//!   ([`crate::PromptCacheKey`]): OpenAI routes requests sharing a prefix to
//!   one cache by it, but other servers may reject a field they do not know.
//!   It is the same for every request of a session, so the body stays the
//!   previous one plus appended messages.
//! - `temperature` and `top_p` ([`crate::Sampling`]) are top-level fields,
//!   sent only when set and never to a reasoning model (the catalogue's
//!   `rejects_sampling`: o-series, gpt-5, which refuse them);
//!   `reasoning_effort` carries `--effort`, `response_format` (a
//!   `json_schema`, not strict) `--json-schema`; provider options are merged
//!   in last, as the body is serialised.

use gyre_protocol::{Message, Part, Role, ToolCall, ToolResultContent, ToolSpec};
use serde::Serialize;

use crate::tool_schema::{SchemaDialect, transform};
use serde_json::Value;

use crate::{ModelRequest, ToolChoice};

#[derive(Debug, Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    stream: bool,
    stream_options: StreamOptions,
    max_completion_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
    messages: Vec<ChatMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum ChatMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: String,
    },
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(String),
    Parts(Vec<ContentPart<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Debug, Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
    /// Gemini's OpenAI-compatible endpoint rejects a function-call turn
    /// without the thought signature it put on the call: sent back exactly.
    #[serde(skip_serializing_if = "Option::is_none")]
    extra_content: Option<ExtraContent<'a>>,
}

#[derive(Debug, Serialize)]
struct ExtraContent<'a> {
    google: GoogleExtra<'a>,
}

#[derive(Debug, Serialize)]
struct GoogleExtra<'a> {
    thought_signature: &'a str,
}

#[derive(Debug, Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: Value,
}

/// The body for `request`; `prompt_cache_key` is sent when given.
pub(super) fn body<'a>(request: &ModelRequest<'a>, prompt_cache_key: Option<&'a str>) -> Body<'a> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(ChatMessage::System {
            content: request.system,
        });
    }
    for message in request.messages {
        match message.role {
            Role::User => user(message, &mut messages),
            Role::Assistant => messages.extend(assistant(message)),
        }
    }
    let tools: Vec<WireTool<'a>> = request.tools.iter().map(tool).collect();
    let reasons = crate::catalog::rejects_sampling(request.model);
    let tool_choice = (!tools.is_empty()).then_some(match request.tool_choice {
        ToolChoice::Auto => "auto",
        ToolChoice::None => "none",
    });
    Body {
        model: request.model,
        prompt_cache_key,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        max_completion_tokens: request.max_output_tokens,
        // Reasoning models refuse sampling parameters.
        temperature: request.sampling.temperature.filter(|_| !reasons),
        top_p: request.sampling.top_p.filter(|_| !reasons),
        reasoning_effort: request.sampling.effort.map(crate::Effort::openai),
        response_format: request.sampling.output_schema.as_ref().map(|schema| {
            serde_json::json!({"type": "json_schema", "json_schema": {"name": "final_answer", "schema": schema, "strict": false}})
        }),
        messages,
        tools,
        tool_choice,
    }
}

fn tool(spec: &ToolSpec) -> WireTool<'_> {
    WireTool {
        kind: "function",
        function: WireFunction {
            name: &spec.name,
            description: &spec.description,
            parameters: transform(SchemaDialect::OpenAi, &spec.input_schema),
        },
    }
}

fn user<'a>(message: &'a Message, out: &mut Vec<ChatMessage<'a>>) {
    let mut parts: Vec<ContentPart<'a>> = Vec::new();
    for result in message.tool_results() {
        out.push(ChatMessage::Tool {
            tool_call_id: &result.call_id,
            content: result.text_content(),
        });
        for content in &result.content {
            if let ToolResultContent::Image { media_type, data } = content {
                parts.push(image(media_type, data));
            }
        }
    }
    for part in &message.parts {
        match part {
            Part::Text { text } if !text.is_empty() => parts.push(ContentPart::Text { text }),
            Part::Image { media_type, data } => parts.push(image(media_type, data)),
            _ => {}
        }
    }
    if parts.is_empty() {
        return;
    }
    let has_images = parts
        .iter()
        .any(|p| matches!(p, ContentPart::ImageUrl { .. }));
    let content = if has_images {
        UserContent::Parts(parts)
    } else {
        let texts: Vec<&str> = parts
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text { text } => Some(*text),
                ContentPart::ImageUrl { .. } => None,
            })
            .collect();
        UserContent::Text(texts.join("\n\n"))
    };
    out.push(ChatMessage::User { content });
}

fn assistant(message: &Message) -> Option<ChatMessage<'_>> {
    let text = message.text();
    let tool_calls: Vec<WireToolCall<'_>> = message.tool_calls().map(tool_call).collect();
    if text.is_empty() && tool_calls.is_empty() {
        return None;
    }
    Some(ChatMessage::Assistant {
        content: (!text.is_empty()).then_some(text),
        tool_calls,
    })
}

fn tool_call(call: &ToolCall) -> WireToolCall<'_> {
    WireToolCall {
        id: &call.id,
        kind: "function",
        function: WireFunctionCall {
            name: &call.name,
            arguments: &call.arguments,
        },
        extra_content: call.signature.as_deref().map(|signature| ExtraContent {
            google: GoogleExtra {
                thought_signature: signature,
            },
        }),
    }
}

fn image<'a>(media_type: &str, data: &str) -> ContentPart<'a> {
    ContentPart::ImageUrl {
        image_url: ImageUrl {
            url: format!("data:{media_type};base64,{data}"),
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

    #[test]
    fn body_maps_every_part() {
        let mut failed = ToolResult::text("c2", "write", "permission denied", Outcome::Error);
        failed.content.push(ToolResultContent::Image {
            media_type: "image/png".into(),
            data: "iVBOR".into(),
        });
        let messages = vec![
            Arc::new(Message::new(
                "u1",
                Role::User,
                vec![Part::text("first"), Part::text("second")],
            )),
            Arc::new(Message::new(
                "a1",
                Role::Assistant,
                vec![
                    Part::Reasoning {
                        text: "hidden".into(),
                        signature: Some("sig".into()),
                        redacted: false,
                    },
                    Part::text("Reading both."),
                    Part::ToolCall(ToolCall::new("c1", "read", r#"{"file_path": "a.rs"}"#)),
                    Part::ToolCall(ToolCall::new("c2", "write", "{not json")),
                ],
            )),
            Arc::new(Message::new(
                "u2",
                Role::User,
                vec![
                    Part::ToolResult(ToolResult::text(
                        "c1",
                        "read",
                        "fn main() {}",
                        Outcome::Success,
                    )),
                    Part::ToolResult(failed),
                    Part::text("look"),
                    Part::Image {
                        media_type: "image/jpeg".into(),
                        data: "/9j/".into(),
                    },
                ],
            )),
            Arc::new(Message::new(
                "a2",
                Role::Assistant,
                vec![Part::ToolCall(ToolCall::new("c3", "ls", ""))],
            )),
            Arc::new(Message::new(
                "a3",
                Role::Assistant,
                vec![Part::Reasoning {
                    text: "only thoughts".into(),
                    signature: None,
                    redacted: false,
                }],
            )),
        ];
        let tools = [ToolSpec {
            name: "read".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object"}),
        }];
        let request = ModelRequest {
            model: "gpt-x",
            system: "You are gyre.",
            messages: &messages,
            tools: &tools,
            tool_choice: ToolChoice::Auto,
            max_output_tokens: 4096,
            cache_key: None,
            cache_points: &[],
            sampling: &Sampling::NONE,
        };
        let actual = serde_json::to_value(body(&request, None)).unwrap();
        let expected = json!({
            "model": "gpt-x",
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_completion_tokens": 4096,
            "messages": [
                {"role": "system", "content": "You are gyre."},
                {"role": "user", "content": "first\n\nsecond"},
                {"role": "assistant", "content": "Reading both.", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"file_path\": \"a.rs\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "write", "arguments": "{not json"}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "fn main() {}"},
                {"role": "tool", "tool_call_id": "c2", "content": "permission denied"},
                {"role": "user", "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}}
                ]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c3", "type": "function", "function": {"name": "ls", "arguments": ""}}
                ]}
            ],
            "tools": [
                {"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": {"type": "object", "properties": {}}}}
            ],
            "tool_choice": "auto"
        });
        assert_eq!(actual, expected);
    }

    #[test]
    fn no_system_no_tools() {
        let messages = vec![Arc::new(Message::user_text("u", "hi"))];
        let request = ModelRequest {
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
            tool_choice: ToolChoice::None,
            max_output_tokens: 10,
            cache_key: None,
            cache_points: &[],
            sampling: &Sampling::NONE,
        };
        assert_eq!(
            serde_json::to_string(&body(&request, None)).unwrap(),
            r#"{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":10,"messages":[{"role":"user","content":"hi"}]}"#
        );
    }

    #[test]
    fn the_prompt_cache_key_comes_right_after_the_model() {
        let messages = vec![Arc::new(Message::user_text("u", "hi"))];
        let request = ModelRequest {
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
            tool_choice: ToolChoice::None,
            max_output_tokens: 10,
            cache_key: Some("session-1"),
            cache_points: &[],
            sampling: &Sampling::NONE,
        };
        assert!(
            serde_json::to_string(&body(&request, Some("session-1")))
                .unwrap()
                .starts_with(r#"{"model":"m","prompt_cache_key":"session-1","stream":true,"#)
        );
    }

    #[test]
    fn a_thought_signature_goes_back_exactly_as_received() {
        let mut signed = ToolCall::new("function-call-1", "ls", r#"{"path":"src"}"#);
        signed.signature = Some("CsYCAdHtim+q3Zl0p5Y2f8sA==".into());
        let messages = vec![
            Arc::new(Message::user_text("u", "list")),
            Arc::new(Message::new(
                "a",
                Role::Assistant,
                vec![
                    Part::ToolCall(signed),
                    Part::ToolCall(ToolCall::new("c2", "ls", "{}")),
                ],
            )),
        ];
        let request = ModelRequest {
            model: "gemini-3-pro-preview",
            system: "",
            messages: &messages,
            tools: &[],
            tool_choice: ToolChoice::None,
            max_output_tokens: 10,
            cache_key: None,
            cache_points: &[],
            sampling: &Sampling::NONE,
        };
        let actual = serde_json::to_value(body(&request, None)).unwrap();
        assert_eq!(
            actual["messages"][1]["tool_calls"],
            json!([
                {"id": "function-call-1", "type": "function",
                 "function": {"name": "ls", "arguments": "{\"path\":\"src\"}"},
                 "extra_content": {"google": {"thought_signature": "CsYCAdHtim+q3Zl0p5Y2f8sA=="}}},
                {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ])
        );
    }
}
