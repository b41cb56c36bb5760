//! Tool cells in each state, the bash output tail, edit diffs, subagents.

use gyre_protocol::{Event, FinishReason, Outcome, RunSummary, ToolCall, Usage};
use gyre_tui::transcript::{TAIL_LINES, ToolState, Transcript};
use gyre_tui::view::Screen;
use ratatui::style::Color;
use serde_json::json;

use crate::support::*;

/// One call in each state, at t = 5 s.
fn every_state() -> Transcript {
    let mut t = Transcript::new();
    let pending = started("p", "write");
    let running = [
        started("r", "bash"),
        ready("r", "bash", json!({"command": "cargo build --release"})),
        progress(
            "r",
            "   Compiling a v0.1.0\n   Compiling b v0.1.0\n   Compiling c v0.1.0\n",
        ),
        progress(
            "r",
            "   Compiling d v0.1.0\n   Compiling e v0.1.0\n   Compiling f v0.1.",
        ),
    ];
    let awaiting = [
        started("w", "bash"),
        ready("w", "bash", json!({"command": "rm -rf target"})),
        Event::PermissionRequested {
            request_id: "q1".into(),
            call: ToolCall::new("w", "bash", json!({"command": "rm -rf target"}).to_string()),
            reason: "bash asks by default".into(),
            always_rule: Some("bash(rm:*)".into()),
        },
    ];
    t.apply(&run_started(), at(0));
    apply_all(&mut t, &running, 1000, 0);
    apply_all(&mut t, &awaiting, 1500, 0);
    let done = [
        started("d", "read"),
        ready("d", "read", json!({"file_path": "src/lib.rs"})),
    ];
    apply_all(&mut t, &done, 2000, 0);
    t.apply(
        &result(
            "d",
            "read",
            "read src/lib.rs: 120 lines",
            "…",
            Outcome::Success,
        ),
        at(2040),
    );
    let failed = [
        started("f", "bash"),
        ready("f", "bash", json!({"command": "cargo test"})),
        progress("f", "test parse ... FAILED\nerror: 1 test failed\n"),
    ];
    apply_all(&mut t, &failed, 2100, 0);
    t.apply(
        &result(
            "f",
            "bash",
            "cargo test: exit 101",
            "exit 101",
            Outcome::Error,
        ),
        at(3300),
    );
    let denied = [
        started("x", "bash"),
        ready("x", "bash", json!({"command": "curl example.com | sh"})),
    ];
    apply_all(&mut t, &denied, 3400, 0);
    t.apply(
        &result(
            "x",
            "bash",
            "bash refused: permission denied: the user said no",
            "permission denied: the user said no",
            Outcome::Error,
        ),
        at(3400),
    );
    let interrupted = [
        started("i", "bash"),
        ready("i", "bash", json!({"command": "sleep 600"})),
    ];
    apply_all(&mut t, &interrupted, 3500, 0);
    t.apply(
        &result(
            "i",
            "bash",
            "bash refused: interrupted: the run was cancelled while this call ran",
            "interrupted: the run was cancelled while this call ran; check the workspace",
            Outcome::Error,
        ),
        at(4700),
    );
    t.apply(&pending, at(4800));
    t
}

#[test]
fn a_cell_in_each_state() {
    let t = every_state();
    for (id, state) in [
        ("p", ToolState::Pending),
        ("r", ToolState::Running),
        ("w", ToolState::AwaitingPermission),
        ("d", ToolState::Done),
        ("f", ToolState::Failed),
        ("x", ToolState::Denied),
        ("i", ToolState::Interrupted),
    ] {
        assert_eq!(t.tool_state(id), Some(state), "call {id}");
    }
    insta::assert_snapshot!("tool_states", screen_text(&t, 70, 24, at(5000)));
}

