//! The edit tool on real files with the imperfect `old_string`s models send
//! (issue 19): applied when exactly one place matches, saying how; refused
//! when it would be a guess, the file untouched.

use serde_json::{Value, json};

use crate::Fixture;
use crate::edit::read_first;

fn args(path: &str, old: &str, new: &str) -> Value {
    json!({"file_path": path, "old_string": old, "new_string": new})
}

const GO: &str = "package main\n\nfunc main() {\n\tif ok {\n\t\tstart()\n\t}\n\tdone()\n}\n";

#[tokio::test]
async fn a_go_file_with_tabs_takes_an_edit_with_two_space_indentation() {
    let fx = Fixture::new();
    fx.write("main.go", GO);
    read_first(&fx, "main.go").await;
    let out = fx
        .ok(
            "edit",
            args(
                "main.go",
                "  if ok {\n    start()\n  }",
                "  if ok {\n    start()\n    wait()\n  }",
            ),
        )
        .await;
    assert_eq!(
        fx.read("main.go"),
        "package main\n\nfunc main() {\n\tif ok {\n\t\tstart()\n\t\twait()\n\t}\n\tdone()\n}\n"
    );
    assert!(
        out.contains("Note: old_string matched only ignoring indentation"),
        "{out}"
    );
}

#[tokio::test]
async fn line_numbers_copied_from_read_blank_lines_and_look_alikes_are_applied_and_said() {
    let fx = Fixture::new();
    fx.write(
        "a.py",
        "def f():\n    return 1\n\n\ndef g():\n    return 2\n",
    );
    read_first(&fx, "a.py").await;
    let out = fx
        .ok(
            "edit",
            args("a.py", "     2\t    return 1\n", "     2\t    return 10\n"),
        )
        .await;
    assert!(out.contains("line-number prefixes"), "{out}");
    let out = fx
        .ok(
            "edit",
            args(
                "a.py",
                "    return 10\n\ndef g():",
                "    return 10\n\n\ndef h():",
            ),
        )
        .await;
    assert!(out.contains("ignoring blank lines"), "{out}");
    assert_eq!(
        fx.read("a.py"),
        "def f():\n    return 10\n\n\ndef h():\n    return 2\n"
    );
    fx.write("q.md", "He said \u{201C}go\u{201D} \u{2013} twice.\n");
    read_first(&fx, "q.md").await;
    let out = fx
        .ok(
            "edit",
            args("q.md", "said \"go\" - twice", "said \"go\" - thrice"),
        )
        .await;
    assert!(out.contains("look-alike"), "{out}");
    assert_eq!(
        fx.read("q.md"),
        "He said \u{201C}go\u{201D} \u{2013} thrice.\n"
    );
}

#[tokio::test]
async fn guesses_stay_refused_and_the_file_untouched() {
    let fx = Fixture::new();
    let text = "a = \u{2018}x\u{2019}\nb = 1\na = \u{201B}x\u{2032}\n";
    fx.write("dup.py", text);
    read_first(&fx, "dup.py").await;
    let err = fx
        .err("edit", args("dup.py", "a = 'x'", "a = 'y'"))
        .await
        .to_string();
    assert!(err.contains("matches 2 places"), "{err}");
    // Text the file does not have, at any stage.
    let err = fx
        .err("edit", args("dup.py", "c = 'x'", "c = 'y'"))
        .await
        .to_string();
    assert!(err.contains("not"), "{err}");
    assert_eq!(fx.read("dup.py"), text);
}
