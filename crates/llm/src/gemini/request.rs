//! The `generateContent` request body.
//!
//! Mapping rules and why:
//! - Roles are `user` and `model`; the system prompt is `systemInstruction`.
//! - A user message's tool results come first, as `functionResponse` parts in
//!   call order (`{output: text}`, or `{error: text}` for a failed tool), all
//!   in that one user content, as Gemini wants the answers to one turn's calls
//!   together; images of tool results follow as `inlineData`, then the
//!   message's own text and images.
//! - Model parts keep their order. A tool call is a `functionCall` with its
//!   arguments parsed (`{}` when they are not a JSON object; parsing is
//!   deterministic, so the bytes stay the same) and its `signature` as
//!   `thoughtSignature`, exactly where Gemini put it — Gemini 3 rejects a
//!   history whose calls lost their signatures.
//! - Reasoning with text is a thought part (`thought: true`, with its
//!   signature if any). Reasoning with no text but a signature is how the
//!   decoder keeps a signature Gemini put on a text part (a `Part::Text` has
//!   no signature field): it goes back on the text part that follows it, or
//!   as an empty text part of its own when none follows. Redacted reasoning
//!   (another provider's) is dropped.
//! - Empty text is never sent, and a content left without parts is skipped
//!   (Gemini rejects both).
//! - Tools are one `functionDeclarations` list with schemas in Gemini's
//!   dialect ([`crate::tool_schema`]); `toolConfig` travels only with tools.
//!   Web search (`[web_search]`) is a second tool, `{"google_search": {}}`,
//!   on Gemini 3, and on Gemini 2.5 only in a request without function
//!   tools or a response schema (2.5 refuses the combination).
//! - `thinkingConfig.includeThoughts` asks for thought summaries, except for
//!   model families known not to think (Gemini 1.x and 2.0, Gemma), which
//!   reject it. The test is by name until the catalogue says which models
//!   think.
//! - `temperature` and `top_p` ([`crate::Sampling`]) go in `generationConfig`
//!   (`temperature`, `topP`), only when set; provider options are merged in
//!   last, as the body is serialised, so they can extend `generationConfig`.

use gyre_protocol::{Message, Part, Role, ToolCall, ToolResult, ToolResultContent, ToolSpec};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::tool_schema::{SchemaDialect, transform};
use crate::{ModelRequest, ToolChoice};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Body<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<Content<'a>>,
    contents: Vec<Content<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tools<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<ToolConfig>,
    generation_config: GenerationConfig,
}

#[derive(Debug, Serialize)]
struct Content<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    parts: Vec<WirePart<'a>>,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct WirePart<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    thought: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    inline_data: Option<Blob<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_call: Option<FunctionCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_response: Option<FunctionResponse<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought_signature: Option<&'a str>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Blob<'a> {
    mime_type: &'a str,
    data: &'a str,
}

#[derive(Debug, Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    args: Value,
}

#[derive(Debug, Serialize)]
struct FunctionResponse<'a> {
    name: &'a str,
    response: Value,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Tools<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    function_declarations: Vec<FunctionDeclaration<'a>>,
    /// Grounding with Google Search (`{"google_search": {}}`).
    #[serde(rename = "google_search", skip_serializing_if = "Option::is_none")]
    google_search: Option<Empty>,
}

/// An empty JSON object.
#[derive(Debug, Serialize)]
struct Empty {}

#[derive(Debug, Serialize)]
struct FunctionDeclaration<'a> {
    name: &'a str,
    description: &'a str,
    parameters: Value,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfig {
    function_calling_config: FunctionCallingConfig,
}

#[derive(Debug, Serialize)]
struct FunctionCallingConfig {
    mode: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig {
    max_output_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_config: Option<ThinkingConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_json_schema: Option<Value>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ThinkingConfig {
    include_thoughts: bool,
    /// `--effort` on Gemini 2.5.
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_budget: Option<u32>,
    /// `--effort` on Gemini 3 (which has levels, not budgets).
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_level: Option<&'static str>,
}

pub(super) fn body<'a>(request: &ModelRequest<'a>) -> Body<'a> {
    let system_instruction = (!request.system.is_empty()).then(|| Content {
        role: None,
        parts: vec![WirePart {
            text: Some(request.system),
            ..WirePart::default()
        }],
    });
    let contents = request
        .messages
        .iter()
        .filter_map(|m| match m.role {
            Role::User => user(m),
            Role::Assistant => model(m),
        })
        .collect();
    let declarations: Vec<FunctionDeclaration<'a>> =
        request.tools.iter().map(declaration).collect();
    let has_tools = !declarations.is_empty();
    let structured = !has_tools && request.sampling.output_schema.is_some();
    // Gemini 2.5 refuses Google Search beside function calling or a
    // response schema; Gemini 3 combines them.
    let search = request.sampling.web_search.is_some()
        && search_beside(request.model, has_tools || structured);
    let mut tools = Vec::new();
    if has_tools {
        tools.push(Tools {
            function_declarations: declarations,
            google_search: None,
        });
    }
    if search {
        tools.push(Tools {
            function_declarations: Vec::new(),
            google_search: Some(Empty {}),
        });
    }
    Body {
        system_instruction,
        contents,
        tools,
        tool_config: has_tools.then_some(ToolConfig {
            function_calling_config: FunctionCallingConfig {
                mode: match request.tool_choice {
                    ToolChoice::Auto => "AUTO",
                    ToolChoice::None => "NONE",
                },
            },
        }),
        generation_config: GenerationConfig {
            max_output_tokens: request.max_output_tokens,
            temperature: request.sampling.temperature,
            top_p: request.sampling.top_p,
            thinking_config: thinks(request.model).then(|| thinking(request)),
            // Native structured output only without tools: Gemini 2.5
            // refuses a response schema beside function calling (the loop
            // checks the answer either way).
            response_mime_type: structured.then_some("application/json"),
            response_json_schema: request
                .sampling
                .output_schema
                .as_ref()
                .filter(|_| structured)
                .map(|schema| Value::clone(schema)),
        },
    }
}

