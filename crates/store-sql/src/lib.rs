//! The SQL backends of gyre's session store: [`SqliteStore`] (one embedded
//! file, the default) and [`PgStore`] (one PostgreSQL database shared by
//! several hosts), both implementing [`gyre_store::SessionStore`]; reading a
//! location string ([`parse_location`]) and opening it ([`open`]).
//!
//! Callers take the trait and its types from `gyre_store` and only the
//! backends from here: nothing of gyre-store is re-exported.
//!
//! Invariants:
//! - Every call is one committed transaction: a killed process loses nothing
//!   that a returned call wrote, and a failed call writes nothing.
//! - [`gyre_store::SessionStore::sync`] makes everything written so far
//!   durable on disk; on PostgreSQL every commit already is.
//! - Both backends run the same SQL (the private `sql` module) through one
//!   engine; they differ only in what the `dialect` module says, and in
//!   SQLite's WAL and sync. Both apply the same migrations (`schema`).
//! - A driver's error leaves this crate boxed in a
//!   [`StoreError`](gyre_store::StoreError), with the same message; whatever
//!   must be told from it (corruption, a taken key) is decided here first.
//!
//! Must not hold: the trait or its types (gyre-store's), loop logic, or
//! anything a frontend decides (where the database lives by default, how an
//! error is printed).

mod dialect;
mod engine;
mod error;
mod location;
mod lock;
mod postgres;
mod schema;
mod sql;
mod sqlite;
mod trouble;

pub use location::{open, parse_location};
pub use postgres::PgStore;
pub use sqlite::SqliteStore;
