//! Language-server diagnostics end to end: `gyre run` against the mock
//! model, with the real pyright language server (installed from npm by
//! `.ci/run` into `GYRE_TEST_PYRIGHT_DIR`) configured in `[lsp.pyright]`.

use gyre_mock::{Item, MockServer, Script};
use serde_json::json;

use crate::common::*;

fn pyright() -> String {
    let dir = std::env::var("GYRE_TEST_PYRIGHT_DIR").expect(
        "GYRE_TEST_PYRIGHT_DIR is not set: run .ci/run, which installs pyright from npm and exports it",
    );
    let program = std::path::Path::new(&dir).join("node_modules/.bin/pyright-langserver");
    assert!(
        program.exists(),
        "{} is missing: run .ci/run",
        program.display()
    );
    program.display().to_string()
}

#[tokio::test]
async fn an_edit_that_breaks_the_types_shows_the_error_in_its_result_and_no_server_starts_before_the_first_request()
 {
    let env = Env::new();
    // The wait ends when pyright answers; its bound is far above that.
    env.write_user_config(&format!(
        "{FAST_RETRIES}\n[diagnostics]\nwait_ms = 90000\n\n[lsp.pyright]\ncommand = \"{}\"\n",
        pyright()
    ));
    write(
        &env.path("calc.py"),
        "def double(n: int) -> int:\n    return n * 2\n\n\nvalue: int = double(2)\n",
    );
    let script = Script::linear(vec![
        vec![call("read", json!({"file_path": "calc.py"}))],
        vec![call(
            "edit",
            json!({"file_path": "calc.py", "old_string": "value: int", "new_string": "value: str"}),
        )],
        vec![Item::Text("done".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let out = output(env.run_on(&server, "break it", &[])).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&out);
    let results = tool_results(&lines);
    let edit = result_text(&results[1]);
    assert!(
        edit.contains("pyright reports 1 error in calc.py"),
        "{edit}"
    );
    assert!(edit.contains("line 5, column 14: error:"), "{edit}");

    // No language server before the first request: it offered no
    // `diagnostics` tool, and the last one (after the server started) did.
    let requests = server.requests();
    let tools = |i: usize| -> Vec<String> {
        requests[i].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(!tools(0).contains(&"diagnostics".to_owned()));
    assert!(
        tools(2).contains(&"diagnostics".to_owned()),
        "{:?}",
        tools(2)
    );
}
