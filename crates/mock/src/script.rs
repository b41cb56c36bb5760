//! The script format (Rust types; the same shape in JSON for `--script FILE`).
//!
//! ```json
//! {"steps": [
//!   {"when": {"turn": 0}, "reply": {"items": [
//!     {"text": "Let me look."},
//!     {"tool_call": {"name": "read", "arguments": {"file_path": "a.txt"}}}
//!   ]}},
//!   {"when": {"turn": 0}, "times": 1, "reply": {"status": 429, "headers": {"retry-after": "1"}}},
//!   {"reply": {"items": [{"text": "done"}]}}
//! ]}
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A whole script: the first matching, unexhausted step answers a request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Script {
    pub steps: Vec<Step>,
}

impl Script {
    /// A linear conversation: the i-th reply answers turn i.
    pub fn linear(turns: Vec<Vec<Item>>) -> Self {
        Self {
            steps: turns
                .into_iter()
                .enumerate()
                .map(|(i, items)| Step::on_turn(i as u32, items))
                .collect(),
        }
    }
}

/// One scripted answer and the requests it answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Which requests this step answers; absent: any request.
    #[serde(default)]
    pub when: When,
    /// How many times this step may answer; absent: without limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
    pub reply: Reply,
}

impl Step {
    pub fn on_turn(turn: u32, items: Vec<Item>) -> Self {
        Self {
            when: When {
                turn: Some(turn),
                ..When::default()
            },
            times: None,
            reply: Reply::Stream(StreamReply {
                items,
                ..StreamReply::default()
            }),
        }
    }
}

/// Conditions on a request; all given ones must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct When {
    /// The number of assistant messages in the request's history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// The number of tool results in the request's history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_results: Option<u32>,
    /// A substring of the last message's text (or tool result content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_message_contains: Option<String>,
    /// A substring anywhere in the raw request body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_contains: Option<String>,
}

/// How a step answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Reply {
    /// An HTTP error status with headers and body.
    Http(HttpReply),
    /// A streamed (or, for non-streaming requests, whole) model answer.
    Stream(StreamReply),
}

impl Default for Reply {
    fn default() -> Self {
        Reply::Stream(StreamReply::default())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HttpReply {
    pub status: u16,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body; absent: the provider's usual error JSON for that status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamReply {
    pub items: Vec<Item>,
    /// Wait before the response headers are sent.
    #[serde(default)]
    pub delay_first_ms: u64,
    /// Wait between SSE events.
    #[serde(default)]
    pub delay_between_ms: u64,
    /// Cut the connection after this many SSE events, in the middle of the
    /// next one (a broken stream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_after_events: Option<usize>,
    /// Keep the connection open (sending nothing) after the last event for this
    /// long before closing, or forever when `u64::MAX` (a stall).
    #[serde(default)]
    pub hold_open_ms: u64,
}

/// One piece of a scripted answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Item {
    /// Text, streamed in deltas of at most 16 characters.
    Text(String),
    Reasoning {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    ToolCall {
        /// Absent: the server makes one (`call_<turn>_<index>`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        name: String,
        /// A JSON value is sent as its JSON text; a string is sent as is
        /// (so invalid JSON can be scripted).
        arguments: serde_json::Value,
        /// How many deltas the argument text is split into (default 3).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fragments: Option<usize>,
    },
    /// Reported usage; absent: computed from the request and answer sizes.
    Usage {
        input_tokens: u64,
        output_tokens: u64,
        #[serde(default)]
        cache_read_tokens: u64,
        #[serde(default)]
        cache_write_tokens: u64,
    },
    /// The stop reason in the provider's own words (`end_turn`, `tool_use`,
    /// `max_tokens`, `stop`, `length`, …); absent: `tool_use`/`tool_calls` when
    /// the answer has tool calls, otherwise `end_turn`/`stop`.
    Stop(String),
}
