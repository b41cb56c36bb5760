//! The tool list each API is sent: gyre's built-in tools and MCP-style
//! schemas that break naive adapters, snapshotted per dialect.

use gyre_llm::SchemaDialect;
use gyre_llm::tool_schema::transform;
use gyre_protocol::ToolSpec;
use serde_json::{Value, json};

const DIALECTS: [(SchemaDialect, &str); 3] = [
    (SchemaDialect::Anthropic, "anthropic"),
    (SchemaDialect::OpenAi, "openai"),
    (SchemaDialect::Gemini, "gemini"),
];

/// The tool list as `dialect`'s API takes it (the adapters' wire shapes).
fn tool_list(dialect: SchemaDialect, specs: &[ToolSpec]) -> Value {
    let tools: Vec<Value> = specs
        .iter()
        .map(|spec| {
            let schema = transform(dialect, &spec.input_schema);
            match dialect {
                SchemaDialect::Anthropic => json!({
                    "name": spec.name, "description": spec.description, "input_schema": schema
                }),
                SchemaDialect::OpenAi => json!({
                    "type": "function", "name": spec.name, "description": spec.description,
                    "parameters": schema, "strict": false
                }),
                SchemaDialect::Gemini => json!({
                    "name": spec.name, "description": spec.description, "parameters": schema
                }),
            }
        })
        .collect();
    match dialect {
        SchemaDialect::Gemini => json!([{ "functionDeclarations": tools }]),
        _ => Value::Array(tools),
    }
}

fn mcp_tool(name: &str, schema: Value) -> ToolSpec {
    ToolSpec {
        name: format!("mcp__fixture__{name}"),
        description: format!("An MCP tool with {name}"),
        input_schema: schema,
    }
}

/// Schemas as MCP servers (zod, pydantic, hand-written) produce them.
fn tricky_tools() -> Vec<ToolSpec> {
    vec![
        mcp_tool(
            "refs",
            json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {
                    "owner": {"$ref": "#/$defs/User", "description": "Who owns it"},
                    "tree": {"$ref": "#/definitions/Tree"}
                },
                "required": ["owner"],
                "$defs": {
                    "User": {"type": "object", "properties": {"login": {"type": "string"}}, "required": ["login"], "additionalProperties": false}
                },
                "definitions": {
                    "Tree": {"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/definitions/Tree"}}}}
                }
            }),
        ),
        mcp_tool(
            "nullable_unions",
            json!({
                "type": "object",
                "properties": {
                    "limit": {"type": ["integer", "null"], "exclusiveMinimum": 0, "default": null},
                    "query": {"anyOf": [{"type": "string", "pattern": "^[a-z]+$"}, {"type": "null"}], "title": "Query"},
                    "id": {"type": ["string", "integer"], "description": "A name or a number"},
                    "when": {"type": "string", "format": "date-time"},
                    "email": {"type": "string", "format": "email", "minLength": 3}
                }
            }),
        ),
        mcp_tool(
            "combinators",
            json!({
                "type": "object",
                "properties": {
                    "target": {"oneOf": [
                        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                        {"type": "object", "properties": {"url": {"type": "string", "format": "uri"}}, "required": ["url"]}
                    ]},
                    "options": {"allOf": [
                        {"type": "object", "properties": {"force": {"type": "boolean"}}},
                        {"properties": {"depth": {"type": "number", "maximum": 10}}, "required": ["depth"]}
                    ]},
                    "mode": {"const": "fast"},
                    "level": {"enum": [1, 2, 3], "description": "How hard"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "matrix": {"type": "array", "items": {"type": "array"}},
                    "anything": {"description": "Any JSON value"},
                    "flag": true
                },
                "required": ["target", "mode", "ghost"],
                "additionalProperties": false
            }),
        ),
        mcp_tool("no_properties", json!({"type": "object"})),
        mcp_tool("empty_schema", json!({})),
        mcp_tool(
            "top_level_union",
            json!({"anyOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]}
            ]}),
        ),
    ]
}

#[test]
fn builtin_tools_per_api() {
    let specs = gyre_tools::Registry::builtin().specs();
    assert!(!specs.is_empty());
    for (dialect, name) in DIALECTS {
        insta::assert_json_snapshot!(format!("builtin_{name}"), tool_list(dialect, &specs));
    }
}

#[test]
fn tricky_mcp_tools_per_api() {
    let specs = tricky_tools();
    for (dialect, name) in DIALECTS {
        insta::assert_json_snapshot!(format!("mcp_{name}"), tool_list(dialect, &specs));
    }
}

/// Keys Gemini's `Schema` accepts; anything else fails the request.
const GEMINI_KEYS: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "properties",
    "required",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "anyOf",
];

fn check_gemini_node(schema: &Value, path: &str) {
    let map = schema
        .as_object()
        .unwrap_or_else(|| panic!("{path}: not an object"));
    for key in map.keys() {
        assert!(GEMINI_KEYS.contains(&key.as_str()), "{path}: `{key}`");
    }
    assert!(
        map.contains_key("type") || map.contains_key("anyOf"),
        "{path}: no type"
    );
    if let Some(Value::Object(properties)) = map.get("properties") {
        assert!(!properties.is_empty(), "{path}: empty properties");
        for (name, sub) in properties {
            check_gemini_node(sub, &format!("{path}.{name}"));
        }
        for name in map
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            assert!(
                properties.contains_key(name.as_str().unwrap()),
                "{path}: required {name}"
            );
        }
    } else {
        assert!(
            !map.contains_key("required"),
            "{path}: required without properties"
        );
    }
    if map.get("type") == Some(&json!("array")) {
        check_gemini_node(&map["items"], &format!("{path}[]"));
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        assert_eq!(map["type"], "string", "{path}: enum on a non-string");
        assert!(values.iter().all(Value::is_string), "{path}: enum values");
    }
    for (n, option) in map
        .get("anyOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        check_gemini_node(option, &format!("{path}|{n}"));
    }
}

#[test]
fn every_gemini_schema_stays_inside_the_subset() {
    let mut specs = gyre_tools::Registry::builtin().specs();
    specs.extend(tricky_tools());
    for spec in &specs {
        let schema = transform(SchemaDialect::Gemini, &spec.input_schema);
        assert_eq!(schema["type"], "object", "{}", spec.name);
        check_gemini_node(&schema, &spec.name);
    }
}

#[test]
fn every_top_level_is_an_object_with_properties_for_anthropic_and_openai() {
    let mut specs = gyre_tools::Registry::builtin().specs();
    specs.extend(tricky_tools());
    for dialect in [SchemaDialect::Anthropic, SchemaDialect::OpenAi] {
        for spec in &specs {
            let schema = transform(dialect, &spec.input_schema);
            assert_eq!(schema["type"], "object", "{dialect:?} {}", spec.name);
            assert!(
                schema["properties"].is_object(),
                "{dialect:?} {}",
                spec.name
            );
            let text = schema.to_string();
            for gone in ["$ref", "$defs", "definitions", "$schema"] {
                assert!(
                    !text.contains(&format!("\"{gone}\"")),
                    "{dialect:?} {}: {gone}",
                    spec.name
                );
            }
        }
    }
}
