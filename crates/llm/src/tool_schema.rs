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
        SchemaDialect::Gemini => Value::Object(gemini(&top, 0)),
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

/// One schema node in Gemini's subset (see the module docs).
fn gemini(node: &Value, depth: usize) -> Map<String, Value> {
    let Value::Object(source) = node else {
        return typed_any();
    };
    let merged;
    let map = match source.get("allOf") {
        Some(Value::Array(parts)) if depth <= MAX_DEPTH => {
            merged = merge_all_of(source, parts, depth);
            &merged
        }
        _ => source,
    };
    let mut description = map
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let (mut types, mut nullable) = types_of(map);

    let alternatives = match (map.get("anyOf"), map.get("oneOf")) {
        (Some(Value::Array(options)), _) | (None, Some(Value::Array(options))) => Some(options),
        _ => None,
    };
    // Alternatives describe the node only when nothing else does.
    let structural = ["properties", "items", "enum", "const"]
        .iter()
        .any(|k| map.contains_key(*k));
    if let Some(alternatives) = alternatives.filter(|_| types.is_empty() && !structural) {
        let mut options = Vec::new();
        for alternative in alternatives {
            if is_null_schema(alternative) {
                nullable = true;
            } else if depth < MAX_DEPTH {
                options.push(gemini(alternative, depth + 1));
            }
        }
        let mut out = match options.len() {
            0 => typed_any(),
            1 => options.remove(0),
            _ => {
                let mut out = Map::new();
                out.insert(
                    "anyOf".into(),
                    Value::Array(options.into_iter().map(Value::Object).collect()),
                );
                out
            }
        };
        if let Some(description) = description {
            out.insert("description".into(), description.into());
        }
        if nullable {
            out.insert("nullable".into(), true.into());
        }
        return out;
    }

    let mut values: Option<Vec<Value>> = match (map.get("enum"), map.get("const")) {
        (Some(Value::Array(values)), _) => Some(values.clone()),
        (None, Some(value)) => Some(vec![value.clone()]),
        _ => None,
    };
    if let Some(values) = values.as_mut() {
        if values.iter().any(Value::is_null) {
            nullable = true;
            values.retain(|v| !v.is_null());
        }
    }
    let string_enum = values
        .as_ref()
        .filter(|v| !v.is_empty() && v.iter().all(Value::is_string))
        .cloned();
    if types.is_empty() {
        types.push(infer_type(map, values.as_deref()));
    }
    if let Some(values) = values.as_ref().filter(|v| !v.is_empty()) {
        let kept = string_enum.is_some() && types == ["string"];
        if !kept {
            let listed: Vec<String> = values.iter().map(Value::to_string).collect();
            let note = format!("Allowed values: {}.", listed.join(", "));
            description = Some(match description {
                Some(text) if !text.is_empty() => format!("{text} {note}"),
                _ => note,
            });
        }
    }
    let string_enum = string_enum.filter(|_| types == ["string"]);

    let mut out = if types.len() == 1 {
        typed(types[0], map, string_enum.as_deref(), depth)
    } else {
        let options = types
            .iter()
            .map(|t| Value::Object(typed(t, map, string_enum.as_deref(), depth)))
            .collect();
        let mut out = Map::new();
        out.insert("anyOf".into(), Value::Array(options));
        out
    };
    if let Some(description) = description {
        out.insert("description".into(), description.into());
    }
    if nullable {
        out.insert("nullable".into(), true.into());
    }
    out
}

/// A schema that accepts anything, as Gemini can say it.
fn typed_any() -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("type".into(), "string".into());
    out
}

/// The non-null types of a node, and whether `null` is allowed.
fn types_of(map: &Map<String, Value>) -> (Vec<&str>, bool) {
    let mut nullable = map.get("nullable") == Some(&Value::Bool(true));
    let mut types = Vec::new();
    let listed: Vec<&Value> = match map.get("type") {
        Some(Value::Array(list)) => list.iter().collect(),
        Some(single) => vec![single],
        None => Vec::new(),
    };
    for t in listed.into_iter().filter_map(Value::as_str) {
        if t == "null" {
            nullable = true;
        } else if !types.contains(&t) {
            types.push(t);
        }
    }
    (types, nullable)
}

fn is_null_schema(node: &Value) -> bool {
    match node {
        Value::Object(map) => {
            map.get("type").and_then(Value::as_str) == Some("null")
                || map.get("const") == Some(&Value::Null)
                || matches!(map.get("enum"), Some(Value::Array(v)) if v.len() == 1 && v[0].is_null())
        }
        _ => false,
    }
}

/// The type a node without one most plausibly has.
fn infer_type(map: &Map<String, Value>, values: Option<&[Value]>) -> &'static str {
    let has = |keys: &[&str]| keys.iter().any(|k| map.contains_key(*k));
    if has(&[
        "properties",
        "additionalProperties",
        "patternProperties",
        "required",
    ]) {
        return "object";
    }
    if has(&["items", "prefixItems", "minItems", "maxItems"]) {
        return "array";
    }
    if let Some(values) = values.filter(|v| !v.is_empty()) {
        if values.iter().all(Value::is_boolean) {
            return "boolean";
        }
        if values.iter().all(|v| v.is_i64() || v.is_u64()) {
            return "integer";
        }
        if values.iter().all(Value::is_number) {
            return "number";
        }
        return "string";
    }
    if has(&["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]) {
        return "number";
    }
    "string"
}

