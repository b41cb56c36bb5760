//! Unit tests of the matching cascade.

use super::*;

fn one(content: &str, old: &str, new: &str) -> Result<Replaced, MatchError> {
    replace(content, old, new, Occurrences::One)
}

fn text(content: &str, old: &str, new: &str) -> String {
    match one(content, old, new) {
        Ok(done) => done.text,
        Err(e) => panic!("no match: {e:?}"),
    }
}

fn strategy(content: &str, old: &str, new: &str) -> Strategy {
    one(content, old, new).unwrap().how.strategy
}

#[test]
fn an_exact_unique_match_is_replaced_and_nothing_else() {
    let done = one("a b c\nd\n", "b", "B\nB").unwrap();
    assert_eq!(done.text, "a B\nB c\nd\n");
    assert_eq!(done.how.strategy, Strategy::Exact);
    assert_eq!((done.count, done.first_line), (1, 1));
    assert_eq!(done.how.note(), None);
}

#[test]
fn several_exact_matches_need_replace_all() {
    let err = one("x\nfoo\nx\nfoo\n", "foo", "bar").unwrap_err();
    assert_eq!(
        err,
        MatchError::Ambiguous {
            how: How {
                strategy: Strategy::Exact,
                unescaped: false,
                numbered: false,
            },
            count: 2,
            places: vec![(2, 2), (4, 4)],
            more: false,
        }
    );
    let all = replace("x\nfoo\nx\nfoo\n", "foo", "bar", Occurrences::All).unwrap();
    assert_eq!((all.text.as_str(), all.count), ("x\nbar\nx\nbar\n", 2));
}

