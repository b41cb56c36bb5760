//! Integration tests of gyre-store against real SQLite files in temp dirs.

// Helpers outside `#[test]` functions are test code too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod concurrency;
mod durability;
mod errors;
mod round_trip;
mod timing;
