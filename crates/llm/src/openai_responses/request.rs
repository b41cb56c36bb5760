//! The Responses API request body.
//!
//! Mapping rules and why:
//! - `store: false`: OpenAI keeps nothing, so the whole history is sent each
//!   time, as input items in history order.
//! - A user message's tool results become `function_call_output` items first,
//!   in order (they answer the calls just before them); its text and images
//!   follow as one `message` item. Images in tool results cannot travel in a
//!   `function_call_output` (text only here), so they join that message. A
//!   failed tool's output starts with `Error: ` (the API has no error flag).
//! - Assistant parts keep their order: text as a `message` item with
//!   `output_text`, tool calls as `function_call` items with their raw
//!   argument text, reasoning as `reasoning` items.
//! - Reasoning goes back only with its signature (the `encrypted_content` the
//!   API gave us): without it the API cannot use it (`store: false` keeps no
//!   ids). Redacted reasoning is another provider's and is dropped.
//! - Reasoning models (o-series, gpt-5 except its chat variants, codex,
//!   gpt-oss) get `reasoning: {summary: "auto"}` and
//!   `include: ["reasoning.encrypted_content"]`; other models reject both
//!   ("Encrypted content is not supported with this model"), so they get
//!   neither and no reasoning items. The test is by model name until the
//!   catalogue says which models reason.
//! - Tool schemas go through [`crate::tool_schema`] (OpenAI dialect); tools
//!   are not strict, so any valid schema is accepted.
//! - `tool_choice` and `parallel_tool_calls` only travel with tools (the API
//!   rejects them alone).
//! - `temperature` and `top_p` ([`crate::Sampling`]) are top-level fields,
//!   sent only when set and never to a reasoning model (they refuse them);
//!   `--effort` is `reasoning.effort` (reasoning models only), and
//!   web search (`[web_search]`) is the hosted `{"type": "web_search"}`
//!   tool after the function tools (`max_uses` has no counterpart);
//!   `--json-schema` is `text.format` (a `json_schema`, not strict);
//!   provider options are merged in last, as the body is serialised.

use std::borrow::Cow;

use gyre_protocol::{Message, Part, Role, ToolCall, ToolResult, ToolResultContent, ToolSpec};
use serde::Serialize;
use serde_json::Value;

use crate::tool_schema::{SchemaDialect, transform};
use crate::{ModelRequest, ToolChoice};

#[derive(Debug, Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    instructions: &'a str,
    input: Vec<Item<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<AnyTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Reasoning>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    max_output_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    stream: bool,
    store: bool,
}

#[derive(Debug, Serialize)]
struct Reasoning {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
    summary: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item<'a> {
    Message {
        role: &'static str,
        content: Vec<Content<'a>>,
    },
    Reasoning {
        summary: Vec<Summary<'a>>,
        encrypted_content: &'a str,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: Cow<'a, str>,
    },
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content<'a> {
    InputText { text: &'a str },
    InputImage { image_url: String },
    OutputText { text: &'a str },
}

#[derive(Debug, Serialize)]
struct Summary<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: Value,
    strict: bool,
}

/// A function tool, or the hosted web search (`{"type": "web_search"}`),
/// which the API runs itself.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum AnyTool<'a> {
    Function(WireTool<'a>),
    Hosted {
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

pub(super) fn body<'a>(request: &ModelRequest<'a>) -> Body<'a> {
    let reasons = is_reasoning_model(request.model);
    let mut input = Vec::with_capacity(request.messages.len() * 2);
    for message in request.messages {
        match message.role {
            Role::User => user(message, &mut input),
            Role::Assistant => assistant(message, reasons, &mut input),
        }
    }
    let mut tools: Vec<AnyTool<'a>> = request
        .tools
        .iter()
        .map(|spec| AnyTool::Function(tool(spec)))
        .collect();
    if request.sampling.web_search.is_some() {
        tools.push(AnyTool::Hosted { kind: "web_search" });
    }
    let has_tools = !tools.is_empty();
    Body {
        model: request.model,
        instructions: request.system,
        input,
        tools,
        tool_choice: has_tools.then_some(match request.tool_choice {
            ToolChoice::Auto => "auto",
            ToolChoice::None => "none",
        }),
        parallel_tool_calls: has_tools.then_some(true),
        reasoning: reasons.then_some(Reasoning {
            effort: request.sampling.effort.map(crate::Effort::openai),
            summary: "auto",
        }),
        include: if reasons {
            vec!["reasoning.encrypted_content"]
        } else {
            Vec::new()
        },
        max_output_tokens: request.max_output_tokens,
        // Reasoning models refuse sampling parameters.
        temperature: request.sampling.temperature.filter(|_| !reasons),
        top_p: request.sampling.top_p.filter(|_| !reasons),
        text: request.sampling.output_schema.as_ref().map(|schema| {
            serde_json::json!({"format": {"type": "json_schema", "name": "final_answer", "schema": schema, "strict": false}})
        }),
        prompt_cache_key: request.cache_key,
        stream: true,
        store: false,
    }
}

/// Whether `model` reasons (and so takes `reasoning` and encrypted content).
fn is_reasoning_model(model: &str) -> bool {
    crate::catalog::rejects_sampling(model)
}

fn tool(spec: &ToolSpec) -> WireTool<'_> {
    WireTool {
        kind: "function",
        name: &spec.name,
        description: &spec.description,
        parameters: transform(SchemaDialect::OpenAi, &spec.input_schema),
        strict: false,
    }
}

