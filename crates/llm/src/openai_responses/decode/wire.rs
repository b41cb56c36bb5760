//! The Responses API's stream as read: events, output items, texts,
//! usage and error objects, every field read leniently (a field of another
//! type than ours is absent to us, never an error), with the usage
//! normalised and a mid-stream error classified.

use gyre_protocol::Usage;
use serde::Deserialize;
use serde_json::Value;

use super::super::PROVIDER;
use crate::classify;
use crate::error::{ErrorKind, LlmError};

#[derive(Deserialize)]
pub(super) struct WireEvent {
    #[serde(rename = "type", default, deserialize_with = "lenient_string")]
    pub(super) kind: String,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) output_index: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) summary_index: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) content_index: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) delta: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) arguments: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) item: Option<WireItem>,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) response: Option<WireResponse>,
    // `error` events: the fields at the top, or (some servers) nested.
    #[serde(default, deserialize_with = "lenient")]
    pub(super) code: Option<Value>,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) message: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) error: Option<Value>,
}

#[derive(Deserialize, Default)]
pub(super) struct WireItem {
    #[serde(rename = "type", default, deserialize_with = "lenient_string")]
    pub(super) kind: String,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) call_id: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) name: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) arguments: Option<String>,
    #[serde(default, deserialize_with = "lenient_list")]
    pub(super) summary: Vec<WireText>,
    #[serde(default, deserialize_with = "lenient_items")]
    pub(super) content: Option<Vec<WireText>>,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) encrypted_content: Option<String>,
    /// A `web_search_call`'s action (`{"type": "search", "query": …}`).
    #[serde(default)]
    pub(super) action: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct WireText {
    #[serde(rename = "type", default, deserialize_with = "lenient_string")]
    pub(super) kind: String,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) text: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) refusal: Option<String>,
    /// `url_citation` annotations (`url`, `title`) of an `output_text`.
    #[serde(default, deserialize_with = "lenient_list")]
    pub(super) annotations: Vec<Value>,
}

#[derive(Deserialize)]
pub(super) struct WireResponse {
    #[serde(default, deserialize_with = "lenient")]
    pub(super) usage: Option<WireUsage>,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) incomplete_details: Option<IncompleteDetails>,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) error: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct IncompleteDetails {
    #[serde(default, deserialize_with = "lenient")]
    pub(super) reason: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct WireUsage {
    #[serde(default, deserialize_with = "lenient")]
    input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    input_tokens_details: Option<InputDetails>,
    #[serde(default, deserialize_with = "lenient")]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    #[serde(default, deserialize_with = "lenient")]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct OutputDetails {
    #[serde(default, deserialize_with = "lenient")]
    reasoning_tokens: Option<u64>,
}

/// A field of the type we read, or `None` when it has another: OpenAI adds
/// item and event types whose fields reuse our names with other types (an
/// object `arguments` on `tool_search_call`, an object `delta` on
/// `response.shell_call_output_content.delta`); those are skipped, never
/// allowed to break the stream.
fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).ok())
}

fn lenient_string<'de, D>(deserializer: D) -> Result<String, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Ok(lenient::<D, String>(deserializer)?.unwrap_or_default())
}

/// A list whose elements of another shape are skipped one by one.
fn lenient_items<'de, D, T>(deserializer: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let Value::Array(items) = Value::deserialize(deserializer)? else {
        return Ok(None);
    };
    let items = items
        .into_iter()
        .filter_map(|item| serde_json::from_value(item).ok());
    Ok(Some(items.collect()))
}

fn lenient_list<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    Ok(lenient_items(deserializer)?.unwrap_or_default())
}

impl WireUsage {
    pub(super) fn normalised(&self) -> Usage {
        let cached = self
            .input_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0);
        Usage {
            input_tokens: self.input_tokens.unwrap_or(0).saturating_sub(cached),
            output_tokens: self.output_tokens.unwrap_or(0),
            reasoning_tokens: self
                .output_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            cache_read_tokens: cached,
            cache_write_tokens: 0,
        }
    }
}

/// An error the API reported in the stream (`{code, message}`), classified.
/// Codes the shared classifier does not know are settled here: quota and
/// input errors will not go away by retrying.
pub(super) fn api_error(error: &Value) -> LlmError {
    let (code, message) = classify::error_object(&serde_json::json!({ "error": error }));
    let code = code.or_else(|| error.get("type").and_then(Value::as_str).map(str::to_owned));
    let kind = match code.as_deref() {
        Some("insufficient_quota") => Some((
            ErrorKind::InvalidRequest,
            "check the plan and billing of the account behind OPENAI_API_KEY",
        )),
        Some(c)
            if (c.starts_with("invalid_") || c.contains("image") || c == "unsupported_value")
                && !classify::mentions_context_overflow(message.as_deref().unwrap_or("")) =>
        {
            Some((
                ErrorKind::InvalidRequest,
                "the request needs to change before it can succeed",
            ))
        }
        Some("vector_store_timeout") => Some((ErrorKind::Server, "try again in a moment")),
        _ => None,
    };
    let Some((kind, advice)) = kind else {
        return classify::stream_error(PROVIDER, code.as_deref(), message.as_deref());
    };
    let quoted = classify::quote(message.as_deref().unwrap_or(""));
    let detail = match (code.as_deref(), quoted.is_empty()) {
        (Some(code), false) => format!("{code}: {quoted}"),
        (Some(code), true) => code.to_owned(),
        (None, _) => quoted,
    };
    LlmError::new(
        kind,
        None,
        format!("OpenAI reported an error mid-stream ({detail}); {advice}"),
    )
}
