//! `--json-schema` (`--output-schema`): the final answer must be a JSON value
//! valid against the schema; an answer that is not is asked again with its
//! violations, and the result carries the value as `structured_output`.

use gyre_mock::{Item, MockServer, Script};
use serde_json::{Value, json};

use crate::common::*;

const SCHEMA: &str =
    r#"{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}"#;

/// The text of every message of a recorded Anthropic request.
fn said(body: &Value) -> String {
    body["messages"].to_string()
}

#[tokio::test]
async fn a_violating_answer_is_asked_again_and_the_valid_one_is_the_result() {
    let script = Script::linear(vec![
        vec![Item::Text("There are three files.".into())],
        vec![Item::Text(r#"{"count": "three"}"#.into())],
        vec![Item::Text("```json\n{\"count\": 3}\n```".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let out = output(env.gyre_on(
        &server,
        &[
            "run",
            "count the files",
            "--output-format",
            "json",
            "--json-schema",
            SCHEMA,
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(result["structured_output"], json!({"count": 3}), "{result}");
    assert_eq!(result["result"], r#"{"count":3}"#);

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // The schema is in the system prompt from the first request on.
    let system = requests[0].body["system"].to_string();
    assert!(
        system.contains("valid against this JSON Schema"),
        "{system}"
    );
    assert!(system.contains(r#"\"required\":[\"count\"]"#), "{system}");
    // Each re-ask names what was wrong.
    let second = said(&requests[1].body);
    assert!(second.contains("the answer is not JSON"), "{second}");
    let third = said(&requests[2].body);
    assert!(third.contains("at /count"), "{third}");
}

#[tokio::test]
async fn an_answer_that_never_validates_fails_the_run_with_its_errors() {
    let server = MockServer::start(always("no JSON here")).await.unwrap();
    let env = Env::new();
    let schema_file = env.path("schema.json");
    write(&schema_file, SCHEMA);
    let out = output(env.gyre_on(
        &server,
        &[
            "run",
            "count",
            "--output-format",
            "json",
            "--output-schema",
            "schema.json",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("does not match --json-schema after 3 attempts"),
        "{err}"
    );
    assert!(err.contains("not JSON"), "{err}");
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert!(result.get("structured_output").is_none(), "{result}");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn stream_json_s_result_carries_the_structured_output() {
    let server = MockServer::start(always(r#"{"count": 7}"#)).await.unwrap();
    let env = Env::new();
    let out = output(env.run_on(&server, "count", &["--json-schema", SCHEMA])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["structured_output"], json!({"count": 7}), "{result}");
}

#[tokio::test]
async fn a_schema_that_is_not_one_is_a_usage_error() {
    let server = MockServer::start(always("{}")).await.unwrap();
    let env = Env::new();
    let out = output(env.gyre_on(&server, &["run", "x", "--json-schema", r#"{"type": 5}"#])).await;
    assert_usage_error(&out, "--json-schema");
    let out = output(env.gyre_on(&server, &["run", "x", "--json-schema", "missing.json"])).await;
    assert_usage_error(&out, "--json-schema missing.json");
}
