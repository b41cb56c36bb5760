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
            "multi_edit",
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
    for name in ["write", "edit", "multi_edit", "bash", "kill_shell"] {
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
    let expected: [(&str, &[&str], &[&str]); 12] = [
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
            "multi_edit",
            &["edits", "file_path"],
            &["edits", "file_path"],
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
    assert_eq!(
        registry.names(),
        ["read", "edit", "multi_edit", "grep", "glob", "ls"]
    );
    registry.register(Arc::new(Typed::new(ReadTool)));
    assert_eq!(
        registry.names(),
        ["read", "edit", "multi_edit", "grep", "glob", "ls"]
    );
    assert!(registry.get("bash").is_none());
    assert_eq!(registry.len(), 6);
}

#[test]
fn multi_edit_items_are_described_and_required() {
    let registry = Registry::builtin();
    let schema = registry
        .get("multi_edit")
        .unwrap()
        .spec()
        .input_schema
        .clone();
    let items = &schema["properties"]["edits"]["items"];
    assert_eq!(
        properties(items),
        ["new_string", "old_string", "replace_all"]
    );
    assert_eq!(required(items), ["new_string", "old_string"]);
    assert_eq!(schema["properties"]["edits"]["minItems"], 1);
}

fn invalid(registry: &Registry, tool: &str, arguments: Value) -> String {
    match registry.validate(tool, &arguments) {
        Err(ToolError::InvalidArguments(message)) => message,
        other => panic!("{tool} {arguments}: {other:?}"),
    }
}

#[test]
fn validation_names_the_field_and_what_was_expected() {
    let registry = Registry::builtin();
    assert!(
        registry
            .validate("read", &json!({"file_path": "a"}))
            .is_ok()
    );
    assert!(
        registry
            .validate(
                "read",
                &json!({"file_path": "a", "offset": 3, "extra": true})
            )
            .is_ok()
    );
    assert!(
        registry
            .validate("edit", &json!({"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": null}))
            .is_ok(),
        "null means not given"
    );
    assert_eq!(
        invalid(&registry, "read", json!({"file_path": null})),
        "invalid arguments for `read`: `file_path` must be a string, got null"
    );
    assert_eq!(
        invalid(&registry, "read", json!({"file_path": "a", "limit": "ten"})),
        "invalid arguments for `read`: `limit` must be an integer, got \"ten\""
    );
    assert_eq!(
        invalid(&registry, "read", json!({"file_path": "a", "offset": -1})),
        "invalid arguments for `read`: `offset` must be at least 0, got -1"
    );
    assert_eq!(
        invalid(&registry, "edit", json!({"file_path": "a"})),
        "invalid arguments for `edit`: `old_string` and `new_string` are required"
    );
    assert_eq!(
        invalid(&registry, "edit", json!({})),
        "invalid arguments for `edit`: `file_path`, `old_string` and `new_string` are required"
    );
    assert_eq!(
        invalid(&registry, "read", json!("a.txt")),
        "invalid arguments for `read`: expected a JSON object, got a string"
    );
    assert_eq!(
        invalid(
            &registry,
            "grep",
            json!({"pattern": "x", "output_mode": "lines"})
        ),
        "invalid arguments for `grep`: `output_mode` must be one of \"content\", \
         \"files_with_matches\", \"count\", got \"lines\""
    );
}

#[test]
fn validation_reaches_into_arrays() {
    let registry = Registry::builtin();
    assert_eq!(
        invalid(
            &registry,
            "multi_edit",
            json!({"file_path": "a", "edits": [{"old_string": "x", "new_string": "y"}, {"new_string": 5}]})
        ),
        "invalid arguments for `multi_edit`: `edits[1].old_string` is required; \
         `edits[1].new_string` must be a string, got 5"
    );
    // Arguments that parse skip the schema (no validator compiled for the
    // common case); what the type cannot say, like "at least one edit", the
    // tool itself refuses when it runs.
    assert!(
        registry
            .validate("multi_edit", &json!({"file_path": "a", "edits": []}))
            .is_ok()
    );
}

#[test]
fn validation_lists_at_most_three_problems() {
    let registry = Registry::builtin();
    let message = invalid(
        &registry,
        "grep",
        json!({"pattern": 1, "path": 2, "glob": 3, "context": "x", "head_limit": "y"}),
    );
    // In the order the model wrote the arguments.
    assert!(
        message.starts_with("invalid arguments for `grep`: `pattern` must be a string, got 1; "),
        "{message}"
    );
    assert_eq!(message.matches("must be").count(), 3, "{message}");
    assert!(message.ends_with(" (and 2 more problems)"), "{message}");
}

#[test]
fn validating_an_unknown_tool_names_the_tools() {
    let registry = Registry::builtin();
    let message = invalid(&registry, "delete_everything", json!({}));
    assert!(
        message.starts_with("there is no tool `delete_everything`"),
        "{message}"
    );
    assert!(
        message.contains("read, write, edit, multi_edit"),
        "{message}"
    );
}

/// A tool whose schema no validator compiles.
struct BrokenSchema(gyre_protocol::ToolSpec);

impl gyre_tools::Tool for BrokenSchema {
    fn spec(&self) -> &gyre_protocol::ToolSpec {
        &self.0
    }

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::ReadOnly
    }

    fn run<'a>(
        &'a self,
        _arguments: Value,
        _ctx: &'a gyre_tools::ToolContext,
    ) -> futures::future::BoxFuture<'a, Result<gyre_tools::ToolOutput, ToolError>> {
        Box::pin(async { Ok(gyre_tools::ToolOutput::text("t", "ran")) })
    }
}

#[test]
fn a_schema_that_does_not_compile_skips_validation() {
    let mut registry = Registry::new();
    registry.register(Arc::new(BrokenSchema(gyre_protocol::ToolSpec {
        name: "broken".into(),
        description: "d".into(),
        input_schema: json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "(unclosed"}}}),
    })));
    assert!(registry.validate("broken", &json!({"a": 1})).is_ok());
    // Twice: the failed compilation is remembered, not retried.
    assert!(registry.validate("broken", &json!({"a": 1})).is_ok());
}

#[test]
fn clones_share_compiled_validators_and_replacements_get_their_own() {
    let mut registry = Registry::builtin();
    let clone = registry.clone();
    assert!(clone.validate("read", &json!({})).is_err());
    assert!(registry.validate("read", &json!({})).is_err());
    registry.register(Arc::new(BrokenSchema(gyre_protocol::ToolSpec {
        name: "read".into(),
        description: "d".into(),
        input_schema: json!({"type": "object"}),
    })));
    assert!(registry.validate("read", &json!({})).is_ok());
    assert!(clone.validate("read", &json!({})).is_err());
}

#[tokio::test]
async fn tools_take_null_for_an_optional_argument() {
    let fx = Fixture::new();
    fx.write("a.txt", "a\n");
    let text = fx
        .ok(
            "read",
            json!({"file_path": "a.txt", "offset": null, "limit": null}),
        )
        .await;
    assert_eq!(text, "     1\ta\n");
    fx.ok(
        "edit",
        json!({"file_path": "a.txt", "old_string": "a", "new_string": "b", "replace_all": null}),
    )
    .await;
    assert_eq!(fx.read("a.txt"), "b\n");
}
