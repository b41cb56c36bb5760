use gyre_tools::ToolError;
use serde_json::json;

use crate::Fixture;

fn project() -> Fixture {
    let fx = Fixture::new();
    fx.write("src/a.rs", "use std::io;\n\nfn main() {\n    run();\n}\n");
    fx.write("src/b.rs", "fn helper() {}\nfn other() {}\n");
    fx.write("notes.txt", "The MAIN point\n");
    fx.write(".gitignore", "ignored/\n");
    fx.write("ignored/c.rs", "fn main() {}\n");
    fx.write(".hidden/d.rs", "fn main() {}\n");
    fx.write("blob.bin", b"\x00\x01fn main() {}\n");
    fx
}

#[tokio::test]
async fn lists_matching_files_by_default() {
    let fx = project();
    let out = fx
        .call("grep", json!({"pattern": "fn main"}))
        .await
        .unwrap();
    assert_eq!(crate::text(&out), "src/a.rs\n");
    assert_eq!(out.title, "grep fn main (1 files)");
}

#[tokio::test]
async fn content_mode_shows_numbered_lines_and_context() {
    let fx = project();
    let text = fx
        .ok(
            "grep",
            json!({"pattern": "fn \\w+\\(", "output_mode": "content"}),
        )
        .await;
    assert_eq!(
        text,
        "src/a.rs:3:fn main() {\nsrc/b.rs:1:fn helper() {}\nsrc/b.rs:2:fn other() {}\n"
    );
    let text = fx
        .ok(
            "grep",
            json!({"pattern": "run", "output_mode": "content", "context": 1, "path": "src"}),
        )
        .await;
    assert_eq!(
        text,
        "src/a.rs-3-fn main() {\nsrc/a.rs:4:    run();\nsrc/a.rs-5-}\n"
    );
}

#[tokio::test]
async fn count_case_and_glob_options() {
    let fx = project();
    let text = fx
        .ok("grep", json!({"pattern": "fn", "output_mode": "count"}))
        .await;
    assert_eq!(text, "src/a.rs:1\nsrc/b.rs:2\n");
    let text = fx
        .ok("grep", json!({"pattern": "main", "case_insensitive": true}))
        .await;
    assert_eq!(text, "notes.txt\nsrc/a.rs\n");
    let text = fx
        .ok(
            "grep",
            json!({"pattern": "main", "case_insensitive": true, "glob": "*.txt"}),
        )
        .await;
    assert_eq!(text, "notes.txt\n");
    let text = fx
        .ok("grep", json!({"pattern": "main", "path": "src/a.rs"}))
        .await;
    assert_eq!(text, "src/a.rs\n");
    let out = fx.call("grep", json!({"pattern": "zzz"})).await.unwrap();
    assert_eq!(crate::text(&out), "No matches found.");
    assert!(crate::is_success(&out));
}

#[tokio::test]
async fn head_limit_and_output_size_cut_with_a_note() {
    let fx = project();
    let text = fx
        .ok(
            "grep",
            json!({"pattern": "fn", "output_mode": "content", "head_limit": 1}),
        )
        .await;
    assert_eq!(
        text,
        "src/a.rs:3:fn main() {\n[results cut at head_limit=1; more matches exist]\n"
    );

    let line = format!("needle {}\n", "x".repeat(100));
    fx.write("huge.txt", line.repeat(5000));
    let text = fx
        .ok(
            "grep",
            json!({"pattern": "needle", "output_mode": "content"}),
        )
        .await;
    assert!(text.len() <= 30_200, "{}", text.len());
    assert!(
        text.trim_end()
            .ends_with("narrow the search with path, glob or a more specific pattern]")
    );
}

#[tokio::test]
async fn bad_patterns_and_paths_are_errors() {
    let fx = project();
    let err = fx.err("grep", json!({"pattern": "fn("})).await;
    assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
    let message = err.to_string();
    assert!(
        message.starts_with("invalid arguments for `grep`: invalid regex:"),
        "{message}"
    );
    let err = fx.err("grep", json!({"pattern": "x", "glob": "a[b"})).await;
    assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
    let err = fx
        .err("grep", json!({"pattern": "x", "path": "nowhere"}))
        .await;
    assert!(matches!(err, ToolError::NotFound { .. }), "{err}");
    let err = fx
        .err("grep", json!({"pattern": "x", "output_mode": "lines"}))
        .await;
    assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
}
