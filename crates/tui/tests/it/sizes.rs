//! Drawing never panics, at any size.

use std::time::Instant;

use gyre_tui::view::{Screen, draw};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui_textarea::TextArea;

#[test]
fn tiny_sizes_do_not_panic() {
    let transcript = gyre_tui::view::bench::sample_transcript(40);
    let input = TextArea::default();
    for (w, h) in [(1, 1), (20, 5), (2, 30), (80, 24), (0, 0), (200, 3)] {
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        let screen = Screen::new(&transcript, &input, Instant::now());
        terminal
            .draw(|frame| {
                draw(frame, &screen);
            })
            .unwrap();
    }
}
