//! The overlays: permission dialog, session picker, help, completion.

use gyre_protocol::{Event, ToolCall};
use gyre_tui::transcript::Transcript;
use gyre_tui::view::{
    CompletionItem, CompletionPopup, HelpEntry, Overlay, PermissionChoice, PermissionDialog,
    Screen, SessionEntry, SessionPicker,
};
use ratatui::buffer::Buffer;
use ratatui_textarea::TextArea;
use serde_json::json;

use crate::support::*;

fn request(call: ToolCall, always_rule: Option<&str>) -> Event {
    Event::PermissionRequested {
        request_id: "req-1".into(),
        call,
        reason: "`bash` asks before running commands (permission mode: ask)".into(),
        always_rule: always_rule.map(str::to_string),
    }
}

fn with_overlay(transcript: &Transcript, overlay: Overlay, width: u16, height: u16) -> Buffer {
    let input = TextArea::default();
    let mut screen = Screen::new(transcript, &input, at(2000));
    screen.overlay = Some(overlay);
    draw_buffer(&screen, width, height).0
}

fn busy_transcript(call: &ToolCall) -> Transcript {
    let mut t = Transcript::new();
    t.push_user("clean the build");
    apply_all(
        &mut t,
        &[
            run_started(),
            text("I will remove the build directory."),
            started(&call.id, &call.name),
            Event::ToolCallReady { call: call.clone() },
            request(call.clone(), None),
        ],
        0,
        100,
    );
    t
}

#[test]
fn the_permission_dialog_shows_the_always_rule_and_the_selection() {
    let call = ToolCall::new("c1", "bash", json!({"command": "rm -rf build"}).to_string());
    let t = busy_transcript(&call);
    let mut dialog =
        PermissionDialog::from_event(&request(call, Some("bash(rm -rf build)"))).unwrap();
    assert_eq!(dialog.choices().len(), 3);
    dialog.move_selection(1);
    assert_eq!(dialog.selected, PermissionChoice::AllowAlways);
    let buffer = with_overlay(&t, Overlay::Permission(&dialog), 80, 24);
    insta::assert_snapshot!("permission_dialog", text_of(&buffer));
    // The selected choice is highlighted, the others are not.
    let row = |needle: &str| {
        (0..24)
            .find(|&y| {
                (0..80)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect::<String>()
                    .contains(needle)
            })
            .unwrap()
    };
    let highlighted = |y: u16| (0..80).any(|x| buffer[(x, y)].bg == ratatui::style::Color::Cyan);
    assert!(highlighted(row("Always allow")));
    assert!(!highlighted(row("Allow once")));
    assert!(!highlighted(row("Deny")));
    dialog.move_selection(1);
    dialog.move_selection(1);
    assert_eq!(dialog.selected, PermissionChoice::AllowOnce, "wraps around");
}

#[test]
fn without_a_rule_always_is_not_offered() {
    let call = ToolCall::new(
        "c1",
        "web_fetch",
        json!({"url": "https://example.com"}).to_string(),
    );
    let mut dialog = PermissionDialog::from_event(&request(call, None)).unwrap();
    assert_eq!(
        dialog.choices(),
        [PermissionChoice::AllowOnce, PermissionChoice::Deny]
    );
    dialog.move_selection(-1);
    assert_eq!(dialog.selected, PermissionChoice::Deny);
}

#[test]
fn an_edit_permission_previews_the_diff() {
    let call = ToolCall::new(
        "c2",
        "edit",
        json!({"file_path": "src/main.rs", "old_string": "let x = 1;\n", "new_string": "let x = 2;\n"})
            .to_string(),
    );
    let t = busy_transcript(&call);
    let dialog = PermissionDialog::from_event(&request(call, Some("edit(src/**)"))).unwrap();
    let buffer = with_overlay(&t, Overlay::Permission(&dialog), 80, 24);
    insta::assert_snapshot!("permission_edit_preview", text_of(&buffer));
    // At a size too small for the preview the choices still show.
    let small = text_of(&with_overlay(&t, Overlay::Permission(&dialog), 40, 8));
    assert!(small.contains("Deny"), "{small}");
}

