//! Tool argument schemas, made acceptable to the API they are sent to.
//!
//! Tools bring arbitrary JSON Schemas (MCP servers above all), and each API
//! rejects a different part of JSON Schema — one rejected tool fails every
//! request. [`transform`] rewrites a schema so that no valid tool is rejected,
//! keeping as much meaning as the API can take.
//!
//! Every dialect:
//! - local `$ref`s (`#/$defs/…`, `#/definitions/…`, any `#/…` pointer, `#`) are
//!   inlined; a recursive reference, one that cannot be resolved, or nesting
//!   deeper than [`MAX_DEPTH`] is cut to a plain `{"type": "object"}` (the
//!   model loses detail there, the request is not rejected). Inlining is
//!   bounded ([`MAX_INLINED_REFS`]) so that nested references cannot blow up;
//! - `$schema`, `$id`, `$comment`, `$defs` and `definitions` are dropped;
//! - the top level is `{"type": "object", "properties": {…}}` (Gemini: without
//!   `properties` when there are none, see below). A top-level `anyOf`/`oneOf`/
//!   `allOf` of objects is flattened into one object (its properties merged;
//!   required are those every alternative requires); a top level that is not
//!   an object at all becomes an object without properties.
//!
//! OpenAI (non-strict function calling) stays close to the input: an array
//! without `items` gets `"items": {}` (OpenAI rejects it otherwise).
//!
//! Gemini takes an OpenAPI 3.0 subset and fails a request on any key it does
//! not know, so its schema is rebuilt from an allow-list: `type`, `format`
//! (only `enum`/`date-time` for strings, `int32`/`int64`, `float`/`double`),
//! `description`, `nullable`, `enum` (strings only), `properties`, `required`
//! (only names that exist), `items`, `minItems`/`maxItems`,
//! `minimum`/`maximum`, `minLength`/`maxLength` and `anyOf`. Beyond that:
//! - a type union `["string", "null"]` becomes `string` + `nullable`; a union
//!   of several types becomes an `anyOf` of one schema per type;
//! - `oneOf` becomes `anyOf`; an `anyOf` whose only other option is `null`
//!   collapses to that option + `nullable`; `allOf` is merged into one schema;
//! - `const` becomes a one-value `enum`; an enum of non-strings is dropped and
//!   its values are listed in the description instead;
//! - `exclusiveMinimum`/`exclusiveMaximum` become inclusive bounds;
//! - every node gets a `type` (Gemini requires one outside `anyOf`): inferred
//!   from its keywords, else `string` — a schema that accepts anything
//!   accepts a string, so the model's arguments stay valid for the tool;
//! - an array always has `items` (`string` when unconstrained), and an object
//!   without properties has no `properties` key (Gemini rejects an empty one);
//! - `additionalProperties`, `default`, `examples`, `title`, `pattern`, `not`,
//!   `if`/`then`/`else` and everything else are dropped.
//!
//! Anthropic: the common rules only.
//!
//! The transform is deterministic, so the same tools serialise to the same
//! bytes from request to request (prompt caching depends on it).

mod gemini;

use serde_json::{Map, Value, json};

/// How deep schemas may nest before the rest is cut to a plain object.
pub const MAX_DEPTH: usize = 32;
/// How many `$ref`s one schema may inline in total.
pub const MAX_INLINED_REFS: usize = 512;

/// The schema rules of one wire API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaDialect {
    Anthropic,
    OpenAi,
    Gemini,
}

/// `schema` (a tool's JSON Schema for its arguments) as `dialect` accepts it.
pub fn transform(dialect: SchemaDialect, schema: &Value) -> Value {
    let mut inliner = Inliner {
        root: schema,
        stack: vec!["#".to_owned()],
        budget: MAX_INLINED_REFS,
    };
    let top = top_level_object(inliner.schema(schema, 0));
    match dialect {
        SchemaDialect::Anthropic => top,
        SchemaDialect::OpenAi => {
            let mut top = top;
            add_missing_items(&mut top);
            top
        }
        SchemaDialect::Gemini => Value::Object(gemini::schema(&top, 0)),
    }
}

/// Keys whose value is one subschema.
const SUBSCHEMA_KEYS: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
];
/// Keys whose value maps names to subschemas.
const SCHEMA_MAP_KEYS: &[&str] = &["properties", "patternProperties", "dependentSchemas"];
/// Keys whose value is a list of subschemas.
const SCHEMA_LIST_KEYS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keys that say how a schema is written, not what it accepts.
const DROPPED_KEYS: &[&str] = &["$schema", "$id", "$comment", "$defs", "definitions"];

