use gyre_tools::ToolError;
use serde_json::json;

use crate::Fixture;

const SOURCE: &str = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n\n// trailing\t \n";

#[tokio::test]
async fn replaces_a_unique_match_and_keeps_the_rest() {
    let fx = Fixture::new();
    fx.write("main.rs", SOURCE);
    let out = fx
        .call(
            "edit",
            json!({"file_path": "main.rs", "old_string": "let x = 1;", "new_string": "let x = 2;\n    let y = 3;"}),
        )
        .await
        .unwrap();
    assert_eq!(
        fx.read("main.rs"),
        SOURCE.replace("let x = 1;", "let x = 2;\n    let y = 3;")
    );
    assert_eq!(out.title, "edit main.rs (1 replacement)");
    let text = crate::text(&out);
    assert!(text.starts_with("edited main.rs: 1 replacement."), "{text}");
    assert!(
        text.contains("     2\t    let x = 2;\n     3\t    let y = 3;\n"),
        "{text}"
    );
}

#[tokio::test]
async fn several_matches_need_replace_all() {
    let fx = Fixture::new();
    fx.write("t.txt", "a-b a-b a-b");
    let err = fx
        .err(
            "edit",
            json!({"file_path": "t.txt", "old_string": "a-b", "new_string": "c"}),
        )
        .await
        .to_string();
    assert!(err.contains("occurs 3 times"), "{err}");
    assert!(err.contains("replace_all"), "{err}");
    assert_eq!(fx.read("t.txt"), "a-b a-b a-b");

    let out = fx
        .call(
            "edit",
            json!({"file_path": "t.txt", "old_string": "a-b", "new_string": "c", "replace_all": true}),
        )
        .await
        .unwrap();
    assert_eq!(fx.read("t.txt"), "c c c");
    assert_eq!(out.title, "edit t.txt (3 replacements)");
}

#[tokio::test]
async fn a_missing_old_string_says_to_read_again() {
    let fx = Fixture::new();
    fx.write("main.rs", SOURCE);
    let err = fx
        .err(
            "edit",
            json!({"file_path": "main.rs", "old_string": "let x = 9;", "new_string": "y"}),
        )
        .await
        .to_string();
    assert!(err.contains("was not found in `main.rs`"), "{err}");
    assert!(err.contains("read the file again"), "{err}");
    assert_eq!(fx.read("main.rs"), SOURCE);
}

#[tokio::test]
async fn identical_strings_and_missing_files_are_errors() {
    let fx = Fixture::new();
    fx.write("main.rs", SOURCE);
    let err = fx
        .err(
            "edit",
            json!({"file_path": "main.rs", "old_string": "x", "new_string": "x"}),
        )
        .await;
    assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
    assert!(err.to_string().contains("identical"), "{err}");

    let err = fx
        .err(
            "edit",
            json!({"file_path": "nope.rs", "old_string": "x", "new_string": "y"}),
        )
        .await;
    assert!(matches!(err, ToolError::NotFound { .. }), "{err}");

    fx.write("dir/f", "x");
    let err = fx
        .err(
            "edit",
            json!({"file_path": "dir", "old_string": "x", "new_string": "y"}),
        )
        .await;
    assert!(matches!(err, ToolError::IsADirectory { .. }), "{err}");

    fx.write("bin", [0xff, 0xfe, 0x00, 0x78]);
    let err = fx
        .err(
            "edit",
            json!({"file_path": "bin", "old_string": "x", "new_string": "y"}),
        )
        .await;
    assert!(matches!(err, ToolError::Binary { .. }), "{err}");
}

#[tokio::test]
async fn crlf_files_are_edited_with_lf_strings() {
    let fx = Fixture::new();
    fx.write("win.txt", "one\r\ntwo\r\nthree\r\n");
    fx.ok(
        "edit",
        json!({"file_path": "win.txt", "old_string": "one\ntwo", "new_string": "1\n2"}),
    )
    .await;
    assert_eq!(fx.read("win.txt"), "1\r\n2\r\nthree\r\n");
}
