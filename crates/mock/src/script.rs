//! The script format (Rust types; the same shape in JSON for `--script FILE`).
//!
//! ```json
//! {"context_window": 200000,
//!  "steps": [
//!   {"when": {"turn": 0}, "times": 1, "reply": {"status": 429, "headers": {"retry-after": "1"}}},
//!   {"when": {"turn": 0}, "times": 1, "reply": {"items": [{"text": "Let me"}],
//!     "stall": {"after": {"events": 1}, "ms": 500}, "end": {"reset_after": {"events": 2}}}},
//!   {"when": {"turn": 0, "api": "gemini"}, "times": 1,
//!     "reply": {"raw": "data: {oops\n\n", "chunking": {"every": 3}}},
//!   {"when": {"turn": 0}, "reply": {"items": [
//!     {"text": "Let me look."},
//!     {"tool_call": {"name": "read", "arguments": {"file_path": "a.txt"}}}
//!   ]}},
//!   {"reply": {"items": [{"text": "done"}]}}
//! ]}
//! ```
//!
//! A reply with `status` is an HTTP reply (its body sent verbatim, in chunks by
//! its `chunking`), one with `items` a model answer, and one with `raw` the
//! shorthand for a raw 200 event stream ([`RawReply`]). Both kinds can carry
//! faults (`stall_before_headers_ms`, `stall`, `end`, `hold_open_ms`; see
//! [`At`], [`Stall`], [`End`]). Unknown fields are errors, so a misspelt
//! condition cannot silently match every request.
//!
//! `context_window` (tokens; absent: no limit) makes the server refuse a
//! request whose token count ([`crate::RecordedRequest::input_tokens`], the
//! body's bytes / 4) exceeds it with HTTP 400 and the provider's real
//! context-overflow error, before any step is chosen: the request is
//! recorded but uses up no step.
//!
//! A tool call's argument value `"$after:PREFIX"` takes the id that
//! follows the last `PREFIX` in the request's body (see `capture`), so a
//! script can resume a subagent whose task id the agent made up.
//!
//! Backwards compatibility: `delay_first_ms` is still read as
//! `stall_before_headers_ms`, and `cut_after_events` still cuts in the middle
//! of the next event.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};

#[cfg(doc)]
use crate::faults::At;
use crate::faults::{End, Faults, Stall, Wait};
use crate::raw::{Chunking, RawReply, is_zero};
use crate::server::Api;

/// A whole script: the first matching, unexhausted step answers a request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The model's context window in tokens: a request counting more is
    /// refused with the provider's overflow error. Absent: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    pub steps: Vec<Step>,
}

impl Script {
    /// The given steps, without a context window.
    pub fn new(steps: Vec<Step>) -> Self {
        Self {
            context_window: None,
            steps,
        }
    }

    /// The same script with a context window of `tokens`.
    #[must_use]
    pub fn with_context_window(self, tokens: u64) -> Self {
        Self {
            context_window: Some(tokens),
            ..self
        }
    }

    /// A linear conversation: the i-th reply answers turn i.
    pub fn linear(turns: Vec<Vec<Item>>) -> Self {
        Self::new(
            turns
                .into_iter()
                .enumerate()
                .map(|(i, items)| Step::on_turn(i as u32, items))
                .collect(),
        )
    }

    /// Parses a script from its JSON form. Unknown fields are errors, so a typo
    /// in a script fails loudly instead of silently matching everything.
    pub fn from_json_str(json: &str) -> Result<Self, ScriptError> {
        serde_json::from_str(json).map_err(|source| ScriptError::Parse { path: None, source })
    }

    /// Reads and parses a script file (see [`Script::from_json_str`]).
    pub async fn from_file(path: impl AsRef<Path>) -> Result<Self, ScriptError> {
        let path = path.as_ref();
        let text = tokio::fs::read_to_string(path)
            .await
            .map_err(|source| ScriptError::Read {
                path: path.to_path_buf(),
                source,
            })?;
        serde_json::from_str(&text).map_err(|source| ScriptError::Parse {
            path: Some(path.to_path_buf()),
            source,
        })
    }
}

/// Why a script could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read mock script {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The serde error names the line and column.
    #[error("invalid mock script{}: {source}", path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Parse {
        path: Option<PathBuf>,
        source: serde_json::Error,
    },
}

impl ScriptError {
    /// The 1-based line and column of a parse error.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            ScriptError::Parse { source, .. } => Some((source.line(), source.column())),
            ScriptError::Read { .. } => None,
        }
    }
}

/// One scripted answer and the requests it answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
pub struct When {
    /// The endpoint's wire API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<Api>,
    /// The number of earlier model answers in the request's history (assistant
    /// messages; runs of model output items in Responses; `model` contents in
    /// Gemini).
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

/// How a step answers. In JSON a reply with `status` is an HTTP reply, one
/// with `items` a model answer, and one with `raw` a [`RawReply`] (made into
/// an HTTP reply).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Reply {
    /// A status with headers and a verbatim body: an error, or a raw replay.
    Http(HttpReply),
    /// A streamed (or, for non-streaming requests, whole) model answer.
    Stream(StreamReply),
}

