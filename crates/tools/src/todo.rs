//! The session's todo list, which `todo_write` replaces as a whole.

/// The todo list.
#[derive(Debug, Default)]
pub struct TodoList {}
