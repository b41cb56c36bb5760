//! gyre's terminal UI, the view half: a model of what is on screen, built
//! from the event stream, and functions that draw it into a ratatui buffer.
//!
//! Invariants:
//! - No IO, no terminal, no async runtime here: everything is
//!   `state → Buffer`, so it is tested with ratatui's `TestBackend` and a
//!   frame costs only the visible cells' layout.
//! - The clock is a parameter ([`std::time::Instant`] given to
//!   [`transcript::Transcript::apply`] and [`view::Screen::now`]), so spinners,
//!   elapsed times and countdowns are deterministic in tests.
//! - Colour is a choice the app makes ([`palette::ColorMode`]); nothing here
//!   reads the environment.

pub mod palette;
pub mod transcript;
pub mod view;

mod render;

/// Loads the syntax highlighting data now, instead of on the first code
/// block (tens of milliseconds; call it off the UI thread at start-up).
pub fn preload_highlighting() {
    render::highlight::preload();
}
