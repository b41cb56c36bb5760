//! An MCP server's tool as a gyre [`Tool`]: `mcp__SERVER__TOOL`, the
//! server's schema and description, called on the server's live
//! connection.
//!
//! Invariants:
//! - Names are what every provider accepts: `[A-Za-z0-9_-]`, at most
//!   [`MAX_NAME_LEN`] characters. Other characters become `_`; a name cut
//!   to fit (or that would clash with another tool of the server) ends in
//!   a short hash of the original, so names stay unique and stable from
//!   one start to the next.
//! - `readOnlyHint: true` makes a read-only tool (run concurrently, allowed
//!   by the read-only permission modes); any other tool is mutating. The
//!   hint is the server's word, as the MCP specification warns; a user who
//!   does not trust a server denies or asks for its tools by rule.
//! - Whatever the server does, the model gets a result: the tool's text
//!   (parts joined), its images (or a note when the model takes none), an
//!   error result for `isError`, a timeout, a crash or a failed restart.
//!   The loop cuts long outputs to its budget, as for every tool.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use gyre_protocol::{Outcome, ToolResultContent, ToolSpec};
use gyre_tools::{ImageSupport, Tool, ToolContext, ToolError, ToolKind, ToolOutput};
use serde_json::{Map, Value};

use crate::client::{CallResult, Content, McpError, ToolInfo};
use crate::server::Server;

/// The longest tool name providers accept (OpenAI, Anthropic: 64).
pub const MAX_NAME_LEN: usize = 64;

/// The longest description offered to the model; longer ones are cut (a
/// server's description is its own, and some are pages long).
pub const MAX_DESCRIPTION_BYTES: usize = 4096;

/// One tool of one server.
pub struct McpTool {
    spec: ToolSpec,
    /// The tool's name on its server.
    remote: String,
    kind: ToolKind,
    server: Arc<Server>,
}

impl McpTool {
    /// `info` of `server`, named `name` (see [`tool_names`]).
    pub(crate) fn new(server: Arc<Server>, name: String, info: &ToolInfo) -> Self {
        let description = match info.description.as_deref().map(str::trim) {
            Some(text) if !text.is_empty() => cut(text, MAX_DESCRIPTION_BYTES),
            _ => format!(
                "The `{}` tool of MCP server `{}`.",
                info.name,
                server.name()
            ),
        };
        let mut schema = info.input_schema.clone();
        // Providers want an object schema at the top, as MCP requires.
        if let Value::Object(map) = &mut schema {
            map.entry("type").or_insert_with(|| Value::from("object"));
        } else {
            schema = serde_json::json!({"type": "object"});
        }
        Self {
            spec: ToolSpec {
                name,
                description,
                input_schema: schema,
            },
            remote: info.name.clone(),
            kind: if info.read_only {
                ToolKind::ReadOnly
            } else {
                ToolKind::Mutating
            },
            server,
        }
    }

    async fn call(&self, arguments: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(ToolError::invalid(
                    &self.spec.name,
                    format!("arguments must be a JSON object, got {other}"),
                ));
            }
        };
        let call = self.server.call(&self.remote, arguments);
        let result = tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => {
                return Err(ToolError::Cancelled { output: String::new() });
            }
            result = call => result,
        };
        match result {
            Ok(result) => Ok(self.output(result, ctx.images)),
            Err(CallError::Unavailable(why)) => Err(ToolError::Failed(why)),
            Err(CallError::Call(error)) => Err(ToolError::Failed(self.explain(&error))),
        }
    }

    /// The sentence the model gets for a failed call.
    fn explain(&self, error: &McpError) -> String {
        match error {
            McpError::Closed { .. } => format!(
                "{error}; whether the call took effect is unknown. gyre starts the server again on the next call of one of its tools"
            ),
            McpError::Timeout { .. } => format!(
                "{error}; the call was abandoned (the server may still finish it). Try a smaller request, or raise the server's tool_timeout_sec"
            ),
            _ => error.to_string(),
        }
    }

    fn output(&self, result: CallResult, images: ImageSupport) -> ToolOutput {
        let mut texts: Vec<String> = Vec::new();
        let mut pictures = Vec::new();
        for part in result.content {
            match part {
                Content::Text(text) => texts.push(text),
                Content::Image { data, mime_type } if images == ImageSupport::Accepted => pictures
                    .push(ToolResultContent::Image {
                        media_type: mime_type,
                        data,
                    }),
                Content::Image { mime_type, .. } => texts.push(format!(
                    "[an image ({mime_type}) the current model cannot take was left out]"
                )),
                Content::Other(value) => texts.push(other_text(&value)),
            }
        }
        if texts.is_empty()
            && let Some(structured) = &result.structured
        {
            texts.push(structured.to_string());
        }
        let mut text = texts.join("\n");
        if text.trim().is_empty() && pictures.is_empty() {
            text = if result.is_error {
                "the tool reported an error without saying what".into()
            } else {
                "(no output)".into()
            };
        }
        let mut content = Vec::with_capacity(1 + pictures.len());
        if !text.is_empty() {
            content.push(ToolResultContent::Text { text });
        }
        content.extend(pictures);
        ToolOutput {
            content,
            title: format!(
                "{} {}{}",
                self.server.name(),
                self.remote,
                if result.is_error { " (error)" } else { "" }
            ),
            outcome: if result.is_error {
                Outcome::Error
            } else {
                Outcome::Success
            },
        }
    }
}