struct Inliner<'a> {
    root: &'a Value,
    /// The references being inlined, outermost first (`#` is the root).
    stack: Vec<String>,
    budget: usize,
}

impl Inliner<'_> {
    fn schema(&mut self, node: &Value, depth: usize) -> Value {
        let Value::Object(map) = node else {
            // `true` accepts anything, `false` nothing; APIs want objects.
            return match node {
                Value::Bool(false) => json!({"not": {}}),
                _ => json!({}),
            };
        };
        if depth > MAX_DEPTH {
            return cut(map);
        }
        if let Some(Value::String(reference)) = map.get("$ref") {
            return self.reference(reference, map, depth);
        }
        let mut out = Map::new();
        for (key, value) in map {
            let key_str = key.as_str();
            if DROPPED_KEYS.contains(&key_str) {
                continue;
            }
            let value = if SCHEMA_MAP_KEYS.contains(&key_str) {
                match value {
                    Value::Object(entries) => Value::Object(
                        entries
                            .iter()
                            .map(|(name, sub)| (name.clone(), self.schema(sub, depth + 1)))
                            .collect(),
                    ),
                    other => other.clone(),
                }
            } else if SCHEMA_LIST_KEYS.contains(&key_str) || key_str == "items" {
                match value {
                    Value::Array(subs) => {
                        Value::Array(subs.iter().map(|s| self.schema(s, depth + 1)).collect())
                    }
                    Value::Object(_) => self.schema(value, depth + 1),
                    other => other.clone(),
                }
            } else if SUBSCHEMA_KEYS.contains(&key_str) && value.is_object() {
                // Booleans stay: `additionalProperties: false` is a rule.
                self.schema(value, depth + 1)
            } else {
                value.clone()
            };
            out.insert(key.clone(), value);
        }
        Value::Object(out)
    }

    /// Inlines `reference`, the other keys of `node` overriding the target's
    /// (a description beside a `$ref` describes this use of it).
    fn reference(&mut self, reference: &str, node: &Map<String, Value>, depth: usize) -> Value {
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| self.root.pointer(pointer));
        let recursive = self.stack.iter().any(|open| open == reference);
        let Some(target) = target.filter(|_| !recursive && self.budget > 0) else {
            return cut(node);
        };
        self.budget -= 1;
        self.stack.push(reference.to_owned());
        let resolved = self.schema(target, depth + 1);
        self.stack.pop();
        let mut siblings = node.clone();
        siblings.remove("$ref");
        let siblings = self.schema(&Value::Object(siblings), depth);
        match (resolved, siblings) {
            (Value::Object(mut resolved), Value::Object(siblings)) => {
                resolved.extend(siblings);
                Value::Object(resolved)
            }
            (resolved, _) => resolved,
        }
    }
}

/// A plain object standing in for what could not be inlined.
fn cut(node: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), "object".into());
    if let Some(description) = node.get("description").filter(|d| d.is_string()) {
        out.insert("description".into(), description.clone());
    }
    Value::Object(out)
}

fn has_type(map: &Map<String, Value>, wanted: &str) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == wanted,
        Some(Value::Array(types)) => types.iter().any(|t| t == wanted),
        _ => false,
    }
}

fn is_object_schema(map: &Map<String, Value>) -> bool {
    has_type(map, "object") || (map.get("type").is_none() && map.contains_key("properties"))
}

/// The top level as an object schema with `properties`.
fn top_level_object(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return json!({"type": "object", "properties": {}});
    };
    if !is_object_schema(&map) {
        match flatten_alternatives(&map) {
            Some(flattened) => map = flattened,
            None => {
                let mut object = Map::new();
                if let Some(description) = map.remove("description") {
                    object.insert("description".into(), description);
                }
                map = object;
            }
        }
    }
    map.insert("type".into(), "object".into());
    if !map.get("properties").is_some_and(Value::is_object) {
        map.insert("properties".into(), Value::Object(Map::new()));
    }
    Value::Object(map)
}

