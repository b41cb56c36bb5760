use gyre_tools::ToolError;
use serde_json::json;

use crate::Fixture;

#[tokio::test]
async fn lists_a_tree_honouring_gitignore() {
    let fx = Fixture::new();
    fx.write("src/lib.rs", "");
    fx.write("src/bin/main.rs", "");
    fx.write("Cargo.toml", "");
    fx.write(".gitignore", "target/\n");
    fx.write("target/debug/x", "");
    fx.write(".git/HEAD", "");
    fx.write("notes.log", "");
    let out = fx.call("ls", json!({})).await.unwrap();
    let text = crate::text(&out);
    assert_eq!(
        text,
        format!(
            "{}/\n  src/\n    bin/\n      main.rs\n    lib.rs\n  .gitignore\n  Cargo.toml\n  notes.log\n",
            fx.root().display()
        )
    );
    assert_eq!(out.title, "ls . (7 entries)");

    let text = fx
        .ok("ls", json!({"path": "src", "ignore": ["bin", "*.log"]}))
        .await;
    assert_eq!(text, format!("{}/\n  lib.rs\n", fx.path("src").display()));
}

#[tokio::test]
async fn big_trees_are_cut_with_a_note() {
    let fx = Fixture::new();
    for i in 0..400 {
        fx.write(&format!("d/f{i:03}"), "");
    }
    fx.write("z/deep/file", "");
    let text = fx.ok("ls", json!({})).await;
    assert!(text.contains("\n  d/\n"));
    assert!(text.contains("\n  z/\n"), "upper levels come first");
    assert!(text.ends_with("[listing cut at 300 entries; list a subdirectory to see more]\n"));
    assert!(text.lines().count() <= 303);
}

#[tokio::test]
async fn bad_targets_give_clear_errors() {
    let fx = Fixture::new();
    fx.write("file.txt", "x");
    let err = fx.err("ls", json!({"path": "file.txt"})).await;
    assert!(matches!(err, ToolError::NotADirectory { .. }), "{err}");
    let err = fx.err("ls", json!({"path": "missing"})).await;
    assert!(matches!(err, ToolError::NotFound { .. }), "{err}");
    let err = fx.err("ls", json!({"ignore": ["a[b"]})).await;
    assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
}
