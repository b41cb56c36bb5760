use std::os::unix::fs::symlink;

use gyre_tools::ToolError;
use serde_json::json;

use crate::Fixture;
use crate::edit::{change_behind_the_back, change_keeping_stamp, read_first};

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
async fn overwrites_an_existing_file_once_it_was_read() {
    let fx = Fixture::new();
    fx.write("f.txt", "old content that is longer");
    let err = fx
        .err("write", json!({"file_path": "f.txt", "content": "new\n"}))
        .await;
    assert!(matches!(err, ToolError::NotReadYet { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "`f.txt` has not been read in this session; read it first, so that the change is based \
         on its current content"
    );
    assert_eq!(fx.read("f.txt"), "old content that is longer");

    read_first(&fx, "f.txt").await;
    let text = fx
        .ok("write", json!({"file_path": "f.txt", "content": "new\n"}))
        .await;
    assert_eq!(fx.read("f.txt"), "new\n");
    assert_eq!(text, "overwrote f.txt: wrote 4 bytes (1 line)");
    // Its own write counts as seen.
    fx.ok("write", json!({"file_path": "f.txt", "content": "newer\n"}))
        .await;
    assert_eq!(fx.read("f.txt"), "newer\n");
}

#[tokio::test]
async fn refuses_a_file_changed_since_it_was_read() {
    let fx = Fixture::new();
    fx.write("f.txt", "mine\n");
    read_first(&fx, "f.txt").await;
    change_behind_the_back(&fx, "f.txt", "theirs\n");
    let err = fx
        .err("write", json!({"file_path": "f.txt", "content": "x"}))
        .await;
    assert!(matches!(err, ToolError::Stale { .. }), "{err}");
    assert_eq!(fx.read("f.txt"), "theirs\n");

    read_first(&fx, "f.txt").await;
    change_keeping_stamp(&fx, "f.txt", "THEIRS\n");
    let err = fx
        .err("write", json!({"file_path": "f.txt", "content": "x"}))
        .await;
    assert!(matches!(err, ToolError::Stale { .. }), "{err}");
    assert_eq!(fx.read("f.txt"), "THEIRS\n");
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

#[tokio::test]
async fn an_unread_binary_file_is_named_as_binary() {
    let fx = Fixture::new();
    fx.write("blob", [0u8, 1, 2, 3, 0xff]);
    let err = fx
        .err("write", json!({"file_path": "blob", "content": "x"}))
        .await;
    assert!(matches!(err, ToolError::Binary { .. }), "{err}");
    assert_eq!(
        std::fs::read(fx.path("blob")).unwrap(),
        [0u8, 1, 2, 3, 0xff]
    );
}

#[tokio::test]
async fn paths_outside_are_refused() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    symlink(outside.path(), fx.path("out")).unwrap();
    for path in ["../escape.txt", "out/escape.txt", "a/../../escape.txt"] {
        let err = fx
            .err("write", json!({"file_path": path, "content": "x"}))
            .await;
        assert!(
            matches!(err, ToolError::OutsideWorkspace { .. }),
            "{path}: {err}"
        );
    }
    assert!(!outside.path().join("escape.txt").exists());
}
