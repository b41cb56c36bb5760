//! gyre-tui's tests: the view drawn into ratatui's `TestBackend`, from real
//! `gyre_protocol` events.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly

mod app_commands;
mod app_custom;
mod app_keys;
mod app_runs;
mod app_support;
mod daily_keys;
mod dialogs;
mod follow;
mod follow_gauge;
mod screen;
mod status;
mod streaming;
mod support;
mod tools;
