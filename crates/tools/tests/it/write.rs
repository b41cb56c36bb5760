use gyre_tools::ToolError;
use serde_json::json;

use crate::Fixture;

#[tokio::test]
async fn creates_parents_and_writes_exact_bytes() {
    let fx = Fixture::new();
    let out = fx
        .call(
            "write",
            json!({"file_path": "a/b/c.txt", "content": "one\ntwo\r\nthree"}),
        )
        .await
        .unwrap();
    assert_eq!(fx.read("a/b/c.txt"), "one\ntwo\r\nthree");
    assert_eq!(
        crate::text(&out),
        "created a/b/c.txt: wrote 14 bytes (3 lines)"
    );
    assert_eq!(out.title, "write a/b/c.txt (3 lines)");
    assert!(crate::is_success(&out));
}

#[tokio::test]
async fn overwrites_an_existing_file() {
    let fx = Fixture::new();
    fx.write("f.txt", "old content that is longer");
    let text = fx
        .ok("write", json!({"file_path": "f.txt", "content": "new\n"}))
        .await;
    assert_eq!(fx.read("f.txt"), "new\n");
    assert_eq!(text, "overwrote f.txt: wrote 4 bytes (1 line)");
}

#[tokio::test]
async fn refuses_to_replace_a_directory() {
    let fx = Fixture::new();
    fx.write("dir/inner.txt", "x");
    let err = fx
        .err("write", json!({"file_path": "dir", "content": "x"}))
        .await;
    assert!(matches!(err, ToolError::IsADirectory { .. }), "{err}");
    assert_eq!(fx.read("dir/inner.txt"), "x");
}
