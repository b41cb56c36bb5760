//! A streamed answer: committed block by block, the unfinished tail shown
//! as it is, and the same screen whether it came in pieces or at once.

use gyre_protocol::{Event, FinishReason};
use gyre_tui::transcript::Transcript;

use crate::support::*;

const ANSWER: &str = "## The fix\n\nThe parser **drops** the last line because `lines()` \
stops early.\n\n- read `src/parser.rs`\n- change the loop\n\n```rust\nfn parse(s: &str) -> \
Vec<&str> {\n    s.lines().collect()\n}\n```\n\nThen:\n\n1. run the tests:\n   ```sh\n   cargo \
test\n   ```\n   and read the output;\n2. commit.\n\n| step | time |\n|---|---|\n| build | 2 s |\n\n\
> Note: a *quote*\n> on two lines.\n";

/// `s` in pieces of `n` bytes (on char boundaries).
fn pieces(s: &str, n: usize) -> Vec<Event> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let mut end = n.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        out.push(text(&rest[..end]));
        rest = &rest[end..];
    }
    out
}

#[test]
fn half_finished_markdown_with_an_open_code_block() {
    let mut t = Transcript::new();
    t.push_user("Why does the parser drop the last line?");
    t.apply(&run_started(), at(0));
    let cut = ANSWER.find("    s.lines()").unwrap();
    apply_all(&mut t, &pieces(&ANSWER[..cut], 5), 10, 10);
    assert!(t.is_animating());
    insta::assert_snapshot!(
        "streaming_open_code_block",
        screen_text(&t, 60, 20, at(900))
    );
}

#[test]
fn streamed_in_pieces_or_at_once_the_screen_is_the_same() {
    let whole = {
        let mut t = Transcript::new();
        apply_all(&mut t, &[run_started(), text(ANSWER)], 0, 1);
        t.apply(&run_finished(FinishReason::Completed), at(5));
        screen_text(&t, 50, 30, at(10))
    };
    for size in [1, 3, 7, 16] {
        let mut t = Transcript::new();
        t.apply(&run_started(), at(0));
        apply_all(&mut t, &pieces(ANSWER, size), 1, 0);
        t.apply(&run_finished(FinishReason::Completed), at(5));
        assert_eq!(screen_text(&t, 50, 30, at(10)), whole, "pieces of {size}");
    }
    insta::assert_snapshot!("streaming_finished", whole);
}

#[test]
fn finished_code_blocks_are_highlighted_and_open_ones_are_not() {
    let mut t = Transcript::new();
    t.apply(&run_started(), at(0));
    t.apply(
        &text("```rust\nlet x = 1;\n```\n\n```rust\nlet y = 2;\n"),
        at(1),
    );
    let input = ratatui_textarea::TextArea::default();
    let screen = gyre_tui::view::Screen::new(&t, &input, at(2));
    let (buffer, _) = draw_buffer(&screen, 40, 10);
    let row_of = |needle: &str| {
        (0..buffer.area.height)
            .find(|&y| {
                (0..buffer.area.width)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect::<String>()
                    .contains(needle)
            })
            .unwrap()
    };
    let coloured = |y: u16| {
        (0..buffer.area.width).any(|x| matches!(buffer[(x, y)].fg, ratatui::style::Color::Rgb(..)))
    };
    assert!(coloured(row_of("let x")), "the closed block is highlighted");
    assert!(!coloured(row_of("let y")), "the open block is plain");
}

#[test]
fn text_after_a_tool_call_starts_a_new_cell_below_it() {
    let mut t = Transcript::new();
    apply_all(
        &mut t,
        &[
            run_started(),
            text("Let me look."),
            started("c1", "ls"),
            ready("c1", "ls", serde_json::json!({"path": "src"})),
            result(
                "c1",
                "ls",
                "ls src: 3 entries",
                "a\nb\nc",
                gyre_protocol::Outcome::Success,
            ),
            text("Three files."),
            run_finished(FinishReason::Completed),
        ],
        0,
        100,
    );
    assert_eq!(t.len(), 3);
    insta::assert_snapshot!("text_tool_text", screen_text(&t, 40, 10, at(1000)));
}