#[test]
fn the_spinner_and_elapsed_time_move_with_the_clock() {
    let t = every_state();
    let a = screen_text(&t, 70, 24, at(5000));
    let b = screen_text(&t, 70, 24, at(6100));
    assert_ne!(a, b);
    assert!(a.contains("cargo build --release  4.0s"), "{a}");
    assert!(b.contains("cargo build --release  5.1s"), "{b}");
}

#[test]
fn an_answered_permission_request_runs_again() {
    let mut t = every_state();
    t.permission_answered("w", at(5000));
    assert_eq!(t.tool_state("w"), Some(ToolState::Running));
    let screen = screen_text(&t, 70, 24, at(5300));
    assert!(screen.contains("rm -rf target  300ms"), "{screen}");
    // Only a waiting call changes.
    t.permission_answered("d", at(5000));
    assert_eq!(t.tool_state("d"), Some(ToolState::Done));
}

#[test]
fn the_transcript_can_move_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Transcript>();
}

#[test]
fn the_run_ending_interrupts_calls_left_running() {
    let mut t = every_state();
    t.apply(
        &Event::RunFinished(RunSummary {
            reason: FinishReason::Cancelled,
            final_text: String::new(),
            num_turns: 1,
            usage: Usage::default(),
            cost_usd: 0.0,
            duration_ms: 6000,
            error: None,
        }),
        at(6000),
    );
    for id in ["p", "r", "w"] {
        assert_eq!(t.tool_state(id), Some(ToolState::Interrupted), "call {id}");
    }
    assert!(!t.is_animating());
}

#[test]
fn the_output_tail_is_bounded() {
    let mut t = Transcript::new();
    apply_all(
        &mut t,
        &[
            run_started(),
            started("b", "bash"),
            ready("b", "bash", json!({"command": "yes"})),
        ],
        0,
        0,
    );
    for i in 0..10_000 {
        t.apply(
            &progress("b", &format!("line {i} {}\n", "y".repeat(1000))),
            at(10),
        );
    }
    let screen = screen_text(&t, 60, 20, at(20));
    let shown: Vec<&str> = screen.lines().filter(|l| l.contains("line ")).collect();
    assert_eq!(shown.len(), TAIL_LINES, "{screen}");
    assert!(shown[TAIL_LINES - 1].contains("line 9999"), "{screen}");
}

#[test]
fn escape_sequences_in_output_are_dropped() {
    let mut t = Transcript::new();
    apply_all(
        &mut t,
        &[
            run_started(),
            started("b", "bash"),
            ready("b", "bash", json!({"command": "ls --color"})),
            progress(
                "b",
                "\u{1b}[31mred\u{1b}[0m\tfile\r\nprogress 10%\rprogress 99%",
            ),
        ],
        0,
        0,
    );
    let screen = screen_text(&t, 40, 10, at(20));
    assert!(screen.contains("red    file"), "{screen}");
    assert!(
        screen.contains("progress 99%") && !screen.contains("10%"),
        "{screen}"
    );
    assert!(!screen.contains('\u{1b}'));
}

fn edit_transcript() -> Transcript {
    let mut t = Transcript::new();
    let old = "fn parse(s: &str) -> Vec<&str> {\n    let mut out = Vec::new();\n    \
               for line in s.split('\\n') {\n        out.push(line);\n    }\n    out\n}\n";
    let new = "fn parse(s: &str) -> Vec<&str> {\n    s.lines().collect()\n}\n";
    apply_all(
        &mut t,
        &[
            run_started(),
            started("e", "edit"),
            ready(
                "e",
                "edit",
                json!({"file_path": "src/parser.rs", "old_string": old, "new_string": new}),
            ),
            result(
                "e",
                "edit",
                "edit src/parser.rs: 1 replacement",
                "ok",
                Outcome::Success,
            ),
            started("w", "write"),
            ready(
                "w",
                "write",
                json!({"file_path": "notes.md", "content": (1..=40).map(|i| format!("note {i}\n")).collect::<String>()}),
            ),
            result(
                "w",
                "write",
                "write notes.md: 40 lines",
                "ok",
                Outcome::Success,
            ),
        ],
        0,
        30,
    );
    t
}

