use std::os::unix::fs::symlink;
use std::time::{Duration, SystemTime};

use gyre_tools::ToolError;
use serde_json::{Value, json};

use crate::Fixture;

const SOURCE: &str = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n\n// trailing\t \n";

/// Reads `path` with the `read` tool, as the model must before changing it.
pub async fn read_first(fx: &Fixture, path: &str) {
    fx.ok("read", json!({"file_path": path})).await;
}

/// Changes the file behind the session's back, keeping its mtime and size,
/// so that only its content tells.
pub fn change_keeping_stamp(fx: &Fixture, path: &str, content: &str) {
    let full = fx.path(path);
    let before = std::fs::metadata(&full).unwrap();
    assert_eq!(before.len() as usize, content.len(), "same size wanted");
    std::fs::write(&full, content).unwrap();
    let file = std::fs::File::options().write(true).open(&full).unwrap();
    file.set_modified(before.modified().unwrap()).unwrap();
}

/// Changes the file behind the session's back, with a new size and mtime.
pub fn change_behind_the_back(fx: &Fixture, path: &str, content: &str) {
    let full = fx.path(path);
    std::fs::write(&full, content).unwrap();
    let file = std::fs::File::options().write(true).open(&full).unwrap();
    file.set_modified(SystemTime::now() + Duration::from_secs(5))
        .unwrap();
}

fn args(path: &str, old: &str, new: &str) -> Value {
    json!({"file_path": path, "old_string": old, "new_string": new})
}

