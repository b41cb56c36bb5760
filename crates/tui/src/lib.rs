//! gyre's terminal UI.
//!
//! The view half ([`palette`], [`transcript`], [`view`]) is a model of what
//! is on screen, built from the event stream, and functions that draw it
//! into a ratatui buffer. The app half ([`app`], [`input`], [`shell`],
//! [`terminal`], [`event_loop`]) drives a live session from the keyboard
//! and owns the terminal; [`run`] puts them together. [`host`] is the
//! frontend's launch: the [`Backend`] over `gyre-host`'s `Host` (sessions in
//! the store, agents from the workspace's factory) and [`host::main`], what
//! `gyre` alone runs. The rest of the crate knows only the [`Backend`]
//! trait, so its tests drive the app with a fake one.
//!
//! Invariants of the view half:
//! - No IO, no terminal, no async runtime there: everything is
//!   `state → Buffer`, so it is tested with ratatui's `TestBackend` and a
//!   frame costs only the visible cells' layout.
//! - The clock is a parameter ([`std::time::Instant`] given to
//!   [`transcript::Transcript::apply`] and [`view::Screen::now`]), so spinners,
//!   elapsed times and countdowns are deterministic in tests.
//! - Colour is a choice the app makes ([`palette::ColorMode`]); nothing here
//!   reads the environment.
//!
//! Invariants of the app half: see [`app`] (state, no terminal) and
//! [`event_loop`] (no work while idle, at most one frame per 16 ms).

pub mod palette;
pub mod transcript;
pub mod view;

pub mod app;
pub mod event_loop;
pub mod input;
pub mod shell;
pub mod terminal;

pub mod host;

mod render;

use std::path::Path;

pub use app::{App, AppOptions, Backend};
pub use event_loop::Ended;

/// Loads the syntax highlighting data now, instead of on the first code
/// block (tens of milliseconds; call it off the UI thread at start-up).
pub fn preload_highlighting() {
    render::highlight::preload();
}

/// Runs the app over `backend` in the terminal until the user quits (or a
/// signal, or the terminal going away), then stops what runs and gives the
/// terminal back. stderr goes to `stderr_to` meanwhile.
pub async fn run<B: Backend>(
    backend: B,
    options: AppOptions,
    stderr_to: Option<&Path>,
) -> std::io::Result<Ended> {
    tokio::task::spawn_blocking(preload_highlighting);
    let mode = if options.inline {
        terminal::ScreenMode::Inline
    } else {
        terminal::ScreenMode::Alternate
    };
    let mut app = App::new(backend, options).await;
    let (mut terminal, guard) = terminal::enter(stderr_to, mode)?;
    let ended = event_loop::run(&mut app, &mut terminal).await;
    drop(terminal);
    drop(guard);
    print_exit_line(&app);
    ended
}

/// After the terminal is restored: how to go on with the session, on
/// stdout, so it stays on the screen.
fn print_exit_line<B: Backend>(app: &App<B>) {
    if let Some(line) = app.exit_line() {
        println!("{line}");
    }
}