/// The thinking configuration: thoughts shown, and `--effort` as a
/// budget (2.5) or a level (3).
fn thinking(request: &ModelRequest<'_>) -> ThinkingConfig {
    let leveled = is_gemini_3(request.model);
    let effort = request.sampling.effort;
    ThinkingConfig {
        include_thoughts: true,
        thinking_budget: effort
            .filter(|_| !leveled)
            .map(crate::Effort::gemini_budget),
        thinking_level: effort.filter(|_| leveled).map(crate::Effort::gemini_level),
    }
}

/// Whether `model` is a Gemini 3 model (thinking levels; built-in tools
/// beside function calling).
/// Whether Google Search may go in a request for `model` beside function
/// tools or a response schema (`busy`): Gemini 3 combines them, 2.5 not.
pub(super) fn search_beside(model: &str, busy: bool) -> bool {
    is_gemini_3(model) || !busy
}

fn is_gemini_3(model: &str) -> bool {
    model
        .rsplit('/')
        .next()
        .is_some_and(|name| name.to_ascii_lowercase().starts_with("gemini-3"))
}

/// Whether `model` takes a thinking configuration.
fn thinks(model: &str) -> bool {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    !["gemini-1.", "gemini-2.0", "gemma"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

fn declaration(spec: &ToolSpec) -> FunctionDeclaration<'_> {
    FunctionDeclaration {
        name: &spec.name,
        description: &spec.description,
        parameters: transform(SchemaDialect::Gemini, &spec.input_schema),
    }
}

fn user(message: &Message) -> Option<Content<'_>> {
    let mut parts: Vec<WirePart<'_>> = message.tool_results().map(function_response).collect();
    for result in message.tool_results() {
        for content in &result.content {
            if let ToolResultContent::Image { media_type, data } = content {
                parts.push(image(media_type, data));
            }
        }
    }
    for part in &message.parts {
        match part {
            Part::Text { text } if !text.is_empty() => parts.push(text_part(text)),
            Part::Image { media_type, data } => parts.push(image(media_type, data)),
            _ => {}
        }
    }
    (!parts.is_empty()).then_some(Content {
        role: Some("user"),
        parts,
    })
}

fn model(message: &Message) -> Option<Content<'_>> {
    let mut parts: Vec<WirePart<'_>> = Vec::with_capacity(message.parts.len());
    // A signature waiting for the part it belongs to.
    let mut pending: Option<&str> = None;
    for part in &message.parts {
        match part {
            Part::Reasoning {
                text,
                signature: Some(signature),
                redacted: false,
            } if text.is_empty() => {
                flush(&mut pending, &mut parts);
                pending = Some(signature);
            }
            Part::Reasoning {
                text,
                signature,
                redacted: false,
            } if !text.is_empty() => {
                flush(&mut pending, &mut parts);
                parts.push(WirePart {
                    text: Some(text),
                    thought: true,
                    thought_signature: signature.as_deref(),
                    ..WirePart::default()
                });
            }
            Part::Text { text } if !text.is_empty() => parts.push(WirePart {
                thought_signature: pending.take(),
                ..text_part(text)
            }),
            Part::ToolCall(call) => {
                if call.signature.is_some() {
                    flush(&mut pending, &mut parts);
                }
                let signature = call.signature.as_deref().or(pending.take());
                parts.push(function_call(call, signature));
            }
            _ => {}
        }
    }
    flush(&mut pending, &mut parts);
    (!parts.is_empty()).then_some(Content {
        role: Some("model"),
        parts,
    })
}

/// A signature that found no part of its own goes back on an empty text part.
fn flush<'a>(pending: &mut Option<&'a str>, parts: &mut Vec<WirePart<'a>>) {
    if let Some(signature) = pending.take() {
        parts.push(WirePart {
            text: Some(""),
            thought_signature: Some(signature),
            ..WirePart::default()
        });
    }
}

fn text_part(text: &str) -> WirePart<'_> {
    WirePart {
        text: Some(text),
        ..WirePart::default()
    }
}