#[tokio::test]
async fn replaces_a_unique_match_and_shows_a_diff() {
    let fx = Fixture::new();
    fx.write("main.rs", SOURCE);
    read_first(&fx, "main.rs").await;
    let out = fx
        .call(
            "edit",
            args("main.rs", "let x = 1;", "let x = 2;\n    let y = 3;"),
        )
        .await
        .unwrap();
    assert_eq!(
        fx.read("main.rs"),
        SOURCE.replace("let x = 1;", "let x = 2;\n    let y = 3;")
    );
    assert_eq!(out.title, "edit main.rs (1 replacement)");
    let text = crate::text(&out);
    assert!(
        text.starts_with("edited main.rs: 1 replacement.\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "--- a/main.rs\n+++ b/main.rs\n@@ -1,5 +1,6 @@\n fn main() {\n-    let x = 1;\n+    let x = 2;\n+    let y = 3;\n"
        ),
        "{text}"
    );
    assert!(!text.contains("Note:"), "{text}");
}

#[tokio::test]
async fn several_matches_need_replace_all() {
    let fx = Fixture::new();
    fx.write("t.txt", "a-b a-b\na-b");
    read_first(&fx, "t.txt").await;
    let err = fx.err("edit", args("t.txt", "a-b", "c")).await.to_string();
    assert!(
        err.contains("occurs 3 times in `t.txt` (lines 1, 2)"),
        "{err}"
    );
    assert!(err.contains("replace_all"), "{err}");
    assert_eq!(fx.read("t.txt"), "a-b a-b\na-b");

    let mut all = args("t.txt", "a-b", "c");
    all["replace_all"] = json!(true);
    let out = fx.call("edit", all).await.unwrap();
    assert_eq!(fx.read("t.txt"), "c c\nc");
    assert_eq!(out.title, "edit t.txt (3 replacements)");
}

#[tokio::test]
async fn a_miss_shows_the_closest_text_with_line_numbers() {
    let fx = Fixture::new();
    fx.write("main.rs", SOURCE);
    read_first(&fx, "main.rs").await;
    let err = fx
        .err(
            "edit",
            args("main.rs", "let x = 9;\nprintln!(\"{x}\");", "y"),
        )
        .await
        .to_string();
    assert!(err.contains("was not found in `main.rs`"), "{err}");
    assert!(err.contains("The closest text is lines 2-3"), "{err}");
    assert!(err.contains("     2\t    let x = 1;\n"), "{err}");
    assert!(
        err.contains(
            "The first difference is on line 2: the file has \"    let x = 1;\", old_string has \"let x = 9;\""
        ),
        "{err}"
    );
    assert!(err.contains("read the file again"), "{err}");

    let err = fx
        .err("edit", args("main.rs", "struct Unrelated;", "y"))
        .await
        .to_string();
    assert!(err.contains("nothing in the file is close"), "{err}");
    assert!(err.contains("read the file again"), "{err}");
    assert_eq!(fx.read("main.rs"), SOURCE);
}

#[tokio::test]
async fn tolerant_matches_reindent_and_say_so() {
    let fx = Fixture::new();
    fx.write(
        "lib.py",
        "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n",
    );
    read_first(&fx, "lib.py").await;
    let out = fx
        .ok(
            "edit",
            args(
                "lib.py",
                "def g(self):\n    return 2",
                "def g(self):\n    x = 2\n    return x",
            ),
        )
        .await;
    assert_eq!(
        fx.read("lib.py"),
        "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        x = 2\n        return x\n"
    );
    assert!(
        out.contains("Note: old_string matched only ignoring indentation"),
        "{out}"
    );
}

#[tokio::test]
async fn a_match_ambiguous_after_normalising_is_refused() {
    let fx = Fixture::new();
    fx.write("a.rs", "fn a() {\n    go();\n}\nfn b() {\n  go();\n}\n");
    read_first(&fx, "a.rs").await;
    let err = fx
        .err("edit", args("a.rs", "\tgo();\n}", "stop();\n}"))
        .await
        .to_string();
    // `\tgo();\n}` occurs nowhere exactly; ignoring indentation twice.
    assert!(
        err.contains("ignoring indentation it matches 2 places (lines 2-3, 5-6)"),
        "{err}"
    );
    assert_eq!(
        fx.read("a.rs"),
        "fn a() {\n    go();\n}\nfn b() {\n  go();\n}\n"
    );
}

#[tokio::test]
async fn bad_inputs_are_errors() {
    let fx = Fixture::new();
    fx.write("main.rs", SOURCE);
    read_first(&fx, "main.rs").await;
    let err = fx.err("edit", args("main.rs", "x", "x")).await;
    assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
    assert!(err.to_string().contains("identical"), "{err}");
    let err = fx.err("edit", args("main.rs", "", "x")).await;
    assert!(err.to_string().contains("old_string is empty"), "{err}");

    let err = fx.err("edit", args("nope.rs", "x", "y")).await;
    assert!(matches!(err, ToolError::NotFound { .. }), "{err}");

    fx.write("dir/f", "x");
    let err = fx.err("edit", args("dir", "x", "y")).await;
    assert!(matches!(err, ToolError::IsADirectory { .. }), "{err}");

    fx.write("bin", [0xff, 0xfe, 0x00, 0x78]);
    let err = fx.err("edit", args("bin", "x", "y")).await;
    assert!(matches!(err, ToolError::Binary { .. }), "{err}");

    let err = fx.err("edit", args("../outside.rs", "x", "y")).await;
    assert!(matches!(err, ToolError::OutsideWorkspace { .. }), "{err}");
}

#[tokio::test]
async fn a_symlink_out_of_the_workspace_is_refused() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "keep").unwrap();
    symlink(outside.path(), fx.path("out")).unwrap();
    let err = fx.err("edit", args("out/secret.txt", "keep", "lost")).await;
    assert!(matches!(err, ToolError::OutsideWorkspace { .. }), "{err}");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "keep"
    );
}

#[tokio::test]
async fn a_file_must_be_read_first() {
    let fx = Fixture::new();
    fx.write("main.rs", SOURCE);
    let err = fx
        .err("edit", args("main.rs", "let x = 1;", "let x = 2;"))
        .await;
    assert!(matches!(err, ToolError::NotReadYet { .. }), "{err}");
    assert!(err.to_string().contains("read it first"), "{err}");
    assert_eq!(fx.read("main.rs"), SOURCE);
    // A window of it is enough.
    fx.ok(
        "read",
        json!({"file_path": "main.rs", "offset": 4, "limit": 1}),
    )
    .await;
    fx.ok("edit", args("main.rs", "let x = 1;", "let x = 2;"))
        .await;
}