fn picker() -> SessionPicker {
    let entries = [
        (
            "0196a1b2-aaaa",
            "2026-05-01 14:02",
            "Fix the parser's last line",
        ),
        (
            "0196a0ff-bbbb",
            "2026-04-30 09:15",
            "Add the session picker",
        ),
        ("01969e00-cccc", "2026-04-28 18:40", "Parser benchmarks"),
        ("01969d11-dddd", "2026-04-27 11:05", "Write the README"),
    ];
    SessionPicker::new(
        entries
            .iter()
            .map(|(id, updated, title)| SessionEntry {
                id: id.to_string(),
                updated: updated.to_string(),
                title: title.to_string(),
            })
            .collect(),
    )
}

#[test]
fn the_session_picker_filters_and_selects() {
    let t = Transcript::new();
    let mut picker = picker();
    picker.move_selection(1);
    insta::assert_snapshot!(
        "session_picker",
        text_of(&with_overlay(&t, Overlay::SessionPicker(&picker), 80, 16))
    );
    picker.set_filter("PARSER");
    assert_eq!(picker.visible(), [0, 2]);
    picker.move_selection(5);
    assert_eq!(picker.selected_entry().unwrap().id, "01969e00-cccc");
    insta::assert_snapshot!(
        "session_picker_filtered",
        text_of(&with_overlay(&t, Overlay::SessionPicker(&picker), 80, 16))
    );
    picker.set_filter("nothing like it");
    assert!(picker.selected_entry().is_none());
    let empty = text_of(&with_overlay(&t, Overlay::SessionPicker(&picker), 80, 16));
    assert!(empty.contains("no session matches"));
}

#[test]
fn help_and_completion_popups() {
    let t = Transcript::new();
    let entries = [
        HelpEntry {
            keys: "Enter",
            description: "send the prompt (queued while a run is busy)",
        },
        HelpEntry {
            keys: "Esc",
            description: "interrupt the running turn",
        },
        HelpEntry {
            keys: "Ctrl-C Ctrl-C",
            description: "quit",
        },
        HelpEntry {
            keys: "/resume",
            description: "pick a stored session to continue",
        },
    ];
    insta::assert_snapshot!(
        "help",
        text_of(&with_overlay(&t, Overlay::Help(&entries), 60, 12))
    );
    let popup = CompletionPopup {
        items: ["src/main.rs", "src/parser.rs", "src/lib.rs"]
            .iter()
            .map(|p| CompletionItem {
                label: format!("@{p}"),
                detail: "file".into(),
            })
            .collect(),
        selected: 1,
    };
    insta::assert_snapshot!(
        "completion",
        text_of(&with_overlay(&t, Overlay::Completion(&popup), 50, 12))
    );
}

#[test]
fn a_subagents_permission_request_gets_a_dialog_too() {
    let call = ToolCall {
        id: "toolu_child".into(),
        name: "write".into(),
        arguments: json!({"file_path": "kid.txt", "content": "x"}).to_string(),
        signature: None,
    };
    let nested = Event::Subagent {
        call_id: "toolu_task".into(),
        task_id: "child-session".into(),
        agent: "explore".into(),
        inner: Box::new(Event::Subagent {
            call_id: "toolu_task2".into(),
            task_id: "grandchild-session".into(),
            agent: "build".into(),
            inner: Box::new(request(call, Some("write(kid.txt)"))),
        }),
    };
    let dialog = PermissionDialog::from_event(&nested).expect("a dialog for the nested request");
    assert_eq!(dialog.call.id, "toolu_child");
    assert_eq!(dialog.always_rule.as_deref(), Some("write(kid.txt)"));
}