#[test]
fn replace_all_does_not_use_the_tolerant_stages() {
    let err = replace("    a  \n", "a", "b", Occurrences::All).map(|r| r.text);
    assert_eq!(err, Ok("    b  \n".to_owned()));
    let err = replace("    a = 1\n", "a =  1", "b", Occurrences::All).unwrap_err();
    assert!(
        matches!(
            err,
            MatchError::NotFound {
                occurrences: Occurrences::All,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn trailing_whitespace_is_ignored_on_whole_lines() {
    let content = "fn a() {   \n    b();\t\n}\n";
    let old = "fn a() {\n    b();\n}";
    assert_eq!(strategy(content, old, "x"), Strategy::TrailingWhitespace);
    assert_eq!(
        text(content, old, "fn a() {\n    c();\n}"),
        "fn a() {\n    c();\n}\n"
    );
}

#[test]
fn indentation_is_ignored_and_new_string_reindented() {
    let content = "impl A {\n    fn a() {\n        b();\n    }\n}\n";
    let old = "fn a() {\n    b();\n}";
    let new = "fn a() {\n    b();\n    c();\n}";
    let done = one(content, old, new).unwrap();
    assert_eq!(done.how.strategy, Strategy::Indentation);
    assert_eq!(
        done.text,
        "impl A {\n    fn a() {\n        b();\n        c();\n    }\n}\n"
    );
    assert_eq!(done.first_line, 2);
    assert!(done.how.note().unwrap().contains("re-indented"));
}

#[test]
fn tabs_in_the_file_stay_tabs() {
    let content = "func a() {\n\tif x {\n\t\ty()\n\t}\n}\n";
    let old = "    if x {\n        y()\n    }";
    let new = "    if x {\n        z()\n    }";
    assert_eq!(strategy(content, old, new), Strategy::Indentation);
    assert_eq!(
        text(content, old, new),
        "func a() {\n\tif x {\n\t\tz()\n\t}\n}\n"
    );
}

#[test]
fn spaces_in_the_file_stay_spaces_when_the_model_sends_tabs() {
    let content = "def f():\n    if x:\n        y()\n";
    let old = "\tif x:\n\t\ty()";
    let new = "\tif x:\n\t\tz()";
    assert_eq!(
        text(content, old, new),
        "def f():\n    if x:\n        z()\n"
    );
}

#[test]
fn inner_whitespace_differences_are_normalised() {
    let content = "let v = foo(a,  b);\nlet w = 2;\n";
    let old = "let v = foo(a, b);\nlet  w = 2;";
    assert_eq!(strategy(content, old, "x"), Strategy::Whitespace);
    assert_eq!(
        text(content, old, "let v = foo(a, c);\nlet w = 3;"),
        "let v = foo(a, c);\nlet w = 3;\n"
    );
}

#[test]
fn literal_escapes_are_undone_in_both_strings() {
    let content = "fn main() {\n    println!(\"hi\");\n}\n";
    let old = r#"fn main() {\n    println!(\"hi\");\n}"#;
    let new = r#"fn main() {\n    println!(\"bye\");\n}"#;
    let done = one(content, old, new).unwrap();
    assert!(done.how.unescaped);
    assert_eq!(done.text, "fn main() {\n    println!(\"bye\");\n}\n");
    assert!(done.how.note().unwrap().contains("literal escapes"));
}

#[test]
fn escapes_combine_with_indentation() {
    let content = "mod m {\n    fn f() {\n        g(\"a\");\n    }\n}\n";
    let old = r#"fn f() {\n    g(\"a\");\n}"#;
    let new = r#"fn f() {\n    g(\"b\");\n}"#;
    let done = one(content, old, new).unwrap();
    assert_eq!(done.how.strategy, Strategy::Indentation);
    assert!(done.how.unescaped);
    assert_eq!(
        done.text,
        "mod m {\n    fn f() {\n        g(\"b\");\n    }\n}\n"
    );
}

#[test]
fn a_match_that_is_not_unique_after_normalising_is_refused() {
    let content = "if a {\n    x();\n}\nif b {\n        x();\n}\n";
    let err = one(content, "x();\n", "y();\n").unwrap_err();
    // Exact `x();` occurs twice already.
    assert!(
        matches!(err, MatchError::Ambiguous { count: 2, .. }),
        "{err:?}"
    );
    let err = one(content, "  x();  \n}", "y();\n}").unwrap_err();
    match err {
        MatchError::Ambiguous {
            how, count, places, ..
        } => {
            assert_eq!(how.strategy, Strategy::Indentation);
            assert_eq!(count, 2);
            assert_eq!(places, [(2, 3), (5, 6)]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_looser_stage_is_not_tried_when_a_stricter_one_is_ambiguous() {
    // Two places differ only in trailing whitespace; a third matches only
    // ignoring indentation. Stage 3 finds two and refuses.
    let content = "a \nb\na\t\nb\n    a\n    b\n";
    let err = one(content, "a\nb", "c").unwrap_err();
    assert!(
        matches!(err, MatchError::Ambiguous { how, count: 2, .. } if how.strategy == Strategy::TrailingWhitespace),
        "{err:?}"
    );
}

#[test]
fn a_first_line_copied_without_indentation_is_shifted_alone() {
    // The file indents the method by 8 and its body by 12; the model sent
    // the body at 8 and the first line at 0.
    let content = "class A:\n        def f(self):\n            return 1\n";
    let old = "def f(self):\n        return 1";
    let new = "def f(self):\n        x = 1\n        return x";
    let done = one(content, old, new).unwrap();
    assert_eq!(done.how.strategy, Strategy::Indentation);
    assert_eq!(
        done.text,
        "class A:\n        def f(self):\n            x = 1\n            return x\n"
    );
}

#[test]
fn disagreeing_shifts_apply_per_line_or_refuse() {
    let content = "  a\n      b\nc\n";
    assert_eq!(text(content, "a\nb\n  c", "A\nB\n  C"), "  A\n      B\nC\n");
    let err = one(content, "a\nb\n  c", "A\nB").unwrap_err();
    assert_eq!(
        err,
        MatchError::InconsistentIndentation {
            first_line: 1,
            last_line: 3
        }
    );
}

#[test]
fn crlf_files_keep_crlf() {
    let content = "one\r\ntwo\r\nthree\r\n";
    let done = one(content, "one\ntwo", "1\n2\n2b").unwrap();
    assert_eq!(done.how.strategy, Strategy::LineEndings);
    assert_eq!(done.text, "1\r\n2\r\n2b\r\nthree\r\n");
    // A single-line match still writes new lines with CRLF.
    assert_eq!(text(content, "two", "2\n2b"), "one\r\n2\r\n2b\r\nthree\r\n");
    // Tolerant stages too.
    assert_eq!(text("  a\r\n  b\r\n", "a\nb", "x\ny"), "  x\r\n  y\r\n");
}

#[test]
fn lf_files_get_lf_even_when_the_model_sends_crlf() {
    assert_eq!(text("a\nb\n", "a\r\nb", "x\r\ny"), "x\ny\n");
}

#[test]
fn the_final_newline_is_kept_or_kept_absent() {
    assert_eq!(text("a\nb\n", "b\n", "c"), "a\nc\n");
    assert_eq!(text("a\nb", "b", "c\n"), "a\nc");
    assert_eq!(text("a\nb", "a\nb", "x\ny"), "x\ny");
    assert_eq!(text("a\r\nb\r\n", "b\r\n", "c"), "a\r\nc\r\n");
    // Removing whole lines in the middle leaves the end alone.
    assert_eq!(text("a\nb\nc", "b\n", ""), "a\nc");
    // Emptying a file leaves it empty.
    assert_eq!(text("a\n", "a\n", ""), "");
}

#[test]
fn whole_lines_are_removed_by_tolerant_stages() {
    assert_eq!(text("x\n  a  \n  b\ny\n", "a\nb\n", ""), "x\ny\n");
}

#[test]
fn a_miss_offers_the_closest_candidate() {
    let content = "fn main() {\n    let total = 1;\n    show(total);\n}\n";
    let err = one(content, "let totl = 1;\nshow(total);", "x").unwrap_err();
    match err {
        MatchError::NotFound {
            closest: Some(candidate),
            occurrences: Occurrences::One,
        } => {
            assert_eq!(candidate.first_line, 2);
            assert_eq!(candidate.lines, ["    let total = 1;", "    show(total);"]);
            let (line, file, model) = candidate.first_difference.unwrap();
            assert_eq!(
                (line, file.as_str(), model.as_str()),
                (2, "    let total = 1;", "let totl = 1;")
            );
        }
        other => panic!("{other:?}"),
    }
    let err = one(content, "nothing like it at all", "x").unwrap_err();
    assert_eq!(
        err,
        MatchError::NotFound {
            closest: None,
            occurrences: Occurrences::One
        }
    );
}

#[test]
fn whitespace_only_old_strings_are_not_matched_loosely() {
    let err = one("a\n\n\nb\n", "  \n  ", "x").unwrap_err();
    assert!(matches!(err, MatchError::NotFound { .. }), "{err:?}");
}
