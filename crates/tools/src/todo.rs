//! The session's todo list, which `todo_write` replaces as a whole.
//!
//! Invariant: the list is only ever replaced whole, under a short
//! non-async lock, so a reader sees one complete list or the next one; each
//! replacement bumps the revision, so the loop can tell frontends about a
//! change whichever tool made it.

use std::sync::Mutex;

use gyre_protocol::Todo;

/// The todo list.
#[derive(Debug, Default)]
pub struct TodoList {
    items: Mutex<(Vec<Todo>, u64)>,
}

impl TodoList {
    /// Replaces the list with `todos`.
    pub fn replace(&self, todos: Vec<Todo>) {
        let mut guard = self.items.lock().unwrap_or_else(|e| e.into_inner());
        guard.0 = todos;
        guard.1 += 1;
    }

    /// A copy of the list as it is now.
    pub fn snapshot(&self) -> Vec<Todo> {
        self.items
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone()
    }

    /// How many times the list was replaced.
    pub fn revision(&self) -> u64 {
        self.items.lock().unwrap_or_else(|e| e.into_inner()).1
    }
}
