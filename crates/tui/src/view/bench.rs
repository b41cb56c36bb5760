//! A benchmark entry point: a large transcript and the time to draw it.
//!
//! `gyre-bench`'s `tui_frame` group and tests use it; it is public so the
//! numbers come from the same code the app runs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use gyre_protocol::{Message, Outcome, Part, Role, ToolCall, ToolResult};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui_textarea::TextArea;

use super::{Screen, draw};
use crate::transcript::Transcript;

/// A session of `n_messages` messages: prompts, Markdown answers with code,
/// tool calls (bash, an edit) and their results, as a resumed session has.
pub fn sample_messages(n_messages: usize) -> Vec<Arc<Message>> {
    let mut messages = Vec::with_capacity(n_messages);
    let mut i = 0;
    while messages.len() < n_messages {
        let message = match messages.len() % 4 {
            0 => Message::user_text(
                format!("u{i}"),
                format!("Please look at module {i} and fix the failing test."),
            ),
            1 => Message::new(
                format!("a{i}"),
                Role::Assistant,
                vec![
                    Part::text(format!(
                        "## Step {i}\n\nThe test fails because `parse` **drops** the last line. \
                         Here is the fix:\n\n```rust\nfn parse(s: &str) -> Vec<&str> {{\n    \
                         s.lines().collect()\n}}\n```\n\n- first point\n- second point with a \
                         longer explanation that wraps\n"
                    )),
                    Part::ToolCall(ToolCall::new(
                        format!("c{i}"),
                        "edit",
                        format!(
                            r#"{{"file_path":"src/m{i}.rs","old_string":"a\nb\nc\n","new_string":"a\nB\nc\n"}}"#
                        ),
                    )),
                ],
            ),
            2 => Message::new(
                format!("r{i}"),
                Role::User,
                vec![Part::ToolResult(ToolResult::text(
                    format!("c{i}"),
                    "edit",
                    "Edited src/m.rs",
                    Outcome::Success,
                ))],
            ),
            _ => Message::new(
                format!("f{i}"),
                Role::Assistant,
                vec![Part::text("Done: the test passes now.")],
            ),
        };
        messages.push(Arc::new(message));
        i += 1;
    }
    messages
}

/// A transcript of `n_messages` messages (see [`sample_messages`]).
pub fn sample_transcript(n_messages: usize) -> Transcript {
    Transcript::from_messages(&sample_messages(n_messages))
}

/// The time to draw one `width`×`height` frame of `transcript`, after a
/// first draw that fills the caches (as the app's every frame but the
/// first after a resize).
pub fn render_frame(transcript: &Transcript, width: u16, height: u16) -> Duration {
    let Ok(mut terminal) = Terminal::new(TestBackend::new(width, height));
    let input = TextArea::default();
    let now = Instant::now();
    let screen = Screen::new(transcript, &input, now);
    let _ = terminal.draw(|frame| {
        draw(frame, &screen);
    });
    let start = Instant::now();
    let _ = terminal.draw(|frame| {
        draw(frame, &screen);
    });
    start.elapsed()
}
