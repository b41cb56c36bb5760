//! Tool argument schemas derived from the Rust argument structs, and the
//! parsing of the model's arguments into those structs.
//!
//! The schema is the contract with the model, so it is kept small and plain:
//! no `$schema`, `title`, `$ref`/`$defs`, `format` or `default` (descriptions
//! state defaults in words), and an optional field is
//! simply absent from `required` (no `"type": [.., "null"]` unions, which some
//! providers reject). Doc comments on the fields become descriptions.
//!
//! Because no schema of ours admits `null`, a member set to `null` means
//! "not given": some providers (OpenAI's strict mode) send optional
//! arguments that way. [`parse_args`] drops such members before parsing, and
//! [`crate::Registry::validate`] accepts arguments that are valid once they
//! are dropped.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::ToolError;

/// The compact JSON schema of `T`, an arguments struct.
pub fn input_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .for_deserialize()
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    compact(&mut schema);
    if let Value::Object(map) = &mut schema {
        // The tool's description says what the struct's doc comment says.
        map.remove("title");
        map.remove("description");
    }
    schema
}

/// Parses a tool's arguments, with an error naming the tool and the problem:
/// ``invalid arguments for `read`: missing field `file_path` ``.
pub fn parse_args<T: DeserializeOwned>(tool: &str, mut value: Value) -> Result<T, ToolError> {
    if !value.is_object() {
        return Err(ToolError::invalid(
            tool,
            format!("expected a JSON object, got {}", kind_of(&value)),
        ));
    }
    drop_null_members(&mut value);
    serde_json::from_value(value).map_err(|e| ToolError::invalid(tool, e))
}

/// Removes every object member whose value is `null`, at any depth.
/// Returns whether anything was removed.
pub(crate) fn drop_null_members(value: &mut Value) -> bool {
    match value {
        Value::Object(map) => {
            let before = map.len();
            map.retain(|_, v| !v.is_null());
            let mut changed = map.len() != before;
            for v in map.values_mut() {
                changed |= drop_null_members(v);
            }
            changed
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, v| drop_null_members(v) | changed),
        _ => false,
    }
}

/// How many schema violations one error message lists.
const MAX_VIOLATIONS: usize = 3;
/// How much of an offending value the message quotes.
const MAX_QUOTED_CHARS: usize = 60;

/// One sentence about the violations of a tool's schema, up to
/// [`MAX_VIOLATIONS`] of them: each names the field (as `edits[0].old_string`)
/// and what was expected. Missing fields of one object are named together.
pub(crate) fn describe_violations<'a>(
    errors: impl Iterator<Item = jsonschema::ValidationError<'a>>,
) -> String {
    use jsonschema::error::ValidationErrorKind as Kind;

    let mut problems: Vec<String> = Vec::new();
    // Missing fields, by the path of the object that lacks them, in the order
    // first seen; they become one problem each.
    let mut missing: Vec<(String, Vec<String>, usize)> = Vec::new();
    for error in errors {
        let path = field_path(error.instance_path());
        if let Kind::Required { property } = error.kind() {
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned);
            let field = join_field(&path, &name);
            match missing.iter_mut().find(|(p, _, _)| *p == path) {
                Some((_, fields, _)) => fields.push(field),
                None => {
                    missing.push((path, vec![field], problems.len()));
                    problems.push(String::new());
                }
            }
            continue;
        }
        let message = describe_one(&path, error.kind(), error.instance(), &error);
        if !problems.contains(&message) {
            problems.push(message);
        }
    }
    for (_, fields, slot) in missing {
        let quoted: Vec<String> = fields.iter().map(|f| format!("`{f}`")).collect();
        problems[slot] = match quoted.as_slice() {
            [one] => format!("{one} is required"),
            [init @ .., last] => format!("{} and {last} are required", init.join(", ")),
            [] => continue,
        };
    }
    let total = problems.len();
    let mut text = problems
        .into_iter()
        .take(MAX_VIOLATIONS)
        .collect::<Vec<_>>()
        .join("; ");
    if total > MAX_VIOLATIONS {
        let more = total - MAX_VIOLATIONS;
        let noun = if more == 1 { "problem" } else { "problems" };
        text.push_str(&format!(" (and {more} more {noun})"));
    }
    if text.is_empty() {
        text = "the arguments do not match the tool's schema".to_owned();
    }
    text
}

