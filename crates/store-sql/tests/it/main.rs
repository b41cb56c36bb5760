//! Integration tests of gyre-store-sql against real databases: SQLite files in
//! temp dirs, and a real PostgreSQL (`GYRE_TEST_DATABASE_URL`, one fresh
//! schema per test). Tests written with `both_backends!` run on each.

// Helpers outside `#[test]` functions are test code too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod concurrency;
mod durability;
mod errors;
mod fencing;
mod history;
mod jsonl;
mod locks;
mod parents;
mod round_trip;
mod timing;
