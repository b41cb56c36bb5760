//! The event loop: one `select!` over the terminal's events, the live
//! session's updates, background work, signals, and one timer.
//!
//! Invariants:
//! - No work while idle: the timer is armed only while a frame is owed (the
//!   app changed but the last frame is too recent) or something animates
//!   ([`App::next_wake`]); otherwise the loop sleeps until input, an update,
//!   background news or a signal. The terminal is read by crossterm's
//!   blocking reader thread, which sleeps in `poll` too.
//! - A frame is drawn only when the app is dirty, at most one per
//!   [`FRAME_INTERVAL`] (about 60 per second): a burst of deltas is applied
//!   in one go (up to [`UPDATE_BATCH`] updates without waiting) and drawn
//!   once. Input gets a frame at once when the last one is old enough.
//! - Replacing the live session ([`App::epoch`]) switches the reader to the
//!   new session's stream from its start.

use std::time::Duration;

use crossterm::event::EventStream;
use futures::StreamExt;
use gyre_core::Reader;
use gyre_core::live::{Lagged, Numbered};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::app::{App, Backend, Background};
use crate::terminal::Tty;

/// The shortest time between two frames.
pub const FRAME_INTERVAL: Duration = Duration::from_millis(16);
/// Updates applied before a frame without waiting for more.
pub const UPDATE_BATCH: usize = 1024;

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The user quit (`/quit`, Ctrl-C twice, Ctrl-D).
    Quit,
    /// A signal asked the process to stop (its number).
    Signal(i32),
    /// The terminal went away (its input ended).
    TerminalClosed,
}

enum Wake {
    Terminal(Option<std::io::Result<crossterm::event::Event>>),
    Update(Result<Numbered, Lagged>),
    Background(Option<Background>),
    Timer,
    Signal(i32),
}

/// Runs `app` on `terminal` until it quits; then stops what it runs and
/// (inline) leaves the whole conversation in the scrollback.
pub async fn run<B: Backend>(app: &mut App<B>, terminal: &mut Tty) -> std::io::Result<Ended> {
    let mut events = EventStream::new();
    let mut background = app.take_background();
    let mut epoch = app.epoch();
    let mut reader = app.reader();
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    terminal.draw(app)?;
    let mut last_frame = Instant::now();
    let ended = loop {
        let frame_due = app.is_dirty().then(|| last_frame + FRAME_INTERVAL);
        let deadline = match (frame_due, app.next_wake(last_frame)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let wake = tokio::select! {
            event = events.next() => Wake::Terminal(event),
            update = next_update(&mut reader) => Wake::Update(update),
            message = next_message(&mut background) => Wake::Background(message),
            _ = sleep_until(deadline) => Wake::Timer,
            _ = terminate.recv() => Wake::Signal(libc_signal::TERM),
            _ = hangup.recv() => Wake::Signal(libc_signal::HUP),
            _ = interrupt.recv() => Wake::Signal(libc_signal::INT),
        };
        match wake {
            Wake::Terminal(Some(Ok(event))) => app.handle_terminal(event).await,
            Wake::Terminal(_) => break Ended::TerminalClosed,
            Wake::Update(update) => app.handle_update(update),
            Wake::Background(Some(message)) => app.handle_background(message).await,
            Wake::Background(None) => background = None,
            Wake::Timer => {
                let now = Instant::now();
                if app.next_wake(last_frame).is_some_and(|at| at <= now) {
                    app.tick(now);
                }
            }
            Wake::Signal(number) => break Ended::Signal(number),
        }
        // Whatever else has arrived goes into the same frame.
        if let Some(reader) = reader.as_mut() {
            for _ in 0..UPDATE_BATCH {
                match reader.try_next() {
                    Some(update) => app.handle_update(update),
                    None => break,
                }
            }
        }
        if app.epoch() != epoch {
            epoch = app.epoch();
            reader = app.reader();
        }
        if app.should_quit() {
            break Ended::Quit;
        }
        let now = Instant::now();
        if app.is_dirty() && now.saturating_duration_since(last_frame) >= FRAME_INTERVAL {
            terminal.draw(app)?;
            last_frame = now;
        }
    };
    app.shutdown().await;
    // Inline, the conversation's last cells go to the scrollback too.
    terminal.finish(app)?;
    Ok(ended)
}

async fn next_update(reader: &mut Option<Reader>) -> Result<Numbered, Lagged> {
    match reader {
        Some(reader) => reader.next().await,
        None => std::future::pending().await,
    }
}

async fn next_message(rx: &mut Option<mpsc::Receiver<Background>>) -> Option<Background> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The signal numbers the loop reports (POSIX values on Linux).
pub mod libc_signal {
    pub const HUP: i32 = 1;
    pub const INT: i32 = 2;
    pub const TERM: i32 = 15;
}
