//! The whole screen: 80×24, resizing, scrolling, reasoning, the todo panel
//! and queued prompts, a resumed session, plain colours, a large transcript.

use std::sync::Arc;
use std::time::Duration;

use gyre_protocol::{
    CompactBoundary, CompactTrigger, FinishReason, Message, Origin, Outcome, Part, Role, Todo,
    TodoStatus, ToolCall, ToolResult,
};
use gyre_tui::palette::{ColorMode, Palette};
use gyre_tui::transcript::{NoticeKind, Transcript};
use gyre_tui::view::{Screen, ScrollState};
use ratatui::style::Color;
use ratatui_textarea::TextArea;
use serde_json::json;

use crate::support::*;

fn session() -> Transcript {
    let mut t = Transcript::new();
    t.status_mut().agent = "build".into();
    t.push_user("The tests fail after the refactor. Can you fix them?");
    apply_all(
        &mut t,
        &[
            run_started(),
            reasoning("The failure is probably in the parser.\nI should run the tests first."),
            text("Let me run the tests first."),
            started("c1", "bash"),
            ready("c1", "bash", json!({"command": "cargo test -q"})),
            progress("c1", "running 12 tests\n........F...\n"),
            result("c1", "bash", "cargo test -q: exit 101", "…", Outcome::Error),
            started("c2", "edit"),
            ready(
                "c2",
                "edit",
                json!({"file_path": "src/parser.rs", "old_string": "s.split('\\n')", "new_string": "s.lines()"}),
            ),
            result(
                "c2",
                "edit",
                "edit src/parser.rs: 1 replacement",
                "ok",
                Outcome::Success,
            ),
            text("Fixed: `parse` now uses `lines()`, which keeps the **last** line."),
            turn_completed(20_000, 900, 0.0312),
            run_finished(FinishReason::Completed),
        ],
        0,
        250,
    );
    t
}

#[test]
fn the_whole_screen_at_80_by_24() {
    let t = session();
    insta::assert_snapshot!("screen_80x24", screen_text(&t, 80, 24, at(5000)));
}

#[test]
fn a_resize_reflows_the_transcript() {
    let t = session();
    let wide = screen_text(&t, 80, 24, at(5000));
    let narrow = screen_text(&t, 40, 12, at(5000));
    insta::assert_snapshot!("screen_40x12", narrow);
    // Back to the first size: the same screen (caches are per width).
    assert_eq!(screen_text(&t, 80, 24, at(5000)), wide);
}

#[test]
fn reasoning_collapsed_and_expanded() {
    let mut t = session();
    let collapsed = screen_text(&t, 60, 30, at(5000));
    t.toggle_reasoning();
    let expanded = screen_text(&t, 60, 30, at(5000));
    insta::assert_snapshot!("reasoning_collapsed", collapsed);
    insta::assert_snapshot!("reasoning_expanded", expanded);
    t.toggle_reasoning();
    assert_eq!(screen_text(&t, 60, 30, at(5000)), collapsed);
}

#[test]
fn todos_queued_prompts_and_input() {
    let t = session();
    let todos = [
        ("Run the tests", TodoStatus::Completed),
        ("Fix the parser", TodoStatus::InProgress),
        ("Update the changelog", TodoStatus::Pending),
    ]
    .map(|(content, status)| Todo {
        content: content.into(),
        status,
    });
    let queued = ["and then commit it".to_string()];
    let mut input = TextArea::default();
    input.insert_str("also check the docs\nplease");
    let mut screen = Screen::new(&t, &input, at(5000));
    screen.todos = Some(&todos);
    screen.queued = &queued;
    insta::assert_snapshot!("panels", text_of(&draw_buffer(&screen, 60, 24).0));
}

#[test]
fn scrolling_up_shows_older_rows_and_clamps_at_the_top() {
    let t = session();
    let input = TextArea::default();
    let mut screen = Screen::new(&t, &input, at(5000));
    screen.scroll = ScrollState { offset: 4 };
    let (buffer, drawn) = draw_buffer(&screen, 60, 14);
    assert_eq!(drawn.scroll.offset, 4);
    assert_eq!(drawn.transcript_rows, 10);
    insta::assert_snapshot!("scrolled", text_of(&buffer));
    screen.scroll = ScrollState { offset: 10_000 };
    let (buffer, drawn) = draw_buffer(&screen, 60, 14);
    assert!(drawn.scroll.offset < 100, "clamped: {:?}", drawn.scroll);
    assert!(text_of(&buffer).starts_with("› The tests fail"));
}

#[test]
fn notices_of_the_app_and_the_loop() {
    let mut t = Transcript::new();
    t.push_notice(NoticeKind::Info, "Queued: run the linter");
    t.push_notice(
        NoticeKind::Command,
        "Session cost: $0.42\nTokens: 12k in, 3k out",
    );
    t.push_notice(NoticeKind::Warning, "MCP server `docs` is not connected");
    t.push_notice(NoticeKind::Error, "The provider rejected the API key.");
    apply_all(
        &mut t,
        &[
            gyre_protocol::Event::CompactionStarted {
                trigger: CompactTrigger::Auto,
            },
            gyre_protocol::Event::CompactBoundary {
                message_id: "m9".into(),
                boundary: CompactBoundary {
                    trigger: CompactTrigger::Auto,
                    pre_tokens: 150_000,
                    post_tokens: 12_000,
                    kept_from: None,
                },
            },
        ],
        0,
        10,
    );
    insta::assert_snapshot!("notices", screen_text(&t, 60, 14, at(100)));
}

