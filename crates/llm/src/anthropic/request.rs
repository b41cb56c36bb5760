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
//!   not). More on [`ModelRequest::cache_points`] (where the step just taken
//!   and the next planned one change the prompt, so each step reads
//!   everything before its change) and on the message the previous request
//!   ended with when a turn added more blocks than the API looks back
//!   (`lookback`); the API's limit is four, and the tools give theirs up
//!   first (the system prompt's entry holds them). The API caches tools,
//!   then system, then messages, so each request reads the prefix the
//!   previous one wrote. Between compactions a body is the previous one
//!   plus appended messages, byte for byte, except that breakpoints move:
//!   the markers are the only thing that differs, and each is appended
//!   after its block's own fields.
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

/// The most `cache_control` breakpoints the API accepts in one request.
const MAX_BREAKPOINTS: usize = 4;

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
    let mut tools: Vec<AnyTool<'a>> = search
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
    let mut messages: Vec<WireMessage<'a>> = Vec::with_capacity(request.messages.len());
    // Each cache point as an index into what is sent (empty messages are
    // skipped): the last sent message at or before it.
    let mut points = Vec::with_capacity(request.cache_points.len());
    for (index, m) in request.messages.iter().enumerate() {
        messages.extend(message(m));
        if request.cache_points.contains(&index) {
            points.extend(messages.len().checked_sub(1));
        }
    }
    let blocks: Vec<usize> = messages.iter().map(|m| m.content.len()).collect();
    let newest = messages.len().checked_sub(1);
    // Four breakpoints at most, in this order of use: the newest message,
    // the system prompt (whose entry holds the tools), the cache points,
    // the previous request's end when a turn outgrew the lookback, and the
    // tools last.
    let mut budget =
        MAX_BREAKPOINTS - usize::from(newest.is_some()) - usize::from(!system.is_empty());
    let mut extra: Vec<usize> = Vec::new();
    for index in points
        .into_iter()
        .chain(super::lookback::earlier_breakpoint(&blocks))
    {
        if budget > 0 && Some(index) < newest && !extra.contains(&index) {
            extra.push(index);
            budget -= 1;
        }
    }
    for &index in &extra {
        mark_last_cacheable(&mut messages[index].content);
    }
    if let Some(newest) = messages.last_mut() {
        mark_last_cacheable(&mut newest.content);
    }
    if budget == 0 {
        for tool in &mut tools {
            if let AnyTool::Function(f) = tool {
                f.cache_control = None;
            }
        }
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
mod tests;