fn user<'a>(message: &'a Message, out: &mut Vec<Item<'a>>) {
    let mut content: Vec<Content<'a>> = Vec::new();
    for result in message.tool_results() {
        out.push(Item::FunctionCallOutput {
            call_id: &result.call_id,
            output: output(result),
        });
        for part in &result.content {
            if let ToolResultContent::Image { media_type, data } = part {
                content.push(image(media_type, data));
            }
        }
    }
    for part in &message.parts {
        match part {
            Part::Text { text } if !text.is_empty() => content.push(Content::InputText { text }),
            Part::Image { media_type, data } => content.push(image(media_type, data)),
            _ => {}
        }
    }
    if !content.is_empty() {
        out.push(Item::Message {
            role: "user",
            content,
        });
    }
}

fn output(result: &ToolResult) -> Cow<'_, str> {
    let text: Cow<'_, str> = match result.content.as_slice() {
        [ToolResultContent::Text { text }] => Cow::Borrowed(text),
        _ => Cow::Owned(result.text_content()),
    };
    if result.is_error {
        Cow::Owned(format!("Error: {text}"))
    } else {
        text
    }
}

fn assistant<'a>(message: &'a Message, reasons: bool, out: &mut Vec<Item<'a>>) {
    for part in &message.parts {
        match part {
            Part::Text { text } if !text.is_empty() => out.push(Item::Message {
                role: "assistant",
                content: vec![Content::OutputText { text }],
            }),
            Part::Reasoning {
                text,
                signature: Some(signature),
                redacted: false,
            } if reasons => out.push(Item::Reasoning {
                summary: if text.is_empty() {
                    Vec::new()
                } else {
                    vec![Summary {
                        kind: "summary_text",
                        text,
                    }]
                },
                encrypted_content: signature,
            }),
            Part::ToolCall(call) => out.push(function_call(call)),
            _ => {}
        }
    }
}

fn function_call(call: &ToolCall) -> Item<'_> {
    Item::FunctionCall {
        call_id: &call.id,
        name: &call.name,
        arguments: &call.arguments,
    }
}

