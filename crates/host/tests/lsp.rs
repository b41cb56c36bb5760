//! Language-server diagnostics through the file tools, against the real
//! pyright language server (installed from npm by `.ci/run` into
//! `GYRE_TEST_PYRIGHT_DIR`) and a fake server that exits.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gyre_host::lsp::{LspSection, start};
use gyre_lsp::{DiagnosticsConfig, ServerConfig};
use gyre_tools::{LateTools, Registry, ToolContext, ToolOutput, Workspace};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn pyright() -> PathBuf {
    let dir = std::env::var("GYRE_TEST_PYRIGHT_DIR").expect(
        "GYRE_TEST_PYRIGHT_DIR is not set: run .ci/run, which installs pyright from npm and exports it",
    );
    let program = Path::new(&dir).join("node_modules/.bin/pyright-langserver");
    assert!(
        program.exists(),
        "{} is missing: run .ci/run, which installs pyright from npm",
        program.display()
    );
    program
}

/// A section with only `server` (every default turned off, so what is on
/// the machine's PATH plays no part).
fn section(name: &str, server: ServerConfig, diagnostics: DiagnosticsConfig) -> LspSection {
    let mut servers = std::collections::BTreeMap::new();
    for default in [
        "rust-analyzer",
        "gopls",
        "basedpyright",
        "pyright",
        "typescript",
        "clangd",
    ] {
        servers.insert(
            default.to_owned(),
            ServerConfig {
                enabled: Some(false),
                ..ServerConfig::default()
            },
        );
    }
    servers.insert(name.to_owned(), server);
    LspSection {
        servers,
        diagnostics,
    }
}

fn context(dir: &Path, section: Option<&LspSection>, late: &Arc<LateTools>) -> ToolContext {
    ToolContext {
        workspace: Arc::new(Workspace::new(dir).unwrap()),
        session_id: "s".into(),
        call_id: "c".into(),
        cancel: CancellationToken::new(),
        progress: None,
        session: Arc::default(),
        images: Default::default(),
        output: Arc::default(),
        sandbox: Arc::default(),
        loop_scope: None,
        processes: None,
        fs: None,
        diagnostics: section.and_then(|s| start(s, dir, late)),
    }
}

async fn call(ctx: &ToolContext, name: &str, arguments: serde_json::Value) -> ToolOutput {
    let tool = Registry::builtin().get(name).unwrap();
    tool.run(arguments, ctx).await.unwrap()
}

fn text(output: &ToolOutput) -> String {
    serde_json::to_string(&output.content).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_breaks_the_types_reports_the_error_and_its_fix_reports_none() {
    let dir = tempfile::tempdir().unwrap();
    let late = LateTools::new();
    let server = ServerConfig {
        command: Some(pyright().display().to_string()),
        args: Some(vec!["--stdio".into()]),
        extensions: Some(vec!["py".into()]),
        ..ServerConfig::default()
    };
    // The wait ends when the diagnostics come; its bound is far above
    // pyright's time on a loaded machine.
    let diagnostics = DiagnosticsConfig {
        wait_ms: Some(90_000),
        ..DiagnosticsConfig::default()
    };
    let section = section("pyright", server, diagnostics);
    let ctx = context(dir.path(), Some(&section), &late);
    let path = "calc.py";
    let good = "def double(n: int) -> int:\n    return n * 2\n\n\nvalue: int = double(2)\n";
    let written = call(&ctx, "write", json!({"file_path": path, "content": good})).await;
    assert!(!text(&written).contains("error"), "{}", text(&written));

    let broken = call(
        &ctx,
        "edit",
        json!({"file_path": path, "old_string": "value: int = double(2)", "new_string": "value: str = double(2)"}),
    )
    .await;
    let broken_text = text(&broken);
    assert!(
        broken_text.contains("pyright reports 1 error in calc.py"),
        "{broken_text}"
    );
    assert!(
        broken_text.contains("line 5, column 14: error:"),
        "{broken_text}"
    );
    assert!(broken.title.ends_with(" · 1 error"), "{}", broken.title);

    let fixed = call(
        &ctx,
        "edit",
        json!({"file_path": path, "old_string": "value: str", "new_string": "value: int"}),
    )
    .await;
    let fixed_text = text(&fixed);
    assert!(!fixed_text.contains("error"), "{fixed_text}");
    assert!(!fixed.title.contains('·'), "{}", fixed.title);

    // The model's own tool joined once the server was up.
    assert_eq!(late.snapshot().names(), ["diagnostics"]);
    let tool = late.snapshot().tools().next().unwrap().1.clone();
    let all = tool.run(json!({"file_path": path}), &ctx).await.unwrap();
    assert!(text(&all).contains("no errors"), "{}", text(&all));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_server_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let late = LateTools::new();
    let server = ServerConfig {
        command: Some("gyre-no-such-language-server".into()),
        extensions: Some(vec!["py".into()]),
        ..ServerConfig::default()
    };
    let section = section("nowhere", server, DiagnosticsConfig::default());
    let with = context(dir.path(), Some(&section), &late);
    assert!(with.diagnostics.is_none(), "no server found: no hook");
    let plain_dir = tempfile::tempdir().unwrap();
    let without = context(plain_dir.path(), None, &late);
    let args = json!({"file_path": "a.py", "content": "x: int = 'one'\n"});
    let a = call(&with, "write", args.clone()).await;
    let b = call(&without, "write", args).await;
    assert_eq!(a, b);
    assert!(late.snapshot().is_empty());
}

const CRASHING_SERVER: &str = r#"#!/usr/bin/env python3
# Answers initialize, then exits when a document is opened.
import json, sys
def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        key, value = line.split(b":", 1)
        if key.lower() == b"content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))
while True:
    message = read()
    if message.get("method") == "initialize":
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {"textDocumentSync": 1}}}).encode()
        sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        sys.stdout.buffer.flush()
    elif message.get("method") == "textDocument/didOpen":
        sys.exit(3)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashing_server_is_restarted_a_bounded_number_of_times_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let script = bin.path().join("crashing-ls");
    std::fs::write(&script, CRASHING_SERVER).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let late = LateTools::new();
    let server = ServerConfig {
        command: Some(script.display().to_string()),
        extensions: Some(vec!["py".into()]),
        ..ServerConfig::default()
    };
    let diagnostics = DiagnosticsConfig {
        wait_ms: Some(60_000),
        max_restarts: Some(1),
        ..DiagnosticsConfig::default()
    };
    let section = section("crashy", server, diagnostics);
    let ctx = context(dir.path(), Some(&section), &late);
    let first = call(
        &ctx,
        "write",
        json!({"file_path": "a.py", "content": "x = 1\n"}),
    )
    .await;
    assert!(
        text(&first).contains(
            "the language server crashy exited; it was restarted (1 of at most 1 restarts)"
        ),
        "{}",
        text(&first)
    );
    let second = call(
        &ctx,
        "write",
        json!({"file_path": "a.py", "content": "x = 2\n"}),
    )
    .await;
    assert!(
        text(&second).contains("exited again after 1 restarts; it is not started again"),
        "{}",
        text(&second)
    );
    let third = call(
        &ctx,
        "write",
        json!({"file_path": "a.py", "content": "x = 3\n"}),
    )
    .await;
    assert!(
        !text(&third).contains("language server"),
        "{}",
        text(&third)
    );
}
