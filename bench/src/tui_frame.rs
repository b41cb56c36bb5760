//! The `tui_frame` group: drawing the terminal UI's frame (gyre-tui's
//! view) of a 1,000-message session at 120×40, in-process, into ratatui's
//! `TestBackend` (no terminal output: what is measured is gyre's layout and
//! ratatui's buffer diff).
//!
//! Rows: a frame with warm caches (what the app draws on every event and
//! tick), a frame right after a resize (every visible cell laid out anew
//! at the new width), and a frame while an answer streams (one text delta
//! applied, then the frame). One warm-up frame each, not recorded.

use crate::args::Options;
use crate::groups::{progress, summary};
use crate::report::{Report, Row, Unit};

use gyre_protocol::Event;
use gyre_tui::view::bench::{FrameBench, sample_transcript};

const MESSAGES: usize = 1_000;
const WIDTH: u16 = 120;
const HEIGHT: u16 = 40;
/// Frames timed per row (each takes about a millisecond or less).
const FRAMES: usize = 200;

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub fn tui_frame(report: &mut Report, _options: &Options) {
    progress(&format!("tui frames ×{FRAMES} per row"));
    let mut bench = FrameBench::new(sample_transcript(MESSAGES), WIDTH, HEIGHT);
    bench.draw();
    let warm: Vec<f64> = (0..FRAMES).map(|_| ms(bench.draw())).collect();

    let resized: Vec<f64> = (0..FRAMES)
        .map(|i| {
            bench.resize(WIDTH - (i % 2) as u16, HEIGHT);
            ms(bench.draw())
        })
        .collect();
    bench.resize(WIDTH, HEIGHT);

    let start = Event::RunStarted {
        session_id: "bench".into(),
        model: "mock".into(),
        cwd: "/".into(),
        tools: Vec::new(),
    };
    let now = tokio::time::Instant::now();
    bench.transcript_mut().apply(&start, now);
    bench.draw();
    let streaming: Vec<f64> = (0..FRAMES)
        .map(|i| {
            let text = match i % 25 {
                0 => "\n\n".to_string(),
                _ => format!("word{i} and `code` "),
            };
            bench
                .transcript_mut()
                .apply(&Event::TextDelta { text }, now);
            ms(bench.draw())
        })
        .collect();

    let what = |s: &str| format!("TUI frame, {MESSAGES} messages, {WIDTH}×{HEIGHT}: {s}");
    report.rows.push(Row::new(
        what("warm caches"),
        summary(Some(&warm)),
        Unit::Milliseconds,
    ));
    report.rows.push(Row::new(
        what("after a resize"),
        summary(Some(&resized)),
        Unit::Milliseconds,
    ));
    report.rows.push(Row::new(
        what("a text delta streaming in"),
        summary(Some(&streaming)),
        Unit::Milliseconds,
    ));
    report.notes.push(format!(
        "tui_frame (in-process): gyre-tui draws the whole screen (transcript, input, status \
         line) of a resumed {MESSAGES}-message session (prompts, Markdown answers with a code \
         block and a list, edit calls with diffs) into ratatui's TestBackend through \
         `Terminal::draw`, so ratatui's buffer diff is included and terminal output is not. \
         {FRAMES} frames per row; `after a resize` alternates between two widths, so every \
         visible cell is wrapped anew; `streaming` applies one text delta before each frame."
    ));
}