#[test]
fn a_stored_session_is_shown_as_it_ran() {
    let call = ToolCall::new("c1", "bash", json!({"command": "ls"}).to_string());
    let pending = ToolCall::new("c2", "bash", json!({"command": "make"}).to_string());
    let messages: Vec<Arc<Message>> = vec![
        Message::user_text("u1", "list the files"),
        Message::new(
            "a1",
            Role::Assistant,
            vec![
                Part::Reasoning {
                    text: "Use ls.".into(),
                    signature: None,
                    redacted: false,
                },
                Part::text("Listing them."),
                Part::ToolCall(call),
            ],
        ),
        Message::new(
            "r1",
            Role::User,
            vec![Part::ToolResult(ToolResult::text(
                "c1",
                "bash",
                "a\nb",
                Outcome::Success,
            ))],
        ),
        Message::user_text("g1", "<system-reminder>hidden</system-reminder>")
            .with_origin(Origin::Gyre),
        Message::new("a2", Role::Assistant, vec![Part::ToolCall(pending)]),
    ]
    .into_iter()
    .map(Arc::new)
    .collect();
    let t = Transcript::from_messages(&messages);
    let screen = screen_text(&t, 50, 16, at(0));
    assert!(!screen.contains("hidden"));
    insta::assert_snapshot!("resumed", screen);
}

#[test]
fn plain_mode_uses_no_colours() {
    let mut t = Transcript::with_palette(Palette::new(ColorMode::Plain));
    apply_all(
        &mut t,
        &[
            run_started(),
            text("```rust\nfn main() {}\n```\n"),
            ready(
                "e",
                "edit",
                json!({"file_path": "a", "old_string": "x\n", "new_string": "y\n"}),
            ),
            result("e", "edit", "edit a", "ok", Outcome::Success),
            run_finished(FinishReason::Completed),
        ],
        0,
        10,
    );
    let input = TextArea::default();
    let (buffer, _) = draw_buffer(&Screen::new(&t, &input, at(100)), 40, 12);
    for cell in buffer.content.iter() {
        assert_eq!((cell.fg, cell.bg), (Color::Reset, Color::Reset), "{cell:?}");
    }
}

#[test]
fn tiny_sizes_with_every_overlay_do_not_panic() {
    let t = session();
    let input = TextArea::default();
    let dialog = gyre_tui::view::PermissionDialog {
        request_id: "r".into(),
        call: ToolCall::new(
            "c",
            "edit",
            json!({"file_path": "a", "old_string": "x", "new_string": "y"}).to_string(),
        ),
        reason: "asks".into(),
        always_rule: Some("edit(a)".into()),
        selected: Default::default(),
    };
    let picker = gyre_tui::view::SessionPicker::new(vec![gyre_tui::view::SessionEntry {
        id: "0196".into(),
        updated: "now".into(),
        title: "t".into(),
    }]);
    let popup = gyre_tui::view::CompletionPopup {
        items: vec![gyre_tui::view::CompletionItem {
            label: "@a".into(),
            detail: "file".into(),
        }],
        selected: 3,
    };
    let help = [gyre_tui::view::HelpEntry {
        keys: "Esc",
        description: "interrupt",
    }];
    let overlays = [
        None,
        Some(gyre_tui::view::Overlay::Permission(&dialog)),
        Some(gyre_tui::view::Overlay::SessionPicker(&picker)),
        Some(gyre_tui::view::Overlay::Completion(&popup)),
        Some(gyre_tui::view::Overlay::Help(&help)),
    ];
    let todos = [Todo {
        content: "x".into(),
        status: TodoStatus::Pending,
    }];
    let queued = ["q".to_string()];
    for overlay in overlays {
        for (w, h) in [(1, 1), (20, 5), (2, 30), (0, 0), (200, 3), (3, 3)] {
            let mut screen = Screen::new(&t, &input, at(5000));
            screen.overlay = overlay;
            screen.todos = Some(&todos);
            screen.queued = &queued;
            screen.scroll = ScrollState { offset: 3 };
            draw_buffer(&screen, w, h);
        }
    }
}

#[test]
fn a_frame_of_a_thousand_messages_is_fast() {
    use gyre_tui::view::bench::{FrameBench, sample_transcript};
    let t = sample_transcript(1_000);
    assert!(t.len() >= 1_000);
    let mut bench = FrameBench::new(t, 120, 40);
    let first = bench.draw();
    let best = (0..5).map(|_| bench.draw()).min().unwrap();
    assert!(
        best <= first * 2,
        "cached frames are not slower: {best:?} vs {first:?}"
    );
    // Generous for a debug build on a shared machine; the release number
    // is in bench/ (tui_frame).
    assert!(best < Duration::from_millis(50), "{best:?}");
}
