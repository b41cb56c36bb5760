//! The lenient stages of the cascade, through `replace`: what a careful
//! reader would apply is applied (and says so), what it must not guess at
//! stays refused.

use super::matching::{MatchError, Occurrences, Strategy, replace};

fn one(content: &str, old: &str, new: &str) -> Result<super::matching::Replaced, MatchError> {
    replace(content, old, new, Occurrences::One)
}

const GO: &str = "package main\n\nfunc main() {\n\tif ok {\n\t\tstart()\n\t}\n\tdone()\n}\n";

#[test]
fn a_tab_indented_file_takes_an_edit_indented_with_two_spaces() {
    let done = one(
        GO,
        "  if ok {\n    start()\n  }\n",
        "  if ok {\n    start()\n    wait()\n  }\n",
    )
    .unwrap();
    assert_eq!(
        done.text,
        "package main\n\nfunc main() {\n\tif ok {\n\t\tstart()\n\t\twait()\n\t}\n\tdone()\n}\n"
    );
    assert_eq!(done.how.strategy, Strategy::Indentation);
    assert!(done.how.note().unwrap().contains("ignoring indentation"));
}

#[test]
fn a_blank_line_more_or_fewer_is_applied_and_said() {
    let content = "fn a() {}\n\nfn b() {}\nfn c() {}\n";
    // One blank line fewer than the file.
    let done = one(
        content,
        "fn a() {}\nfn b() {}\n",
        "fn a() {}\n\nfn b2() {}\n",
    )
    .unwrap();
    assert_eq!(done.text, "fn a() {}\n\nfn b2() {}\nfn c() {}\n");
    assert_eq!(done.how.strategy, Strategy::BlankLines);
    assert!(done.how.note().unwrap().contains("ignoring blank lines"));
    // One blank line more than the file.
    let done = one(content, "fn b() {}\n\nfn c() {}", "fn b() {}\nfn c2() {}").unwrap();
    assert_eq!(done.text, "fn a() {}\n\nfn b() {}\nfn c2() {}\n");
}

#[test]
fn blank_lines_that_match_twice_are_refused() {
    let content = "x = 1\n\ny = 2\nx = 1\ny = 2\n";
    let err = one(content, "x = 1\n\n\ny = 2", "z").unwrap_err();
    assert!(
        matches!(&err, MatchError::Ambiguous { how, count: 2, .. } if how.strategy == Strategy::BlankLines),
        "{err:?}"
    );
}

#[test]
fn the_read_tools_line_numbers_are_taken_off() {
    let content = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";
    let old = "     2\t    let x = 1;\n     3\t    println!(\"{x}\");\n";
    let new = "     2\t    let x = 2;\n     3\t    println!(\"{x}\");\n";
    let done = one(content, old, new).unwrap();
    assert_eq!(
        done.text,
        "fn main() {\n    let x = 2;\n    println!(\"{x}\");\n}\n"
    );
    assert!(done.how.numbered);
    assert!(done.how.note().unwrap().contains("line-number prefixes"));
    // A new line the model added without a number is kept as written.
    let added = "     2\t    let x = 1;\n    let y = 3;\n     3\t    println!(\"{x}\");\n";
    let done = one(content, old, added).unwrap();
    assert_eq!(
        done.text,
        "fn main() {\n    let x = 1;\n    let y = 3;\n    println!(\"{x}\");\n}\n"
    );
}

#[test]
fn numbers_that_do_not_count_up_are_not_taken_for_the_read_tools() {
    let content = "a\nb\n";
    let err = one(content, "     1\ta\n     5\tb\n", "x").unwrap_err();
    assert!(matches!(err, MatchError::NotFound { .. }), "{err:?}");
}

#[test]
fn look_alikes_match_and_only_the_change_is_written() {
    // The file has curly quotes and a no-break space; the model wrote ASCII.
    let content = "say(\u{201C}hello\u{201D},\u{00A0}1)\nother()\n";
    let done = one(content, "say(\"hello\", 1)", "say(\"hello\", 2)").unwrap();
    assert_eq!(done.text, "say(\u{201C}hello\u{201D},\u{00A0}2)\nother()\n");
    assert_eq!(done.how.strategy, Strategy::LookAlikes);
    assert!(done.how.note().unwrap().contains("look-alike"));
    // The reverse: the model wrote an en dash where the file has `-`.
    let content = "let d = a - b;\n";
    let done = one(content, "let d = a \u{2013} b;", "let d = a \u{2013} c;").unwrap();
    assert_eq!(done.text, "let d = a - c;\n");
}

#[test]
fn look_alikes_that_match_twice_or_text_that_is_not_there_are_refused() {
    // An exact match wins over a look-alike one.
    let content = "x = \u{2018}a\u{2019}\ny = 1\nx = 'a'\n";
    let done = one(content, "x = 'a'", "x = 'b'").unwrap();
    assert_eq!(done.text, "x = \u{2018}a\u{2019}\ny = 1\nx = 'b'\n");
    assert_eq!(done.how.strategy, Strategy::Exact);
    let content = "x = \u{2018}a\u{2019}\ny = 1\nx = \u{201B}a\u{2032}\n";
    let err = one(content, "x = 'a'", "x = 'b'").unwrap_err();
    assert!(
        matches!(&err, MatchError::Ambiguous { how, count: 2, .. } if how.strategy == Strategy::LookAlikes),
        "{err:?}"
    );
    // Hallucinated text stays a refusal at every stage.
    let err = one(GO, "  if ready {\n    begin()\n  }\n", "x").unwrap_err();
    assert!(matches!(err, MatchError::NotFound { .. }), "{err:?}");
}

#[test]
fn a_no_break_space_in_the_file_is_kept_where_the_edit_does_not_change_it() {
    let content = "fn f() {\n\u{00A0}\u{00A0}let x = 1;\u{00A0}\n}\n";
    let done = one(content, "  let x = 1; ", "  let x = 2; ").unwrap();
    assert_eq!(
        done.text,
        "fn f() {\n\u{00A0}\u{00A0}let x = 2;\u{00A0}\n}\n"
    );
    assert_eq!(done.how.strategy, Strategy::LookAlikes);
}
