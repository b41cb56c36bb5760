//! The conversation: messages made of parts.
//!
//! Invariants:
//! - A [`Message`] is either from the user (prompts and tool results) or from the
//!   assistant (text, reasoning and tool calls). System prompt layers are not
//!   messages; they travel beside the history in a request.
//! - Every [`ToolCall`] in an assistant message is answered by exactly one
//!   [`ToolResult`] with the same `call_id` in the user message that follows it.
//! - Tool-call arguments are kept exactly as the model produced them (`arguments`
//!   is the raw JSON text), so a request re-sent later is byte-identical and an
//!   argument string that is not valid JSON is still recorded faithfully.

use serde::{Deserialize, Serialize};

use crate::Origin;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Unique within a session; time-ordered (uuid v7) when gyre makes it.
    pub id: String,
    pub role: Role,
    pub parts: Vec<Part>,
    /// Who wrote it beyond its role (gyre's notices and summaries).
    #[serde(default, skip_serializing_if = "Origin::is_conversation")]
    pub origin: Origin,
}

impl Message {
    pub fn new(id: impl Into<String>, role: Role, parts: Vec<Part>) -> Self {
        Self {
            id: id.into(),
            role,
            parts,
            origin: Origin::Conversation,
        }
    }

    /// The same message marked as written by `origin`.
    pub fn with_origin(mut self, origin: Origin) -> Self {
        self.origin = origin;
        self
    }

    /// The compact boundary this message is, if it is a summary.
    pub fn compact_boundary(&self) -> Option<&crate::CompactBoundary> {
        match &self.origin {
            Origin::Summary(boundary) => Some(boundary),
            _ => None,
        }
    }

    /// A user message holding one text part.
    pub fn user_text(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(id, Role::User, vec![Part::text(text)])
    }

    /// The concatenated text parts (reasoning excluded).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            if let Part::Text { text } = part {
                out.push_str(text);
            }
        }
        out
    }

    /// The tool calls of this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.parts.iter().filter_map(|p| match p {
            Part::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// The tool results of this message, in order.
    pub fn tool_results(&self) -> impl Iterator<Item = &ToolResult> {
        self.parts.iter().filter_map(|p| match p {
            Part::ToolResult(result) => Some(result),
            _ => None,
        })
    }
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
    },
    /// Model reasoning. `signature` is the provider's opaque proof (Anthropic's
    /// thinking signature, an encrypted blob) and must be sent back unchanged.
    Reasoning {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// Reasoning the provider hid from us (Anthropic `redacted_thinking`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        redacted: bool,
    },
    ToolCall(ToolCall),
    ToolResult(ToolResult),
    Image {
        media_type: String,
        /// Base64-encoded bytes.
        data: String,
    },
}

impl Part {
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text { text: text.into() }
    }
}

/// The media type of an image format models take (PNG, JPEG, GIF, WebP),
/// by its magic bytes; `None` for anything else. Every frontend that turns
/// bytes into a [`Part::Image`] asks this (the `read` tool, `gyre run -i`,
/// ACP image prompts).
pub fn image_media_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// A request by the model to run a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The raw JSON text of the arguments, as the model produced it.
    pub arguments: String,
    /// The provider's opaque token attached to the call (Gemini's
    /// `thoughtSignature`), sent back unchanged with the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

impl ToolCall {
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            signature: None,
        }
    }

    /// The arguments parsed as a JSON value; `None` when they are not valid JSON.
    /// An empty argument string counts as `{}` (several APIs send nothing for a
    /// call without arguments).
    pub fn arguments_json(&self) -> Option<serde_json::Value> {
        if self.arguments.trim().is_empty() {
            return Some(serde_json::Value::Object(Default::default()));
        }
        serde_json::from_str(&self.arguments).ok()
    }
}

/// The answer to a [`ToolCall`], paired with it by `call_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    /// The tool's name, kept so that a result can be shown without its call.
    pub name: String,
    /// What the model sees.
    pub content: Vec<ToolResultContent>,
    /// True when the call was refused, failed, was denied or interrupted.
    pub is_error: bool,
    /// The tool's one-line account of what it did (`write a.txt (2
    /// lines)`), for people: stored so that a resumed history shows it as
    /// the live one did. Never sent to the model; empty when unknown (older
    /// sessions, results gyre made itself).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
}

impl ToolResult {
    pub fn text(
        call_id: impl Into<String>,
        name: impl Into<String>,
        text: impl Into<String>,
        outcome: Outcome,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            name: name.into(),
            content: vec![ToolResultContent::Text { text: text.into() }],
            is_error: outcome == Outcome::Error,
            title: String::new(),
        }
    }

    /// The text content joined, images left out.
    pub fn text_content(&self) -> String {
        let mut out = String::new();
        for c in &self.content {
            if let ToolResultContent::Text { text } = c {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }
}

/// Whether a tool result reports success or an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Error,
}

/// Content of a tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolResultContent {
    Text { text: String },
    Image { media_type: String, data: String },
}

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_round_trip_through_serde() {
        let msg = Message::new(
            "m1",
            Role::Assistant,
            vec![
                Part::Reasoning {
                    text: "think".into(),
                    signature: Some("sig".into()),
                    redacted: false,
                },
                Part::text("hello"),
                Part::ToolCall(ToolCall::new("c1", "read", r#"{"file_path":"a"}"#)),
            ],
        );
        let json = serde_json::to_string(&msg).unwrap();
        let back: Message = serde_json::from_str(&json).unwrap();
        assert_eq!(back, msg);
        assert!(json.contains(r#""type":"tool_call""#));
    }

    #[test]
    fn empty_arguments_count_as_an_empty_object() {
        let call = ToolCall::new("c", "ls", "");
        assert_eq!(call.arguments_json(), Some(serde_json::json!({})));
        assert_eq!(ToolCall::new("c", "ls", "{oops").arguments_json(), None);
    }

    #[test]
    fn result_text_joins_text_parts() {
        let mut r = ToolResult::text("c", "bash", "a", Outcome::Error);
        r.content.push(ToolResultContent::Text { text: "b".into() });
        assert!(r.is_error);
        assert_eq!(r.text_content(), "a\nb");
    }
}
