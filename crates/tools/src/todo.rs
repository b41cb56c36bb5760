//! The session's todo list, which `todo_write` replaces as a whole.
//!
//! Invariant: the list is only ever replaced whole, under a short
//! non-async lock, so a reader sees one complete list or the next one.

use std::sync::Mutex;

use gyre_protocol::Todo;

/// The todo list.
#[derive(Debug, Default)]
pub struct TodoList {
    items: Mutex<Vec<Todo>>,
}

impl TodoList {
    /// Replaces the list with `todos`.
    pub fn replace(&self, todos: Vec<Todo>) {
        *self.items.lock().unwrap_or_else(|e| e.into_inner()) = todos;
    }

    /// A copy of the list as it is now.
    pub fn snapshot(&self) -> Vec<Todo> {
        self.items.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