fn describe_one(
    path: &str,
    kind: &jsonschema::error::ValidationErrorKind,
    value: &Value,
    error: &dyn std::fmt::Display,
) -> String {
    use jsonschema::error::{TypeKind, ValidationErrorKind as Kind};

    let got = quote(value);
    if path.is_empty() {
        return match kind {
            Kind::Type { .. } => format!("expected a JSON object, got {}", kind_of(value)),
            Kind::AdditionalProperties { unexpected } => {
                format!("unexpected {}", fields_noun(unexpected))
            }
            _ => error.to_string(),
        };
    }
    let field = format!("`{path}`");
    match kind {
        Kind::Type { kind } => {
            let expected: Vec<&str> = match kind {
                TypeKind::Single(t) => vec![with_article(t.as_str())],
                TypeKind::Multiple(set) => set.iter().map(|t| with_article(t.as_str())).collect(),
            };
            format!("{field} must be {}, got {got}", expected.join(" or "))
        }
        Kind::Enum { options } => {
            let options = match options.as_ref() {
                Value::Array(values) => values.iter().map(quote).collect::<Vec<_>>().join(", "),
                other => quote(other),
            };
            format!("{field} must be one of {options}, got {got}")
        }
        Kind::Constant { expected_value } => {
            format!("{field} must be {}, got {got}", quote(expected_value))
        }
        Kind::Minimum { limit } => format!("{field} must be at least {limit}, got {got}"),
        Kind::Maximum { limit } => format!("{field} must be at most {limit}, got {got}"),
        Kind::ExclusiveMinimum { limit } => format!("{field} must be more than {limit}, got {got}"),
        Kind::ExclusiveMaximum { limit } => format!("{field} must be less than {limit}, got {got}"),
        Kind::MinLength { limit } => format!("{field} must be at least {limit} characters long"),
        Kind::MaxLength { limit } => format!("{field} must be at most {limit} characters long"),
        Kind::MinItems { limit } => format!("{field} must have at least {limit} {}", items(*limit)),
        Kind::MaxItems { limit } => format!("{field} must have at most {limit} {}", items(*limit)),
        Kind::AdditionalProperties { unexpected } => {
            format!("{field} has {}", fields_noun(unexpected))
        }
        _ => format!("{field}: {error}"),
    }
}

fn items(n: u64) -> &'static str {
    if n == 1 { "item" } else { "items" }
}

fn fields_noun(unexpected: &[String]) -> String {
    let quoted: Vec<String> = unexpected.iter().map(|f| format!("`{f}`")).collect();
    let noun = if quoted.len() == 1 { "field" } else { "fields" };
    format!("unexpected {noun} {}", quoted.join(", "))
}

/// `integer` → `an integer`.
fn with_article(type_name: &str) -> &'static str {
    match type_name {
        "array" => "an array",
        "boolean" => "a boolean",
        "integer" => "an integer",
        "null" => "null",
        "number" => "a number",
        "object" => "an object",
        _ => "a string",
    }
}

/// `edits[0].old_string` for the instance location `/edits/0/old_string`.
fn field_path(location: &jsonschema::paths::Location) -> String {
    let mut out = String::new();
    for segment in location.iter() {
        match segment {
            jsonschema::paths::LocationSegment::Index(i) => out.push_str(&format!("[{i}]")),
            jsonschema::paths::LocationSegment::Property(name) => out = join_field(&out, &name),
        }
    }
    out
}

fn join_field(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent}.{name}")
    }
}

/// A value as JSON, cut to [`MAX_QUOTED_CHARS`].
fn quote(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Compacts one schema object and, recursively, its subschemas. Property
/// names are never taken for keywords (an argument may be called `format`).
fn compact(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    for key in ["$schema", "format", "$defs", "definitions", "default"] {
        map.remove(key);
    }
    drop_null_type(map);
    collapse_nullable_any_of(map);
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        properties.values_mut().for_each(compact);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = map.get_mut(key) {
            compact(sub);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(subs)) = map.get_mut(key) {
            subs.iter_mut().for_each(compact);
        }
    }
}

/// `"type": ["integer", "null"]` → `"type": "integer"`, and `null` out of
/// an inlined optional enum.
fn drop_null_type(map: &mut Map<String, Value>) {
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            map.insert("type".into(), only);
        }
    }
}

/// `{"anyOf": [X, {"type": "null"}], "description": D}` → X with D.
fn collapse_nullable_any_of(map: &mut Map<String, Value>) {
    let Some(Value::Array(options)) = map.get("anyOf") else {
        return;
    };
    let non_null: Vec<&Value> = options
        .iter()
        .filter(|o| o.get("type") != Some(&Value::String("null".into())))
        .collect();
    if non_null.len() != 1 || options.len() != 2 {
        return;
    }
    let Value::Object(inner) = non_null[0].clone() else {
        return;
    };
    map.remove("anyOf");
    for (k, v) in inner {
        map.entry(k).or_insert(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Fast,
        Slow,
    }

    /// Ignored title.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        /// The name.
        name: String,
        /// How many.
        count: Option<u32>,
        /// Which way.
        mode: Option<Mode>,
    }

    #[test]
    fn schema_is_compact_and_inline() {
        let schema = input_schema::<Args>();
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The name."},
                    "count": {"type": "integer", "minimum": 0, "description": "How many."},
                    "mode": {"type": "string", "enum": ["fast", "slow"], "description": "Which way."}
                },
                "required": ["name"]
            })
        );
    }

    #[test]
    fn parse_errors_name_the_tool_and_the_field() {
        let err = parse_args::<Args>("t", json!({})).err().unwrap();
        assert_eq!(
            err.to_string(),
            "invalid arguments for `t`: missing field `name`"
        );
        let args = parse_args::<Args>("t", json!({"name": "n", "count": null, "mode": null}));
        assert!(args.is_ok(), "null means not given");
        let err = parse_args::<Args>("t", json!(null)).err().unwrap();
        assert_eq!(
            err.to_string(),
            "invalid arguments for `t`: expected a JSON object, got null"
        );
    }
}
