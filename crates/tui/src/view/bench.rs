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

/// A terminal-less screen to time frames on: a [`TestBackend`] of a given
/// size, the transcript, an empty input. Frames go through ratatui's
/// `Terminal::draw` (buffer diff included), as the app's do; only the
/// terminal's own output is left out.
pub struct FrameBench {
    terminal: Terminal<TestBackend>,
    transcript: Transcript,
    input: TextArea<'static>,
    /// The screen's clock (spinners read it), not the measurement's.
    start: tokio::time::Instant,
    frames: u32,
}

impl std::fmt::Debug for FrameBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameBench")
            .field("transcript", &self.transcript)
            .finish_non_exhaustive()
    }
}

impl FrameBench {
    pub fn new(transcript: Transcript, width: u16, height: u16) -> Self {
        let Ok(terminal) = Terminal::new(TestBackend::new(width, height));
        Self {
            terminal,
            transcript,
            input: TextArea::default(),
            start: tokio::time::Instant::now(),
            frames: 0,
        }
    }

    /// Draws one frame; returns how long it took. The clock of the screen
    /// moves 16 ms a frame (so spinners turn).
    pub fn draw(&mut self) -> Duration {
        self.frames += 1;
        let now = self.start + Duration::from_millis(16 * u64::from(self.frames));
        let screen = Screen::new(&self.transcript, &self.input, now);
        let started = Instant::now();
        let _ = self.terminal.draw(|frame| {
            draw(frame, &screen);
        });
        started.elapsed()
    }

    /// Resizes the screen (the next frame lays the visible cells out anew).
    pub fn resize(&mut self, width: u16, height: u16) {
        self.terminal.backend_mut().resize(width, height);
    }

    /// The transcript, to apply events between frames.
    pub fn transcript_mut(&mut self) -> &mut Transcript {
        &mut self.transcript
    }
}