/// `allOf`/`anyOf`/`oneOf` of objects as one object: all properties; required
/// are those of every `allOf` part and those every alternative shares.
fn flatten_alternatives(map: &Map<String, Value>) -> Option<Map<String, Value>> {
    let mut properties = Map::new();
    let mut required: Vec<Value> = Vec::new();
    let mut found = false;
    for key in ["allOf", "anyOf", "oneOf"] {
        let Some(Value::Array(options)) = map.get(key) else {
            continue;
        };
        let objects: Vec<&Map<String, Value>> = options
            .iter()
            .filter_map(Value::as_object)
            .filter(|o| is_object_schema(o))
            .collect();
        if objects.is_empty() {
            continue;
        }
        found = true;
        for object in &objects {
            if let Some(Value::Object(props)) = object.get("properties") {
                for (name, schema) in props {
                    properties
                        .entry(name.clone())
                        .or_insert_with(|| schema.clone());
                }
            }
        }
        let required_of = |o: &Map<String, Value>| -> Vec<Value> {
            match o.get("required") {
                Some(Value::Array(names)) => names.clone(),
                _ => Vec::new(),
            }
        };
        let group: Vec<Value> = if key == "allOf" {
            objects.iter().flat_map(|o| required_of(o)).collect()
        } else {
            let first = required_of(objects[0]);
            first
                .into_iter()
                .filter(|name| objects.iter().all(|o| required_of(o).contains(name)))
                .collect()
        };
        for name in group {
            if !required.contains(&name) {
                required.push(name);
            }
        }
    }
    if !found {
        return None;
    }
    let mut out = Map::new();
    if let Some(description) = map.get("description") {
        out.insert("description".into(), description.clone());
    }
    out.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    Some(out)
}

/// OpenAI: every array schema has `items`.
fn add_missing_items(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if has_type(map, "array") && !map.contains_key("items") {
        map.insert("items".into(), json!({}));
    }
    for (key, value) in map.iter_mut() {
        let key = key.as_str();
        if SCHEMA_MAP_KEYS.contains(&key) {
            if let Value::Object(entries) = value {
                entries.values_mut().for_each(add_missing_items);
            }
        } else if SCHEMA_LIST_KEYS.contains(&key) || SUBSCHEMA_KEYS.contains(&key) {
            match value {
                Value::Array(subs) => subs.iter_mut().for_each(add_missing_items),
                other => add_missing_items(other),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn refs_are_inlined_and_recursion_is_cut() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "node": {"$ref": "#/$defs/Node", "description": "the root"},
                "old": {"$ref": "#/definitions/Old"},
                "far": {"$ref": "https://example.com/schema"}
            },
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}
                }
            },
            "definitions": {"Old": {"type": "string"}}
        });
        assert_eq!(
            transform(SchemaDialect::Anthropic, &schema),
            json!({
                "type": "object",
                "properties": {
                    "node": {
                        "type": "object",
                        "description": "the root",
                        "properties": {"children": {"type": "array", "items": {"type": "object"}}}
                    },
                    "old": {"type": "string"},
                    "far": {"type": "object"}
                }
            })
        );
    }

    #[test]
    fn reference_blow_up_is_bounded() {
        // Each level refers to the next twice: 2^40 nodes if inlined naively.
        let mut defs = Map::new();
        for level in 0..40 {
            let next = format!("#/$defs/L{}", level + 1);
            defs.insert(
                format!("L{level}"),
                json!({"type": "object", "properties": {"a": {"$ref": next}, "b": {"$ref": next}}}),
            );
        }
        defs.insert("L40".into(), json!({"type": "string"}));
        let schema =
            json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/L0"}}, "$defs": defs});
        let out = transform(SchemaDialect::Gemini, &schema);
        assert!(out.to_string().len() < 1 << 20);
    }

    #[test]
    fn property_names_are_never_keywords() {
        let schema = json!({
            "type": "object",
            "properties": {"$ref": {"type": "string"}, "format": {"type": "string"}, "items": {"type": "integer"}},
            "required": ["format", "missing"]
        });
        let gemini = transform(SchemaDialect::Gemini, &schema);
        assert_eq!(
            gemini,
            json!({
                "type": "object",
                "properties": {"$ref": {"type": "string"}, "format": {"type": "string"}, "items": {"type": "integer"}},
                "required": ["format"]
            })
        );
    }

    #[test]
    fn top_level_alternatives_become_one_object() {
        let schema = json!({
            "anyOf": [
                {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a", "b"]},
                {"type": "object", "properties": {"a": {"type": "string"}, "c": {"type": "integer"}}, "required": ["a"]}
            ]
        });
        let expected = json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "integer"}},
            "required": ["a"]
        });
        assert_eq!(transform(SchemaDialect::OpenAi, &schema), expected);
        assert_eq!(
            transform(SchemaDialect::OpenAi, &json!({"type": "string"})),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            transform(SchemaDialect::Gemini, &json!({})),
            json!({"type": "object"})
        );
    }
}
