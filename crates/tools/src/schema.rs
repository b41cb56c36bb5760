//! Tool argument schemas derived from the Rust argument structs, and the
//! parsing of the model's arguments into those structs.
//!
//! The schema is the contract with the model, so it is kept small and plain:
//! no `$schema`, `title`, `$ref`/`$defs`, `format` or `default` (descriptions
//! state defaults in words), and an optional field is
//! simply absent from `required` (no `"type": [.., "null"]` unions, which some
//! providers reject). Doc comments on the fields become descriptions.

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
pub fn parse_args<T: DeserializeOwned>(tool: &str, value: Value) -> Result<T, ToolError> {
    if !value.is_object() {
        return Err(ToolError::invalid(
            tool,
            format!("expected a JSON object, got {}", kind_of(&value)),
        ));
    }
    serde_json::from_value(value).map_err(|e| ToolError::invalid(tool, e))
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
        let err = parse_args::<Args>("t", json!(null)).err().unwrap();
        assert_eq!(
            err.to_string(),
            "invalid arguments for `t`: expected a JSON object, got null"
        );
    }
}