/// Why a call did not reach the tool, or failed on the way.
pub(crate) enum CallError {
    /// The server is down and could not be started again: the sentence.
    Unavailable(String),
    Call(McpError),
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self, _arguments: &Value) -> ToolKind {
        self.kind
    }

    fn run<'a>(
        &'a self,
        arguments: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        self.call(arguments, ctx).boxed()
    }
}

/// Content other than text and images (resources, links, audio), as text:
/// an embedded resource's text when it has one, else its JSON.
fn other_text(value: &Value) -> String {
    if let Some(text) = value
        .get("resource")
        .and_then(|r| r.get("text"))
        .and_then(Value::as_str)
    {
        return text.to_string();
    }
    value.to_string()
}

/// `text` cut to at most `max` bytes at a character boundary, marked.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let end = text.floor_char_boundary(max.saturating_sub(3));
    format!("{}…", &text[..end])
}

/// The gyre names of `tools` of `server`, in order: `mcp__SERVER__TOOL`,
/// made safe and unique (see the module docs).
pub fn tool_names<'a>(server: &str, tools: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for tool in tools {
        let full = format!("mcp__{}__{}", sanitise(server), sanitise(tool));
        let mut name = if full.len() <= MAX_NAME_LEN {
            full
        } else {
            hashed(&full, server, tool)
        };
        if names.contains(&name) {
            name = hashed(&name, server, tool);
        }
        names.push(name);
    }
    names
}

/// `[A-Za-z0-9_-]` kept, anything else `_`.
fn sanitise(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `name` cut to leave room for `_` and 8 hex digits of a hash of the
/// original server and tool names.
fn hashed(name: &str, server: &str, tool: &str) -> String {
    let suffix = format!("_{:08x}", fnv1a(&format!("{server}\u{0}{tool}")) as u32);
    let keep = MAX_NAME_LEN - suffix.len();
    let cut = &name[..name.len().min(keep)];
    format!("{cut}{suffix}")
}

/// FNV-1a: stable across builds and platforms (unlike std's hasher).
fn fnv1a(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn names_are_prefixed_safe_and_bounded() {
        let names = tool_names("everything", ["echo", "get-sum", "a.b c/d"]);
        assert_eq!(
            names,
            [
                "mcp__everything__echo",
                "mcp__everything__get-sum",
                "mcp__everything__a_b_c_d"
            ]
        );
        let long = "x".repeat(80);
        let names = tool_names("srv", [long.as_str(), &format!("{long}y")]);
        assert!(names.iter().all(|n| n.len() == MAX_NAME_LEN), "{names:?}");
        assert_ne!(names[0], names[1]);
        assert!(names[0].starts_with("mcp__srv__xxx"));
        // Stable: the same input gives the same names.
        assert_eq!(
            names,
            tool_names("srv", [long.as_str(), &format!("{long}y")])
        );
    }

    #[test]
    fn names_that_clash_once_made_safe_stay_apart() {
        let names = tool_names("s", ["a.b", "a_b"]);
        assert_eq!(names[0], "mcp__s__a_b");
        assert_ne!(names[1], names[0]);
        assert!(names[1].starts_with("mcp__s__a_b_"), "{names:?}");
        assert!(
            names[1]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }

    #[test]
    fn long_descriptions_are_cut_on_a_character() {
        let text = "é".repeat(3000);
        let cut = cut(&text, MAX_DESCRIPTION_BYTES);
        assert!(cut.len() <= MAX_DESCRIPTION_BYTES);
        assert!(cut.ends_with('…'));
        assert_eq!(
            other_text(
                &serde_json::json!({"type": "resource", "resource": {"uri": "x", "text": "hi"}})
            ),
            "hi"
        );
    }
}
