//! Gemini's schema subset: each node rebuilt from an allow-list of keys (the
//! rules are listed in the parent module's docs). Gemini fails the whole
//! request on a key it does not know, so nothing is copied blindly.

use serde_json::{Map, Value, json};

use super::MAX_DEPTH;

/// One schema node in Gemini's subset (see the module docs).
pub(super) fn schema(node: &Value, depth: usize) -> Map<String, Value> {
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
                options.push(schema(alternative, depth + 1));
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
    if let Some(values) = values.as_mut()
        && values.iter().any(Value::is_null)
    {
        nullable = true;
        values.retain(|v| !v.is_null());
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
                Some(text) if text.ends_with(['.', '!', '?']) => format!("{text} {note}"),
                Some(text) if !text.is_empty() => format!("{text}. {note}"),
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
                    .map(|(name, sub)| (name.clone(), Value::Object(schema(sub, depth + 1))))
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
                    Some(Value::Object(schema(items, depth + 1)))
                }
                (Some(Value::Array(tuple)), _) | (None, Some(Value::Array(tuple))) => {
                    let alternatives = json!({"anyOf": tuple});
                    Some(Value::Object(schema(&alternatives, depth + 1)))
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
