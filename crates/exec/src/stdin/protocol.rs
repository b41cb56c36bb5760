//! The messages of Claude Code's streaming input (`--input-format
//! stream-json`), as the Agent SDKs write and read them: decoding a line of
//! stdin, encoding the control lines gyre writes. No IO here.
//!
//! On stdin: `{"type":"user","message":{"role":"user","content":…}}` (a
//! prompt: a string or content blocks), `{"type":"control_request",
//! "request_id":…,"request":{"subtype":…}}` (the SDK asks gyre),
//! `{"type":"control_response","response":{"subtype":"success"|"error",
//! "request_id":…,…}}` (the SDK answers gyre's requests) and
//! `{"type":"control_cancel_request","request_id":…}`. Anything else is
//! ignored, as Claude Code ignores it (`keep_alive`, `update_environment_variables`).

use gyre_protocol::Part;
use serde_json::{Value, json};

/// One line of stdin, understood.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A prompt (its text blocks joined) and its images (Claude's
    /// `{"type": "image", "source": {"type": "base64", …}}` blocks).
    User { text: String, images: Vec<Part> },
    /// The SDK asks gyre something.
    Request { id: String, request: Request },
    /// The SDK answers gyre's request `id`: its response, or its error.
    Response {
        id: String,
        result: Result<Value, String>,
    },
    /// The SDK no longer wants the answer to its request `id`.
    Cancel { id: String },
    /// A line gyre has nothing to do with.
    Ignored,
}

/// A control request from the SDK.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// The first request: the SDK's hook matchers (`{"PreToolUse":
    /// [{"matcher", "hookCallbackIds"}]}`) and agents.
    Initialize {
        hooks: Option<Value>,
        agents: Option<Value>,
    },
    Interrupt,
    SetPermissionMode {
        mode: String,
    },
    /// `None`: back to the default model.
    SetModel {
        model: Option<String>,
    },
    McpStatus,
    /// A subtype gyre does not implement: answered with an error.
    Unsupported {
        subtype: String,
    },
}

/// Decodes one line of stdin; `Err` says why it is not a message.
pub fn decode(line: &str) -> Result<Incoming, String> {
    let value: Value =
        serde_json::from_str(line).map_err(|e| format!("not a JSON message: {e}"))?;
    let str_of = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(String::from);
    match value.get("type").and_then(Value::as_str) {
        Some("user") => {
            let content = value
                .get("message")
                .and_then(|m| m.get("content"))
                .ok_or("a user message without message.content")?;
            Ok(Incoming::User {
                text: content_text(content),
                images: content_images(content)?,
            })
        }
        Some("control_request") => {
            let id = str_of(&value, "request_id").ok_or("a control request without request_id")?;
            let body = value.get("request").cloned().unwrap_or(Value::Null);
            let subtype = str_of(&body, "subtype").unwrap_or_default();
            let request = match subtype.as_str() {
                "initialize" => Request::Initialize {
                    hooks: body.get("hooks").filter(|h| !h.is_null()).cloned(),
                    agents: body.get("agents").filter(|a| !a.is_null()).cloned(),
                },
                "interrupt" => Request::Interrupt,
                "set_permission_mode" => Request::SetPermissionMode {
                    mode: str_of(&body, "mode").unwrap_or_default(),
                },
                "set_model" => Request::SetModel {
                    model: str_of(&body, "model").filter(|m| m != "default"),
                },
                "mcp_status" => Request::McpStatus,
                _ => Request::Unsupported { subtype },
            };
            Ok(Incoming::Request { id, request })
        }
        Some("control_response") => {
            let response = value.get("response").cloned().unwrap_or(Value::Null);
            let id = str_of(&response, "request_id")
                .ok_or("a control response without response.request_id")?;
            let result = match str_of(&response, "subtype").as_deref() {
                Some("success") => Ok(response.get("response").cloned().unwrap_or(Value::Null)),
                _ => Err(str_of(&response, "error").unwrap_or_else(|| "unknown error".into())),
            };
            Ok(Incoming::Response { id, result })
        }
        Some("control_cancel_request") => Ok(Incoming::Cancel {
            id: str_of(&value, "request_id").unwrap_or_default(),
        }),
        _ => Ok(Incoming::Ignored),
    }
}

/// A prompt's text: a string, or the text of its `text` blocks.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The image blocks of a user message's content, as image parts; an
/// image that is not base64 PNG, JPEG, GIF or WebP refuses the line.
fn content_images(content: &Value) -> Result<Vec<Part>, String> {
    let Value::Array(blocks) = content else {
        return Ok(Vec::new());
    };
    let images = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("image"));
    let mut parts = Vec::new();
    for block in images {
        let source = &block["source"];
        let (Some("base64"), Some(media_type), Some(data)) = (
            source["type"].as_str(),
            source["media_type"].as_str(),
            source["data"].as_str(),
        ) else {
            return Err("an image block without a base64 source (type, media_type, data)".into());
        };
        if !["image/png", "image/jpeg", "image/gif", "image/webp"].contains(&media_type) {
            return Err(format!(
                "an image of type {media_type}: PNG, JPEG, GIF or WebP only"
            ));
        }
        parts.push(Part::Image {
            media_type: media_type.to_string(),
            data: data.to_string(),
        });
    }
    Ok(parts)
}