impl<'de> Deserialize<'de> for Reply {
    // By hand rather than `untagged`, whose only error is "did not match any
    // variant": a script author needs to hear which field is wrong.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = serde_json::Value::deserialize(deserializer)?;
        let Some(object) = value.as_object() else {
            return Err(D::Error::custom("a reply must be a JSON object"));
        };
        if object.contains_key("raw") {
            RawReply::deserialize(value)
                .map(Reply::from)
                .map_err(|e| D::Error::custom(format!("in a raw reply (`raw`): {e}")))
        } else if object.contains_key("status") {
            HttpReply::deserialize(value)
                .map(Reply::Http)
                .map_err(|e| D::Error::custom(format!("in an HTTP reply (`status`): {e}")))
        } else if object.contains_key("items") {
            StreamReply::deserialize(value)
                .map(Reply::Stream)
                .map_err(|e| D::Error::custom(format!("in a model answer (`items`): {e}")))
        } else {
            Err(D::Error::custom(
                "a reply needs `items` (a model answer), `status` (an HTTP error) or `raw` (raw bytes)",
            ))
        }
    }
}

impl Default for Reply {
    fn default() -> Self {
        Reply::Stream(StreamReply::default())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpReply {
    pub status: u16,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body, sent as is; absent: the provider's usual error JSON for that
    /// status. Without a scripted `content-type` it is `application/json`
    /// when it parses as JSON, otherwise `text/plain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// How the body is split into chunks (raw replay).
    #[serde(default, skip_serializing_if = "Chunking::is_whole")]
    pub chunking: Chunking,
    /// Wait between chunks.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_between_ms: u64,
    /// Wait before the response headers are sent; `u64::MAX`: until the client
    /// gives up or the server stops.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stall_before_headers_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<Stall>,
    #[serde(default, skip_serializing_if = "End::is_clean")]
    pub end: End,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hold_open_ms: u64,
}

impl HttpReply {
    pub(crate) fn faults(&self) -> Faults {
        Faults {
            stall_before_headers: Wait::from_millis(self.stall_before_headers_ms),
            delay_between: std::time::Duration::from_millis(self.delay_between_ms),
            stall: self.stall,
            end: self.end,
            cut_after_events: None,
            hold_open: Wait::from_millis(self.hold_open_ms),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamReply {
    pub items: Vec<Item>,
    /// Wait before the response headers are sent; `u64::MAX`: until the client
    /// gives up or the server stops. (Formerly `delay_first_ms`, still read.)
    #[serde(default, alias = "delay_first_ms", skip_serializing_if = "is_zero")]
    pub stall_before_headers_ms: u64,
    /// Wait between SSE events.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_between_ms: u64,
    /// A pause in the middle of the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<Stall>,
    /// A truncated or reset stream; absent: a clean end.
    #[serde(default, skip_serializing_if = "End::is_clean")]
    pub end: End,
    /// Cut the connection after this many SSE events, in the middle of the
    /// next one (a broken stream); used only when `end` is clean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_after_events: Option<usize>,
    /// Keep the connection open (sending nothing) after the last event for this
    /// long before closing, or forever when `u64::MAX` (a stall).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hold_open_ms: u64,
}

impl StreamReply {
    pub(crate) fn faults(&self) -> Faults {
        Faults {
            stall_before_headers: Wait::from_millis(self.stall_before_headers_ms),
            delay_between: std::time::Duration::from_millis(self.delay_between_ms),
            stall: self.stall,
            end: self.end,
            cut_after_events: self.cut_after_events,
            hold_open: Wait::from_millis(self.hold_open_ms),
        }
    }
}

/// One piece of a scripted answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Item {
    /// Text, streamed in deltas of at most 16 characters.
    Text(String),
    Reasoning {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    ToolCall {
        /// Absent: the server makes one (`toolu_<turn>_<k>` for Anthropic,
        /// `call_<turn>_<k>` for OpenAI; Gemini calls then carry no id).
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
    /// How many of the output tokens went to reasoning (OpenAI
    /// `reasoning_tokens`, Gemini `thoughtsTokenCount`); absent: the reasoning
    /// text's bytes / 4, at most the output tokens.
    ReasoningTokens(u64),
    /// The stop reason in the provider's own words (`end_turn`, `tool_use`,
    /// `max_tokens`, `stop`, `length`, `MAX_TOKENS`, …); absent:
    /// `tool_use`/`tool_calls` when the answer has tool calls, otherwise
    /// `end_turn`/`stop` (Responses: `completed`; Gemini: `STOP`). Responses and
    /// Gemini map gyre's words: `max_tokens` is an incomplete response /
    /// `MAX_TOKENS`, `refusal` `content_filter` / `SAFETY`, `error` a failed
    /// response / `MALFORMED_FUNCTION_CALL`.
    Stop(String),
    /// Sent as is as one frame of a streamed answer, at its place (a malformed
    /// event, a comment, an unknown event type); left out of whole answers.
    RawEvent(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON examples of the module docs parse (as scripts or replies).
    #[test]
    fn the_module_doc_examples_parse() {
        for source in [
            include_str!("script.rs"),
            include_str!("raw.rs"),
            include_str!("faults.rs"),
        ] {
            let docs: Vec<&str> = source
                .lines()
                .filter_map(|line| line.strip_prefix("//!"))
                .map(|line| line.strip_prefix(' ').unwrap_or(line))
                .collect();
            let start = docs
                .iter()
                .position(|l| *l == "```json")
                .expect("an example")
                + 1;
            let len = docs[start..]
                .iter()
                .position(|l| *l == "```")
                .expect("its end");
            let json = docs[start..start + len].join("\n");
            // A whole script (in script.rs) or one reply (the other modules).
            let parsed = if json.contains("\"steps\"") {
                Script::from_json_str(&json).map(|_| ())
            } else {
                serde_json::from_str::<Reply>(&json)
                    .map(|_| ())
                    .map_err(|source| ScriptError::Parse { path: None, source })
            };
            assert!(parsed.is_ok(), "{json}: {parsed:?}");
        }
    }

    #[test]
    fn the_documented_example_parses() {
        let json = r#"{"steps": [
          {"when": {"turn": 0}, "times": 1, "reply": {"status": 429, "headers": {"retry-after": "1"}}},
          {"when": {"turn": 0}, "reply": {"items": [
            {"text": "Let me look."},
            {"reasoning": {"text": "hmm", "signature": "s"}},
            {"tool_call": {"name": "read", "arguments": {"file_path": "a.txt"}, "fragments": 2}},
            {"usage": {"input_tokens": 3, "output_tokens": 4}},
            {"stop": "tool_use"}
          ], "delay_first_ms": 5, "hold_open_ms": 18446744073709551615}},
          {"when": {"api": "gemini"}, "reply": {"items": [{"raw_event": "data: {oops\n\n"}],
            "stall": {"after": {"events": 1}, "ms": 10}, "end": {"reset_after": {"bytes": 30}}}},
          {"reply": {"raw": "data: {}\n\n", "chunking": {"seeded": {"seed": 3, "max": 4}}}},
          {"reply": {"items": [{"text": "done"}]}}
        ]}"#;
        let script = Script::from_json_str(json).expect("parses");
        assert_eq!(script.steps.len(), 5);
        assert!(matches!(&script.steps[0].reply, Reply::Http(h) if h.status == 429));
        let Reply::Stream(reply) = &script.steps[1].reply else {
            panic!("a model answer");
        };
        assert_eq!(reply.items.len(), 5);
        assert_eq!(reply.hold_open_ms, u64::MAX);
        assert_eq!(reply.stall_before_headers_ms, 5);
        assert!(matches!(&script.steps[2].reply, Reply::Stream(s) if s.end != End::Clean));
        assert!(matches!(&script.steps[3].reply, Reply::Http(r) if r.status == 200));
        // The serde form round-trips.
        let again = serde_json::to_string(&script).expect("serialises");
        assert_eq!(Script::from_json_str(&again).expect("parses again"), script);
    }

    #[test]
    fn the_context_window_is_optional() {
        let script = Script::from_json_str(r#"{"steps": []}"#).expect("parses");
        assert_eq!(script.context_window, None);
        assert_eq!(
            serde_json::to_string(&script).expect("serialises"),
            r#"{"steps":[]}"#
        );
        let script = Script::from_json_str(r#"{"context_window": 128, "steps": []}"#)
            .expect("parses with a window");
        assert_eq!(script, Script::new(Vec::new()).with_context_window(128));
        let err = Script::from_json_str(r#"{"context_windw": 128, "steps": []}"#)
            .expect_err("misspelt field");
        assert!(err.to_string().contains("context_windw"), "{err}");
    }

    #[test]
    fn errors_name_the_problem_and_the_position() {
        let err = Script::from_json_str(
            "{\"steps\": [\n  {\"when\": {\"trun\": 1}, \"reply\": {\"items\": []}}\n]}",
        )
        .expect_err("misspelt field");
        let text = err.to_string();
        assert!(text.contains("trun"), "{text}");
        assert_eq!(err.position().map(|(line, _)| line), Some(2), "{text}");

        let err = Script::from_json_str(
            r#"{"steps": [{"reply": {"items": [{"tool_call": {"name": "x"}}]}}]}"#,
        )
        .expect_err("missing arguments");
        assert!(err.to_string().contains("arguments"), "{err}");

        let err = Script::from_json_str(r#"{"steps": [{"reply": {}}]}"#).expect_err("empty reply");
        assert!(err.to_string().contains("`items`"), "{err}");
    }

    #[tokio::test]
    async fn a_missing_file_names_its_path() {
        let err = Script::from_file("/nonexistent/mock-script.json")
            .await
            .expect_err("no such file");
        assert!(
            err.to_string().contains("/nonexistent/mock-script.json"),
            "{err}"
        );
    }
}
