use std::time::{Duration, SystemTime};

use gyre_tools::ToolError;
use serde_json::json;

use crate::Fixture;

fn touch(fx: &Fixture, relative: &str, age_secs: u64) {
    fx.write(relative, "");
    let file = std::fs::File::options()
        .write(true)
        .open(fx.path(relative))
        .unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(age_secs))
        .unwrap();
}

#[tokio::test]
async fn matches_newest_first_honouring_gitignore() {
    let fx = Fixture::new();
    touch(&fx, "src/old.rs", 300);
    touch(&fx, "src/new.rs", 10);
    touch(&fx, "src/deep/mid.rs", 100);
    touch(&fx, "top.rs", 200);
    touch(&fx, "readme.md", 1);
    fx.write(".gitignore", "target/\n");
    touch(&fx, "target/gen.rs", 0);
    let out = fx
        .call("glob", json!({"pattern": "**/*.rs"}))
        .await
        .unwrap();
    assert_eq!(
        crate::text(&out),
        "src/new.rs\nsrc/deep/mid.rs\ntop.rs\nsrc/old.rs\n"
    );
    assert_eq!(out.title, "glob **/*.rs (4 files)");
    let text = fx.ok("glob", json!({"pattern": "*.rs"})).await;
    assert_eq!(text, "top.rs\n", "`*` does not cross `/`");
    let text = fx
        .ok("glob", json!({"pattern": "*.rs", "path": "src"}))
        .await;
    assert_eq!(text, "src/new.rs\nsrc/old.rs\n");
    let text = fx.ok("glob", json!({"pattern": "*.py"})).await;
    assert_eq!(text, "No files found matching `*.py`.");
}

#[tokio::test]
async fn results_are_capped_at_100_with_a_note() {
    let fx = Fixture::new();
    for i in 0..150u64 {
        touch(&fx, &format!("f{i:03}.txt"), 1000 - i);
    }
    let text = fx.ok("glob", json!({"pattern": "*.txt"})).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 101);
    assert_eq!(lines[0], "f149.txt");
    assert_eq!(lines[99], "f050.txt");
    assert_eq!(
        lines[100],
        "[showing the 100 most recently modified of 150 matches; use a more specific pattern or path]"
    );
}

#[tokio::test]
async fn bad_patterns_and_paths_are_errors() {
    let fx = Fixture::new();
    fx.write("file.txt", "");
    let err = fx.err("glob", json!({"pattern": "a[b"})).await;
    assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
    let err = fx
        .err("glob", json!({"pattern": "*", "path": "file.txt"}))
        .await;
    assert!(matches!(err, ToolError::NotADirectory { .. }), "{err}");
    let err = fx
        .err("glob", json!({"pattern": "*", "path": "missing"}))
        .await;
    assert!(matches!(err, ToolError::NotFound { .. }), "{err}");
}
