use std::os::unix::fs::symlink;

use gyre_tools::ToolError;
use serde_json::{Value, json};

use crate::Fixture;
use crate::edit::{change_behind_the_back, read_first};

const SOURCE: &str = "fn a() {\n    one();\n}\n\nfn b() {\n    two();\n}\n";

fn edits(path: &str, pairs: &[(&str, &str)]) -> Value {
    let edits: Vec<Value> = pairs
        .iter()
        .map(|(old, new)| json!({"old_string": old, "new_string": new}))
        .collect();
    json!({"file_path": path, "edits": edits})
}

#[tokio::test]
async fn applies_edits_in_order_with_one_diff() {
    let fx = Fixture::new();
    fx.write("m.rs", SOURCE);
    read_first(&fx, "m.rs").await;
    let out = fx
        .call(
            "multi_edit",
            edits(
                "m.rs",
                &[
                    ("one();", "uno();"),
                    ("two();", "dos();"),
                    ("uno();", "eins();"),
                ],
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        fx.read("m.rs"),
        "fn a() {\n    eins();\n}\n\nfn b() {\n    dos();\n}\n"
    );
    assert_eq!(out.title, "multi_edit m.rs (3 replacements)");
    let text = crate::text(&out);
    assert!(text.starts_with("edited m.rs: 3 replacements.\n"), "{text}");
    assert_eq!(text.matches("--- a/m.rs").count(), 1, "{text}");
    assert!(text.contains("-    one();\n+    eins();\n"), "{text}");
    assert!(text.contains("-    two();\n+    dos();\n"), "{text}");
}

#[tokio::test]
async fn all_or_nothing() {
    let fx = Fixture::new();
    fx.write("m.rs", SOURCE);
    read_first(&fx, "m.rs").await;
    let err = fx
        .err(
            "multi_edit",
            edits("m.rs", &[("one();", "uno();"), ("three();", "tres();")]),
        )
        .await
        .to_string();
    assert!(
        err.starts_with("edit 2 of 2: old_string was not found"),
        "{err}"
    );
    assert_eq!(fx.read("m.rs"), SOURCE);

    // An edit that the one before made ambiguous fails too.
    let err = fx
        .err(
            "multi_edit",
            edits("m.rs", &[("two", "one"), ("one();", "x();")]),
        )
        .await
        .to_string();
    assert!(
        err.starts_with("edit 2 of 2: old_string occurs 2 times"),
        "{err}"
    );
    assert_eq!(fx.read("m.rs"), SOURCE);
}

#[tokio::test]
async fn replace_all_and_tolerant_matches_work_per_edit() {
    let fx = Fixture::new();
    fx.write("m.rs", SOURCE);
    read_first(&fx, "m.rs").await;
    let out = fx
        .ok(
            "multi_edit",
            json!({"file_path": "m.rs", "edits": [
                {"old_string": "fn", "new_string": "pub fn", "replace_all": true},
                {"old_string": "\ttwo();\n}", "new_string": "\ttwo();\n\tthree();\n}"},
            ]}),
        )
        .await;
    assert_eq!(
        fx.read("m.rs"),
        "pub fn a() {\n    one();\n}\n\npub fn b() {\n    two();\n    three();\n}\n"
    );
    assert!(
        out.contains("edit 2: old_string matched only ignoring indentation"),
        "{out}"
    );
}

#[tokio::test]
async fn bad_inputs_are_errors() {
    let fx = Fixture::new();
    fx.write("m.rs", SOURCE);
    read_first(&fx, "m.rs").await;

    let err = fx
        .err("multi_edit", json!({"file_path": "m.rs", "edits": []}))
        .await;
    assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
    let err = fx
        .err(
            "multi_edit",
            edits("m.rs", &[("one", "uno"), ("same", "same")]),
        )
        .await
        .to_string();
    assert_eq!(
        err,
        "invalid arguments for `multi_edit`: edits[1]: old_string and new_string are identical; \
         nothing would change"
    );

    let err = fx.err("multi_edit", edits("nope.rs", &[("a", "b")])).await;
    assert!(matches!(err, ToolError::NotFound { .. }), "{err}");

    fx.write("dir/f", "x");
    let err = fx.err("multi_edit", edits("dir", &[("a", "b")])).await;
    assert!(matches!(err, ToolError::IsADirectory { .. }), "{err}");

    fx.write("bin", [0xff, 0xfe, 0x00, 0x78]);
    let err = fx.err("multi_edit", edits("bin", &[("a", "b")])).await;
    assert!(matches!(err, ToolError::Binary { .. }), "{err}");

    let err = fx
        .err("multi_edit", edits("/etc/hosts", &[("a", "b")]))
        .await;
    assert!(matches!(err, ToolError::OutsideWorkspace { .. }), "{err}");

    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("f"), "a").unwrap();
    symlink(outside.path().join("f"), fx.path("link")).unwrap();
    let err = fx.err("multi_edit", edits("link", &[("a", "b")])).await;
    assert!(matches!(err, ToolError::OutsideWorkspace { .. }), "{err}");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("f")).unwrap(),
        "a"
    );
}

#[tokio::test]
async fn unread_and_stale_files_are_refused() {
    let fx = Fixture::new();
    fx.write("m.rs", SOURCE);
    let err = fx.err("multi_edit", edits("m.rs", &[("one", "uno")])).await;
    assert!(matches!(err, ToolError::NotReadYet { .. }), "{err}");

    read_first(&fx, "m.rs").await;
    change_behind_the_back(&fx, "m.rs", &SOURCE.replace("one", "ONE"));
    let err = fx.err("multi_edit", edits("m.rs", &[("ONE", "uno")])).await;
    assert!(matches!(err, ToolError::Stale { .. }), "{err}");
    assert_eq!(fx.read("m.rs"), SOURCE.replace("one", "ONE"));
}

#[tokio::test]
async fn an_empty_list_of_edits_is_refused_and_changes_nothing() {
    let fx = Fixture::new();
    fx.write("m.rs", SOURCE);
    read_first(&fx, "m.rs").await;
    let err = fx
        .call("multi_edit", json!({"file_path": "m.rs", "edits": []}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidArguments(m) if m.contains("at least one edit")),
        "{err:?}"
    );
    assert_eq!(fx.read("m.rs"), SOURCE);
}