/// The success answer to the SDK's request `id`.
pub fn success(id: &str, response: Value) -> Value {
    json!({"type": "control_response", "response": {
        "subtype": "success", "request_id": id, "response": response}})
}

/// The error answer to the SDK's request `id`.
pub fn error(id: &str, message: &str) -> Value {
    json!({"type": "control_response", "response": {
        "subtype": "error", "request_id": id, "error": message}})
}

/// gyre's request `id` to the SDK.
pub fn request(id: &str, body: Value) -> Value {
    json!({"type": "control_request", "request_id": id, "request": body})
}

/// What a `can_use_tool` answer says.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolAnswer {
    Allow { updated_input: Option<Value> },
    Deny { message: String },
}

/// Reads the SDK's answer to `can_use_tool` (`behavior`, `updatedInput`,
/// `message`); anything unreadable is a refusal saying so.
pub fn tool_answer(response: &Value) -> ToolAnswer {
    match response.get("behavior").and_then(Value::as_str) {
        Some("allow") => ToolAnswer::Allow {
            updated_input: response
                .get("updatedInput")
                .filter(|v| v.is_object())
                .cloned(),
        },
        Some("deny") => ToolAnswer::Deny {
            message: response
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("denied by the SDK's can_use_tool")
                .to_string(),
        },
        _ => ToolAnswer::Deny {
            message: format!("the SDK's can_use_tool answered something unreadable: {response}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shapes as the Python SDK writes them (`_internal/query.py`,
    /// `client.py`).
    #[test]
    fn decodes_what_the_sdk_writes() {
        let init = r#"{"type":"control_request","request_id":"req_1_ab","request":{"subtype":"initialize","hooks":{"PreToolUse":[{"matcher":"Bash","hookCallbackIds":["hook_0"]}]}}}"#;
        let Ok(Incoming::Request {
            id,
            request: Request::Initialize { hooks, agents },
        }) = decode(init)
        else {
            panic!("{:?}", decode(init));
        };
        assert_eq!(id, "req_1_ab");
        assert_eq!(hooks.unwrap()["PreToolUse"][0]["matcher"], "Bash");
        assert!(agents.is_none());
        let null_hooks = r#"{"type":"control_request","request_id":"r","request":{"subtype":"initialize","hooks":null}}"#;
        assert!(matches!(
            decode(null_hooks),
            Ok(Incoming::Request {
                request: Request::Initialize { hooks: None, .. },
                ..
            })
        ));
        let user = r#"{"type":"user","message":{"role":"user","content":"hi"},"parent_tool_use_id":null,"session_id":"default"}"#;
        assert_eq!(
            decode(user),
            Ok(Incoming::User {
                text: "hi".into(),
                images: Vec::new()
            })
        );
        let blocks = r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}"#;
        assert_eq!(
            decode(blocks),
            Ok(Incoming::User {
                text: "a\nb".into(),
                images: Vec::new()
            })
        );
        let image = r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}}"#;
        assert_eq!(
            decode(image),
            Ok(Incoming::User {
                text: "what is this?".into(),
                images: vec![Part::Image {
                    media_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into()
                }]
            })
        );
        let url = r#"{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}}"#;
        assert!(decode(url).is_err());
        let answer = r#"{"type":"control_response","response":{"subtype":"success","request_id":"g1","response":{"behavior":"allow","updatedInput":{"command":"ls"}}}}"#;
        let Ok(Incoming::Response { id, result }) = decode(answer) else {
            panic!()
        };
        assert_eq!(id, "g1");
        assert_eq!(
            tool_answer(&result.unwrap()),
            ToolAnswer::Allow {
                updated_input: Some(json!({"command": "ls"}))
            }
        );
        let failed = r#"{"type":"control_response","response":{"subtype":"error","request_id":"g2","error":"boom"}}"#;
        assert_eq!(
            decode(failed),
            Ok(Incoming::Response {
                id: "g2".into(),
                result: Err("boom".into())
            })
        );
        let unknown =
            r#"{"type":"control_request","request_id":"r9","request":{"subtype":"rewind_files"}}"#;
        assert!(matches!(
            decode(unknown),
            Ok(Incoming::Request {
                request: Request::Unsupported { .. },
                ..
            })
        ));
        assert_eq!(decode(r#"{"type":"keep_alive"}"#), Ok(Incoming::Ignored));
        assert!(decode("{oops").is_err());
    }

    #[test]
    fn denials_carry_the_sdks_message() {
        assert_eq!(
            tool_answer(&json!({"behavior": "deny", "message": "not that"})),
            ToolAnswer::Deny {
                message: "not that".into()
            }
        );
        assert!(matches!(
            tool_answer(&json!({"nonsense": 1})),
            ToolAnswer::Deny { .. }
        ));
    }
}
