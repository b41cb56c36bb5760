//! gyre-tui's tests: the view drawn into ratatui's `TestBackend`, from real
//! `gyre_protocol` events.

mod dialogs;
mod screen;
mod status;
mod streaming;
mod support;
mod tools;
