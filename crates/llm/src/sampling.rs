//! Sampling settings an agent may set for its model: `temperature`, `top_p`
//! and free-form provider options.
//!
//! Invariants:
//! - An empty [`Sampling`] ([`Sampling::NONE`]) changes nothing: every field
//!   is sent only when set and the provider-options pass is skipped, so such a
//!   request serialises to exactly the bytes it did before sampling existed
//!   (the prompt-cache tests of each adapter depend on it).
//! - Each adapter puts `temperature` and `top_p` where its API wants them (top
//!   level for Anthropic Messages and both OpenAI APIs, `generationConfig` for
//!   Gemini). `provider_options` are applied last, over the finished body, so
//!   they win over everything, the two fields above included.
//! - The body is serialised once, straight to bytes ([`body_bytes`]); only a
//!   top-level field that a provider option object merges into is built as a
//!   `serde_json::Value` first (see [`overlay`]).

mod overlay;

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::Effort;

/// How the model samples, and what else the agent wants in the request body.
/// Every field is optional; unset fields leave the provider's defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sampling {
    /// Sampling temperature. `f64`, not `f32`: agent files give decimal
    /// numbers, and an `f32` would reach the wire as e.g. `0.699999988`
    /// whenever a provider option merges into the object holding it.
    pub temperature: Option<f64>,
    /// Nucleus sampling (`topP` on Gemini).
    pub top_p: Option<f64>,
    /// Extra body fields, deep-merged into the JSON body last: an object
    /// value merges into an existing object key recursively, any other value
    /// (number, string, bool, array, `null`) replaces the key, and a key the
    /// body lacks is added after the body's own fields. So they can add any
    /// field the API knows (`{"reasoning_effort": "high"}`, Anthropic
    /// `{"thinking": {"type": "enabled", "budget_tokens": 2048}}`, Gemini
    /// `{"generationConfig": {"thinkingConfig": {"thinkingBudget": 0}}}`) and
    /// override any field gyre sets, `temperature` and `top_p` included.
    ///
    /// They cannot remove a field (`null` sends `null`), merge into an array
    /// (an array replaces the whole array, e.g. `tools`), or change headers or
    /// the URL (so not Gemini's model, which is part of the URL). Nothing
    /// checks what they override: replacing what gyre relies on (`stream`,
    /// `messages`/`input`/`contents`, `store`, the tools) breaks the run or
    /// the prompt cache.
    pub provider_options: Option<Map<String, Value>>,
    /// Reasoning effort, mapped per API ([`Effort`]); `None`: the
    /// provider's default. Where it turns Anthropic's thinking on,
    /// `temperature` and `top_p` are not sent (thinking refuses them).
    pub effort: Option<Effort>,
    /// `--json-schema`: the final answer's JSON Schema, for the APIs with
    /// native structured output (OpenAI's `response_format` / `text.format`);
    /// the loop checks the answer on every API.
    pub output_schema: Option<Arc<Value>>,
    /// The provider's server-side web search, declared as a tool where the
    /// API has one (Anthropic, OpenAI Responses, Gemini); `None`: not
    /// offered.
    pub web_search: Option<crate::WebSearch>,
}

impl Sampling {
    /// Nothing set: the provider's defaults. `&Sampling::NONE` is a
    /// `&'static Sampling` (a constant without a value to drop is promoted).
    pub const NONE: Sampling = Sampling {
        temperature: None,
        top_p: None,
        provider_options: None,
        effort: None,
        output_schema: None,
        web_search: None,
    };
}

/// Serialises a request `body` to the bytes to send, with `sampling`'s
/// provider options merged in (see [`Sampling::provider_options`]).
pub(crate) fn body_bytes<T: Serialize>(
    body: &T,
    sampling: &Sampling,
) -> serde_json::Result<Vec<u8>> {
    match &sampling.provider_options {
        Some(options) if !options.is_empty() => overlay::to_vec(body, options),
        _ => serde_json::to_vec(body),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn none_is_the_default_and_static() {
        let none: &'static Sampling = &Sampling::NONE;
        assert_eq!(none, &Sampling::default());
    }

    #[test]
    fn no_or_empty_provider_options_serialise_the_body_as_is() {
        let body = json!({"model": "m", "stream": true});
        let plain = serde_json::to_vec(&body).unwrap();
        assert_eq!(body_bytes(&body, &Sampling::NONE).unwrap(), plain);
        let empty = Sampling {
            provider_options: Some(Map::new()),
            ..Sampling::default()
        };
        assert_eq!(body_bytes(&body, &empty).unwrap(), plain);
    }
}
