use std::sync::Arc;

use gyre_tools::{ReadTool, Registry, ToolError, ToolKind, Typed, parse_args};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Fixture;

#[test]
fn builtin_tools_come_in_a_stable_order() {
    let registry = Registry::builtin();
    assert_eq!(
        registry.names(),
        [
            "read",
            "write",
            "edit",
            "bash",
            "bash_output",
            "kill_shell",
            "grep",
            "glob",
            "ls",
            "todo_write",
            "web_fetch"
        ]
    );
    let specs: Vec<String> = registry.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(specs, registry.names());
    assert_eq!(
        serde_json::to_string(&registry.specs()).unwrap(),
        serde_json::to_string(&Registry::builtin().specs()).unwrap(),
        "specs must be byte-identical between builds (prompt caching)"
    );
}

#[test]
fn kinds_follow_the_contract() {
    let registry = Registry::builtin();
    let kind = |name: &str| registry.get(name).unwrap().kind(&json!({}));
    for name in [
        "read",
        "grep",
        "glob",
        "ls",
        "bash_output",
        "todo_write",
        "web_fetch",
    ] {
        assert_eq!(kind(name), ToolKind::ReadOnly, "{name}");
    }
    for name in ["write", "edit", "bash", "kill_shell"] {
        assert_eq!(kind(name), ToolKind::Mutating, "{name}");
    }
}

fn properties(schema: &Value) -> Vec<String> {
    let mut names: Vec<String> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    names.sort();
    names
}

fn required(schema: &Value) -> Vec<String> {
    let mut names: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn schemas_have_the_contract_arguments() {
    let expected: [(&str, &[&str], &[&str]); 11] = [
        ("read", &["file_path", "limit", "offset"], &["file_path"]),
        (
            "write",
            &["content", "file_path"],
            &["content", "file_path"],
        ),
        (
            "edit",
            &["file_path", "new_string", "old_string", "replace_all"],
            &["file_path", "new_string", "old_string"],
        ),
        (
            "bash",
            &["command", "description", "run_in_background", "timeout_ms"],
            &["command"],
        ),
        (
            "grep",
            &[
                "case_insensitive",
                "context",
                "glob",
                "head_limit",
                "output_mode",
                "path",
                "pattern",
            ],
            &["pattern"],
        ),
        ("glob", &["path", "pattern"], &["pattern"]),
        ("ls", &["ignore", "path"], &[]),
        (
            "bash_output",
            &["filter", "shell_id", "wait_ms"],
            &["shell_id"],
        ),
        ("kill_shell", &["shell_id"], &["shell_id"]),
        ("todo_write", &["todos"], &["todos"]),
        ("web_fetch", &["max_bytes", "url"], &["url"]),
    ];
    let registry = Registry::builtin();
    for (name, props, req) in expected {
        let spec = registry.get(name).unwrap().spec().clone();
        let schema = &spec.input_schema;
        assert_eq!(schema["type"], "object", "{name}");
        assert_eq!(properties(schema), props, "{name}");
        assert_eq!(required(schema), req, "{name}");
        let raw = schema.to_string();
        for banned in ["$ref", "$defs", "$schema", "\"title\"", "null"] {
            assert!(!raw.contains(banned), "{name} schema has {banned}: {raw}");
        }
        for (prop, body) in schema["properties"].as_object().unwrap() {
            assert!(
                body.get("description").is_some(),
                "{name}.{prop} undocumented"
            );
        }
        assert!(!spec.description.is_empty());
    }
    let grep = registry.get("grep").unwrap().spec().input_schema.clone();
    assert_eq!(
        grep["properties"]["output_mode"]["enum"],
        json!(["content", "files_with_matches", "count"])
    );
    let todos = registry
        .get("todo_write")
        .unwrap()
        .spec()
        .input_schema
        .clone();
    let item = &todos["properties"]["todos"]["items"];
    assert_eq!(required(item), ["content", "status"]);
    assert_eq!(
        item["properties"]["status"]["enum"],
        json!(["pending", "in_progress", "completed", "cancelled"])
    );
}

#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct ReadLike {
    file_path: String,
    offset: Option<usize>,
}

#[test]
fn parse_args_names_the_tool_and_the_problem() {
    let missing = parse_args::<ReadLike>("read", json!({})).unwrap_err();
    assert!(matches!(missing, ToolError::InvalidArguments(_)));
    assert_eq!(
        missing.to_string(),
        "invalid arguments for `read`: missing field `file_path`"
    );
    let wrong = parse_args::<ReadLike>("read", json!({"file_path": "a", "offset": "ten"}))
        .unwrap_err()
        .to_string();
    assert!(
        wrong.starts_with("invalid arguments for `read`: invalid type: string \"ten\""),
        "{wrong}"
    );
    let not_object = parse_args::<ReadLike>("read", json!("a"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        not_object,
        "invalid arguments for `read`: expected a JSON object, got a string"
    );
}

#[tokio::test]
async fn tools_reject_bad_arguments_with_the_parse_error() {
    let fx = Fixture::new();
    let err = fx.err("read", json!({"path": "x"})).await.to_string();
    assert_eq!(
        err,
        "invalid arguments for `read`: missing field `file_path`"
    );
    let err = fx.err("bash", json!({"command": 5})).await.to_string();
    assert!(
        err.starts_with("invalid arguments for `bash`: invalid type"),
        "{err}"
    );
}

#[test]
fn retain_and_register_keep_the_order() {
    let mut registry = Registry::builtin();
    registry.retain(|name| name != "bash" && name != "write");
    registry.retain(|name| {
        !matches!(
            name,
            "bash_output" | "kill_shell" | "todo_write" | "web_fetch"
        )
    });
    assert_eq!(registry.names(), ["read", "edit", "grep", "glob", "ls"]);
    registry.register(Arc::new(Typed::new(ReadTool)));
    assert_eq!(registry.names(), ["read", "edit", "grep", "glob", "ls"]);
    assert!(registry.get("bash").is_none());
    assert_eq!(registry.len(), 5);
}