fn function_call<'a>(call: &'a ToolCall, signature: Option<&'a str>) -> WirePart<'a> {
    let args = match call.arguments_json() {
        Some(object @ Value::Object(_)) => object,
        _ => Value::Object(Map::new()),
    };
    WirePart {
        function_call: Some(FunctionCall {
            name: &call.name,
            args,
        }),
        thought_signature: signature,
        ..WirePart::default()
    }
}

fn function_response(result: &ToolResult) -> WirePart<'_> {
    let text = result.text_content();
    let response = if result.is_error {
        json!({ "error": text })
    } else {
        json!({ "output": text })
    };
    WirePart {
        function_response: Some(FunctionResponse {
            name: &result.name,
            response,
        }),
        ..WirePart::default()
    }
}

fn image<'a>(media_type: &'a str, data: &'a str) -> WirePart<'a> {
    WirePart {
        inline_data: Some(Blob {
            mime_type: media_type,
            data,
        }),
        ..WirePart::default()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use gyre_protocol::Outcome;
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::Sampling;

    fn signed_call(id: &str, name: &str, arguments: &str, signature: Option<&str>) -> Part {
        let mut call = ToolCall::new(id, name, arguments);
        call.signature = signature.map(str::to_owned);
        Part::ToolCall(call)
    }

    fn carrier(signature: &str) -> Part {
        Part::Reasoning {
            text: String::new(),
            signature: Some(signature.into()),
            redacted: false,
        }
    }

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
                        signature: None,
                        redacted: false,
                    },
                    Part::Reasoning {
                        text: String::new(),
                        signature: Some("anthropic".into()),
                        redacted: true,
                    },
                    Part::text(""),
                    Part::text("Reading."),
                    signed_call("c1", "read", r#"{"file_path":"a.rs"}"#, Some("sig-1")),
                    signed_call("c2", "write", "[1]", None),
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
            Arc::new(Message::new(
                "a2",
                Role::Assistant,
                vec![
                    carrier("sig-text"),
                    Part::text("Done."),
                    carrier("sig-tail"),
                ],
            )),
            Arc::new(Message::new("a3", Role::Assistant, vec![Part::text("")])),
        ];
        let tools = [ToolSpec {
            name: "read".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object", "properties": {"file_path": {"type": ["string", "null"]}}, "additionalProperties": false}),
        }];
        let request = ModelRequest {
            model: "gemini-2.5-pro",
            system: "You are gyre.",
            messages: &messages,
            tools: &tools,
            tool_choice: ToolChoice::Auto,
            max_output_tokens: 4096,
            cache_key: Some("ignored"),
            cache_points: &[],
            sampling: &Sampling::NONE,
        };
        let actual = serde_json::to_value(body(&request)).unwrap();
        let expected = json!({
            "systemInstruction": {"parts": [{"text": "You are gyre."}]},
            "contents": [
                {"role": "user", "parts": [
                    {"text": "look"},
                    {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/"}}
                ]},
                {"role": "model", "parts": [
                    {"text": "Read both.", "thought": true},
                    {"text": "Reading."},
                    {"functionCall": {"name": "read", "args": {"file_path": "a.rs"}}, "thoughtSignature": "sig-1"},
                    {"functionCall": {"name": "write", "args": {}}}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "read", "response": {"output": "fn main() {}"}}},
                    {"functionResponse": {"name": "write", "response": {"error": "permission denied"}}},
                    {"inlineData": {"mimeType": "image/png", "data": "iVBOR"}},
                    {"text": "and hurry"}
                ]},
                {"role": "model", "parts": [
                    {"text": "Done.", "thoughtSignature": "sig-text"},
                    {"text": "", "thoughtSignature": "sig-tail"}
                ]}
            ],
            "tools": [{"functionDeclarations": [{
                "name": "read",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"file_path": {"type": "string", "nullable": true}}}
            }]}],
            "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
            "generationConfig": {"maxOutputTokens": 4096, "thinkingConfig": {"includeThoughts": true}}
        });
        assert_eq!(actual, expected);
    }

    #[test]
    fn no_system_no_tools_and_no_thinking_for_older_models() {
        let messages = vec![Arc::new(Message::user_text("u", "hi"))];
        let request = ModelRequest {
            model: "gemini-2.0-flash",
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
            serde_json::to_string(&body(&request)).unwrap(),
            r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":10}}"#
        );
        assert!(thinks("gemini-3-pro-preview"));
        assert!(thinks("models/gemini-2.5-flash"));
        assert!(!thinks("gemma-3-27b-it"));
    }

    #[test]
    fn a_signature_carrier_before_a_call_without_one_goes_on_the_call() {
        let message = Message::new(
            "a",
            Role::Assistant,
            vec![
                carrier("s1"),
                carrier("s2"),
                signed_call("c", "ls", "", None),
            ],
        );
        let content = serde_json::to_value(model(&message)).unwrap();
        assert_eq!(
            content["parts"],
            json!([
                {"text": "", "thoughtSignature": "s1"},
                {"functionCall": {"name": "ls", "args": {}}, "thoughtSignature": "s2"}
            ])
        );
    }
}