/// The keywords of `map` that Gemini takes for `kind`.
fn typed(
    kind: &str,
    map: &Map<String, Value>,
    string_enum: Option<&[Value]>,
    depth: usize,
) -> Map<String, Value> {
    let mut out = Map::new();
    let format = map.get("format").and_then(Value::as_str);
    let copy_counts = |out: &mut Map<String, Value>, keys: &[&str]| {
        for key in keys {
            if let Some(n) = map.get(*key).filter(|v| v.is_u64()) {
                out.insert((*key).to_owned(), n.clone());
            }
        }
    };
    match kind {
        "object" => {
            out.insert("type".into(), "object".into());
            let mut names = Vec::new();
            if let Some(Value::Object(properties)) = map.get("properties") {
                let converted: Map<String, Value> = properties
                    .iter()
                    .filter(|_| depth < MAX_DEPTH)
                    .map(|(name, sub)| (name.clone(), Value::Object(gemini(sub, depth + 1))))
                    .collect();
                names = converted.keys().cloned().collect();
                if !converted.is_empty() {
                    out.insert("properties".into(), Value::Object(converted));
                }
            }
            if let Some(Value::Array(required)) = map.get("required") {
                let mut kept: Vec<Value> = Vec::new();
                for name in required {
                    if name.as_str().is_some_and(|n| names.iter().any(|p| p == n))
                        && !kept.contains(name)
                    {
                        kept.push(name.clone());
                    }
                }
                if !kept.is_empty() {
                    out.insert("required".into(), Value::Array(kept));
                }
            }
        }
        "array" => {
            out.insert("type".into(), "array".into());
            let items = match (map.get("items"), map.get("prefixItems")) {
                (Some(items @ Value::Object(_)), _) => {
                    Some(Value::Object(gemini(items, depth + 1)))
                }
                (Some(Value::Array(tuple)), _) | (None, Some(Value::Array(tuple))) => {
                    let alternatives = json!({"anyOf": tuple});
                    Some(Value::Object(gemini(&alternatives, depth + 1)))
                }
                _ => None,
            };
            let items = items
                .filter(|_| depth < MAX_DEPTH)
                .unwrap_or_else(|| Value::Object(typed_any()));
            out.insert("items".into(), items);
            copy_counts(&mut out, &["minItems", "maxItems"]);
        }
        "integer" | "number" => {
            out.insert("type".into(), kind.into());
            let allowed: &[&str] = if kind == "integer" {
                &["int32", "int64"]
            } else {
                &["float", "double"]
            };
            if let Some(format) = format.filter(|f| allowed.contains(f)) {
                out.insert("format".into(), format.into());
            }
            bounds(kind, map, &mut out);
        }
        "boolean" => {
            out.insert("type".into(), "boolean".into());
        }
        _ => {
            // "string", and types Gemini does not have.
            out.insert("type".into(), "string".into());
            if let Some(values) = string_enum {
                out.insert("enum".into(), Value::Array(values.to_vec()));
            } else if let Some(format) = format.filter(|f| *f == "date-time") {
                out.insert("format".into(), format.into());
            }
            copy_counts(&mut out, &["minLength", "maxLength"]);
        }
    }
    out
}

/// `minimum`/`maximum`, exclusive bounds made inclusive (an integer's moved
/// by one; a number's kept, slightly looser than the tool asked).
fn bounds(kind: &str, map: &Map<String, Value>, out: &mut Map<String, Value>) {
    for (inclusive, exclusive, step) in [
        ("minimum", "exclusiveMinimum", 1i64),
        ("maximum", "exclusiveMaximum", -1),
    ] {
        if let Some(bound) = map.get(inclusive).filter(|v| v.is_number()) {
            out.insert(inclusive.into(), bound.clone());
        } else if let Some(bound) = map.get(exclusive).filter(|v| v.is_number()) {
            let value = match bound.as_i64() {
                Some(n) if kind == "integer" => json!(n.saturating_add(step)),
                _ => bound.clone(),
            };
            out.insert(inclusive.into(), value);
        }
    }
}

/// `allOf` parts merged into the node: properties and required united, other
/// keys taken from the first that has them (the node itself first).
fn merge_all_of(node: &Map<String, Value>, parts: &[Value], depth: usize) -> Map<String, Value> {
    let mut out = node.clone();
    out.remove("allOf");
    for part in parts {
        let Value::Object(part) = part else { continue };
        let flat;
        let part = match part.get("allOf") {
            Some(Value::Array(inner)) if depth < MAX_DEPTH => {
                flat = merge_all_of(part, inner, depth + 1);
                &flat
            }
            _ => part,
        };
        for (key, value) in part {
            match (key.as_str(), out.get_mut(key), value) {
                ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                    for (name, schema) in theirs {
                        mine.entry(name.clone()).or_insert_with(|| schema.clone());
                    }
                }
                ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                    for name in theirs {
                        if !mine.contains(name) {
                            mine.push(name.clone());
                        }
                    }
                }
                (_, Some(_), _) => {}
                (_, None, _) => {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
    }
    out
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
