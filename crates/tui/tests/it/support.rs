//! Helpers: real `gyre_protocol` events, a fixed clock, and the screen as
//! text.

use std::sync::OnceLock;
use std::time::Duration;

use gyre_protocol::{
    Event, FinishReason, Outcome, RunSummary, StopReason, ToolCall, ToolResult, Usage,
};
use gyre_tui::transcript::Transcript;
use gyre_tui::view::{Drawn, Screen, draw};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::{Buffer, CellWidth};
use ratatui_textarea::TextArea;
use tokio::time::Instant;

/// The tests' time zero (one per process, so offsets are stable).
pub fn t0() -> Instant {
    static T0: OnceLock<Instant> = OnceLock::new();
    *T0.get_or_init(Instant::now)
}

/// `ms` milliseconds after [`t0`].
pub fn at(ms: u64) -> Instant {
    t0() + Duration::from_millis(ms)
}

/// Draws `screen` on a `width`×`height` test terminal; returns the buffer.
pub fn draw_buffer(screen: &Screen, width: u16, height: u16) -> (Buffer, Drawn) {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let mut drawn = None;
    terminal
        .draw(|frame| drawn = Some(draw(frame, screen)))
        .unwrap();
    (terminal.backend().buffer().clone(), drawn.unwrap())
}

/// The buffer's rows as text, trailing spaces kept inside quotes.
pub fn text_of(buffer: &Buffer) -> String {
    let width = usize::from(buffer.area.width);
    let mut out = String::new();
    for row in buffer.content.chunks(width.max(1)) {
        let mut line = String::new();
        let mut skip = 0u16;
        for cell in row {
            if skip == 0 {
                line.push_str(cell.symbol());
            }
            skip = skip.max(cell.cell_width()).saturating_sub(1);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The whole screen of `transcript` (empty input) at `now`, as text.
pub fn screen_text(transcript: &Transcript, width: u16, height: u16, now: Instant) -> String {
    let input = TextArea::default();
    let screen = Screen::new(transcript, &input, now);
    text_of(&draw_buffer(&screen, width, height).0)
}

pub fn run_started() -> Event {
    Event::RunStarted {
        session_id: "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b".into(),
        model: "claude-sonnet-4-5".into(),
        cwd: "/work/demo".into(),
        tools: vec!["bash".into(), "edit".into()],
    }
}

pub fn text(s: &str) -> Event {
    Event::TextDelta { text: s.into() }
}

pub fn reasoning(s: &str) -> Event {
    Event::ReasoningDelta { text: s.into() }
}

pub fn started(id: &str, name: &str) -> Event {
    Event::ToolCallStarted {
        call_id: id.into(),
        name: name.into(),
    }
}

pub fn ready(id: &str, name: &str, args: serde_json::Value) -> Event {
    Event::ToolCallReady {
        call: ToolCall::new(id, name, args.to_string()),
    }
}

pub fn progress(id: &str, output: &str) -> Event {
    Event::ToolProgress {
        call_id: id.into(),
        output: output.into(),
    }
}

pub fn result(id: &str, name: &str, title: &str, text: &str, outcome: Outcome) -> Event {
    Event::ToolResult {
        title: title.into(),
        result: ToolResult::text(id, name, text, outcome),
    }
}

pub fn turn_completed(input: u64, output: u64, cost: f64) -> Event {
    Event::TurnCompleted {
        turn: 1,
        usage: Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        },
        stop_reason: StopReason::EndTurn,
        cost_usd: Some(cost),
    }
}

pub fn run_finished(reason: FinishReason) -> Event {
    Event::RunFinished(RunSummary {
        reason,
        final_text: String::new(),
        num_turns: 1,
        usage: Usage::default(),
        cost_usd: 0.0,
        duration_ms: 1000,
        error: None,
    })
}

/// Applies `events` in order, `step_ms` apart from `start_ms`.
pub fn apply_all(transcript: &mut Transcript, events: &[Event], start_ms: u64, step_ms: u64) {
    for (i, event) in events.iter().enumerate() {
        transcript.apply(event, at(start_ms + i as u64 * step_ms));
    }
}