fn image<'a>(media_type: &str, data: &str) -> Content<'a> {
    Content::InputImage {
        image_url: format!("data:{media_type};base64,{data}"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use gyre_protocol::Outcome;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::Sampling;

    fn history() -> Vec<Arc<Message>> {
        let mut failed = ToolResult::text("call_2", "write", "permission denied", Outcome::Error);
        failed.content.push(ToolResultContent::Image {
            media_type: "image/png".into(),
            data: "iVBOR".into(),
        });
        vec![
            Arc::new(Message::new(
                "u1",
                Role::User,
                vec![
                    Part::text("look"),
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
                        text: "Read both.".into(),
                        signature: Some("gAAAAenc".into()),
                        redacted: false,
                    },
                    Part::Reasoning {
                        text: "no signature".into(),
                        signature: None,
                        redacted: false,
                    },
                    Part::Reasoning {
                        text: String::new(),
                        signature: Some("anthropic-opaque".into()),
                        redacted: true,
                    },
                    Part::text(""),
                    Part::text("Reading."),
                    Part::ToolCall(ToolCall::new("call_1", "read", r#"{"file_path": "a.rs"}"#)),
                    Part::ToolCall(ToolCall::new("call_2", "write", "{not json")),
                ],
            )),
            Arc::new(Message::new(
                "u2",
                Role::User,
                vec![
                    Part::ToolResult(ToolResult::text(
                        "call_1",
                        "read",
                        "fn main() {}",
                        Outcome::Success,
                    )),
                    Part::ToolResult(failed),
                    Part::text("and hurry"),
                ],
            )),
        ]
    }

    fn request<'a>(
        model: &'a str,
        messages: &'a [Arc<Message>],
        tools: &'a [ToolSpec],
    ) -> ModelRequest<'a> {
        ModelRequest {
            model,
            system: "You are gyre.",
            messages,
            tools,
            tool_choice: ToolChoice::Auto,
            max_output_tokens: 4096,
            cache_key: Some("session-1"),
            cache_points: &[],
            sampling: &Sampling::NONE,
        }
    }

    #[test]
    fn body_maps_every_part() {
        let messages = history();
        let tools = [ToolSpec {
            name: "read".into(),
            description: "Read a file".into(),
            input_schema: json!({"$schema": "x", "type": "object", "properties": {"paths": {"type": "array"}}}),
        }];
        let actual =
            serde_json::to_value(body(&request("gpt-5-codex", &messages, &tools))).unwrap();
        let expected = json!({
            "model": "gpt-5-codex",
            "instructions": "You are gyre.",
            "input": [
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "look"},
                    {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/"}
                ]},
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Read both."}], "encrypted_content": "gAAAAenc"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]},
                {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"file_path\": \"a.rs\"}"},
                {"type": "function_call", "call_id": "call_2", "name": "write", "arguments": "{not json"},
                {"type": "function_call_output", "call_id": "call_1", "output": "fn main() {}"},
                {"type": "function_call_output", "call_id": "call_2", "output": "Error: permission denied"},
                {"type": "message", "role": "user", "content": [
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBOR"},
                    {"type": "input_text", "text": "and hurry"}
                ]}
            ],
            "tools": [{"type": "function", "name": "read", "description": "Read a file", "strict": false,
                "parameters": {"type": "object", "properties": {"paths": {"type": "array", "items": {}}}}}],
            "tool_choice": "auto",
            "parallel_tool_calls": true,
            "reasoning": {"summary": "auto"},
            "include": ["reasoning.encrypted_content"],
            "max_output_tokens": 4096,
            "prompt_cache_key": "session-1",
            "stream": true,
            "store": false
        });
        assert_eq!(actual, expected);
    }

    #[test]
    fn other_models_get_no_reasoning_and_no_tools_means_no_tool_fields() {
        let messages = history();
        let mut request = request("gpt-4.1", &messages, &[]);
        request.system = "";
        request.cache_key = None;
        let actual = serde_json::to_value(body(&request)).unwrap();
        assert!(actual.get("reasoning").is_none());
        assert!(actual.get("include").is_none());
        assert!(actual.get("instructions").is_none());
        assert!(actual.get("tool_choice").is_none());
        assert!(actual.get("parallel_tool_calls").is_none());
        assert!(actual.get("prompt_cache_key").is_none());
        let kinds: Vec<&str> = actual["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["type"].as_str().unwrap())
            .collect();
        assert!(!kinds.contains(&"reasoning"), "{kinds:?}");
    }

    #[test]
    fn reasoning_models_by_name() {
        for model in [
            "o3",
            "o4-mini",
            "gpt-5",
            "openai/gpt-5-mini",
            "gpt-5-codex",
            "codex-mini-latest",
            "gpt-oss-120b",
        ] {
            assert!(is_reasoning_model(model), "{model}");
        }
        for model in ["gpt-4.1", "gpt-4o-mini", "gpt-5-chat-latest", "llama3"] {
            assert!(!is_reasoning_model(model), "{model}");
        }
    }
}
