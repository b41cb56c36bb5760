//! Structured output (`--json-schema`): the run's final answer must be one
//! JSON value valid against a JSON Schema.
//!
//! [`OutputSchema`] holds the schema and its compiled validator; the loop
//! checks each text-only answer that would end the run ([`OutputSchema::check`])
//! and, while the bound allows, asks again with the violations
//! ([`fix_notice`]); a run that completes carries the value as compact JSON
//! in its final text. Providers with native structured output get the
//! schema in the request too (`gyre_llm::Sampling::output_schema`); the
//! check here is what holds on every API.
//!
//! Trade-offs: an answer wrapped in a Markdown code fence is accepted (the
//! fence is dropped), since models add one even when told not to; anything
//! else around the value is a violation. Violations are listed up to
//! [`MAX_LISTED`], each with its JSON pointer, so the notice stays short.

use std::sync::Arc;

use serde_json::Value;

/// Answers asked again after the first fails the schema; the next failure
/// ends the run.
pub const MAX_SCHEMA_RETRIES: u32 = 2;

/// Violations named in one notice.
const MAX_LISTED: usize = 5;

/// A JSON Schema the final answer must satisfy.
#[derive(Clone)]
pub struct OutputSchema {
    schema: Arc<Value>,
    validator: Arc<jsonschema::Validator>,
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSchema")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl OutputSchema {
    /// Compiles `schema`; the error is one sentence on what is wrong with it.
    pub fn new(schema: Value) -> Result<Self, String> {
        let validator = jsonschema::validator_for(&schema)
            .map_err(|e| format!("not a valid JSON Schema: {e}"))?;
        Ok(Self {
            schema: Arc::new(schema),
            validator: Arc::new(validator),
        })
    }

    pub fn schema(&self) -> &Arc<Value> {
        &self.schema
    }

    /// The value of `answer` when it is valid; else the violations, one
    /// per line.
    pub fn check(&self, answer: &str) -> Result<Value, String> {
        let text = unfenced(answer.trim());
        if text.is_empty() {
            return Err("the answer was empty; it must be a JSON value".to_string());
        }
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("the answer is not JSON ({e})"))?;
        let mut listed = Vec::new();
        let mut more = 0usize;
        for error in self.validator.iter_errors(&value) {
            if listed.len() < MAX_LISTED {
                let path = error.instance_path().to_string();
                let at = if path.is_empty() {
                    "/".to_string()
                } else {
                    path
                };
                listed.push(format!("at {at}: {error}"));
            } else {
                more += 1;
            }
        }
        if listed.is_empty() {
            return Ok(value);
        }
        if more > 0 {
            listed.push(format!("and {more} more"));
        }
        Err(listed.join("\n"))
    }

    /// What the system prompt says about the final answer.
    pub fn instruction(&self) -> String {
        format!(
            "# Final answer\nWhen you have finished the task, your final answer must be only one JSON value (no prose, no code fence) valid against this JSON Schema:\n{}",
            self.schema
        )
    }
}

/// The hidden notice that asks again after `errors`.
pub(crate) fn fix_notice(errors: &str) -> String {
    format!(
        "<system-reminder>Your final answer does not match the required JSON Schema:\n{errors}\nAnswer again with only the corrected JSON value.</system-reminder>"
    )
}

/// `text` without a surrounding Markdown code fence (```json … ```).
fn unfenced(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    // The info string (`json`) runs to the first line break.
    match body.split_once('\n') {
        Some((_, inner)) => inner.trim(),
        None => body.trim(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> OutputSchema {
        OutputSchema::new(json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"]
        }))
        .unwrap()
    }

    #[test]
    fn valid_answers_give_their_value_fenced_or_not() {
        assert_eq!(schema().check(r#"{"n": 3}"#).unwrap(), json!({"n": 3}));
        assert_eq!(
            schema().check("```json\n{\"n\": 4}\n```").unwrap(),
            json!({"n": 4})
        );
    }

    #[test]
    fn violations_name_where_and_what() {
        let err = schema().check(r#"{"n": "three"}"#).unwrap_err();
        assert!(err.contains("at /n"), "{err}");
        let err = schema().check("{}").unwrap_err();
        assert!(err.contains("\"n\" is a required property"), "{err}");
        assert!(schema().check("n is 3").unwrap_err().contains("not JSON"));
        assert!(schema().check("  ").unwrap_err().contains("empty"));
    }

    #[test]
    fn a_bad_schema_is_refused() {
        assert!(OutputSchema::new(json!({"type": 12})).is_err());
    }
}
