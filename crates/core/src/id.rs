//! Ids gyre makes: time-ordered (uuid v7), so sorting by id sorts by
//! creation. A leaf module: it depends on nothing else in the crate, so
//! sessions, messages, locks and checkpoints all take ids from here without
//! depending on each other.

/// A new time-ordered id.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}