#[tokio::test]
async fn a_file_changed_since_it_was_read_is_refused() {
    let fx = Fixture::new();
    fx.write("main.rs", SOURCE);
    read_first(&fx, "main.rs").await;
    change_behind_the_back(&fx, "main.rs", "fn main() {\n    let x = 1; // theirs\n}\n");
    let err = fx
        .err("edit", args("main.rs", "let x = 1;", "let x = 2;"))
        .await;
    assert!(matches!(err, ToolError::Stale { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("changed since it was read at"),
        "{message}"
    );
    assert!(message.contains("read it again"), "{message}");
    assert!(fx.read("main.rs").contains("theirs"));

    read_first(&fx, "main.rs").await;
    fx.ok("edit", args("main.rs", "let x = 1;", "let x = 2;"))
        .await;
    assert_eq!(
        fx.read("main.rs"),
        "fn main() {\n    let x = 2; // theirs\n}\n"
    );
}

#[tokio::test]
async fn a_change_within_one_mtime_tick_is_still_caught() {
    let fx = Fixture::new();
    fx.write("a.txt", "one two\n");
    read_first(&fx, "a.txt").await;
    change_keeping_stamp(&fx, "a.txt", "one TWO\n");
    let err = fx.err("edit", args("a.txt", "one", "1")).await;
    assert!(matches!(err, ToolError::Stale { .. }), "{err}");
}

#[tokio::test]
async fn a_touched_but_unchanged_file_may_be_edited() {
    let fx = Fixture::new();
    fx.write("a.txt", "one two\n");
    read_first(&fx, "a.txt").await;
    change_behind_the_back(&fx, "a.txt", "one two\n");
    fx.ok("edit", args("a.txt", "one", "1")).await;
    assert_eq!(fx.read("a.txt"), "1 two\n");
}

#[tokio::test]
async fn own_changes_are_not_stale() {
    let fx = Fixture::new();
    fx.ok(
        "write",
        json!({"file_path": "new.txt", "content": "a\nb\n"}),
    )
    .await;
    fx.ok("edit", args("new.txt", "a", "A")).await;
    fx.ok("edit", args("new.txt", "b", "B")).await;
    fx.ok("write", json!({"file_path": "new.txt", "content": "c\n"}))
        .await;
    fx.ok("edit", args("new.txt", "c", "C")).await;
    assert_eq!(fx.read("new.txt"), "C\n");
}

#[tokio::test]
async fn crlf_and_a_missing_final_newline_are_kept() {
    let fx = Fixture::new();
    fx.write("win.txt", "one\r\ntwo\r\nthree\r\n");
    read_first(&fx, "win.txt").await;
    let out = fx.ok("edit", args("win.txt", "one\ntwo", "1\n2\n2b")).await;
    assert_eq!(fx.read("win.txt"), "1\r\n2\r\n2b\r\nthree\r\n");
    assert!(!out.contains('\r'), "{out:?}");

    fx.write("bare.txt", "a\nb");
    read_first(&fx, "bare.txt").await;
    fx.ok("edit", args("bare.txt", "b", "c\n")).await;
    assert_eq!(fx.read("bare.txt"), "a\nc");
}

#[tokio::test]
async fn literal_escapes_from_the_model_are_undone() {
    let fx = Fixture::new();
    fx.write("main.rs", SOURCE);
    read_first(&fx, "main.rs").await;
    let out = fx
        .ok(
            "edit",
            args(
                "main.rs",
                r#"println!(\"{x}\");\n}"#,
                r#"println!(\"x = {x}\");\n}"#,
            ),
        )
        .await;
    assert!(
        fx.read("main.rs")
            .contains("    println!(\"x = {x}\");\n}\n")
    );
    assert!(out.contains("literal escapes"), "{out}");
}