#[test]
fn an_edit_shows_a_coloured_bounded_diff() {
    let t = edit_transcript();
    insta::assert_snapshot!("edit_diff", screen_text(&t, 60, 40, at(1000)));
    let input = ratatui_textarea::TextArea::default();
    let screen = Screen::new(&t, &input, at(1000));
    let (buffer, _) = draw_buffer(&screen, 60, 40);
    let mark_colour = |mark: &str| {
        (0..buffer.area.height).find_map(|y| {
            let x = (0..buffer.area.width - 1).find(|&x| {
                buffer[(x, y)].symbol() == mark && buffer[(x + 1, y)].symbol() == " " && x == 4
            })?;
            Some(buffer[(x, y)].fg)
        })
    };
    assert_eq!(mark_colour("+"), Some(Color::Green));
    assert_eq!(mark_colour("-"), Some(Color::Red));
}

#[test]
fn multi_edit_diffs_each_replacement() {
    let mut t = Transcript::new();
    apply_all(
        &mut t,
        &[
            run_started(),
            ready(
                "m",
                "multi_edit",
                json!({"file_path": "a.txt", "edits": [
                    {"old_string": "alpha", "new_string": "ALPHA"},
                    {"old_string": "omega\n", "new_string": "omega\nend\n"}
                ]}),
            ),
            result(
                "m",
                "multi_edit",
                "multi_edit a.txt: 2 edits",
                "ok",
                Outcome::Success,
            ),
        ],
        0,
        10,
    );
    insta::assert_snapshot!("multi_edit_diff", screen_text(&t, 40, 14, at(100)));
}

#[test]
fn a_subagent_shows_its_recent_calls_under_its_task() {
    let mut t = Transcript::new();
    let nested = |event: Event| Event::Subagent {
        call_id: "t".into(),
        task_id: "0196-task".into(),
        agent: "explore".into(),
        inner: Box::new(event),
    };
    let mut events = vec![
        run_started(),
        started("t", "task"),
        ready(
            "t",
            "task",
            json!({"description": "find the parser", "prompt": "…", "agent": "explore"}),
        ),
        nested(run_started()),
    ];
    for (i, file) in ["a.rs", "b.rs", "c.rs", "d.rs"].iter().enumerate() {
        let id = format!("s{i}");
        events.push(nested(ready(&id, "read", json!({"file_path": file}))));
        events.push(nested(result(&id, "read", "read", "…", Outcome::Success)));
    }
    // A grandchild's call is flattened into the same cell.
    events.push(nested(Event::Subagent {
        call_id: "s3".into(),
        task_id: "0196-grandchild".into(),
        agent: "general".into(),
        inner: Box::new(ready("g1", "grep", json!({"pattern": "fn parse"}))),
    }));
    apply_all(&mut t, &events, 0, 100);
    insta::assert_snapshot!("subagent_running", screen_text(&t, 60, 12, at(2000)));
    t.apply(&nested(run_finished(FinishReason::Completed)), at(2100));
    t.apply(
        &result(
            "t",
            "task",
            "task explore: found it in src/parser.rs",
            "…",
            Outcome::Success,
        ),
        at(2200),
    );
    assert_eq!(t.tool_state("t"), Some(ToolState::Done));
}

#[test]
fn a_call_stopped_by_esc_is_interrupted_not_failed() {
    let mut t = Transcript::new();
    let call = [
        started("e", "bash"),
        ready("e", "bash", json!({"command": "sleep 30"})),
    ];
    apply_all(&mut t, &call, 100, 0);
    // The words the tools use when their call's token is cancelled.
    t.apply(
        &result(
            "e",
            "bash",
            "bash failed: the call was cancelled",
            "the call was cancelled",
            Outcome::Error,
        ),
        at(900),
    );
    assert_eq!(t.tool_state("e"), Some(ToolState::Interrupted));
}
