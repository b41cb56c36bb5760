//! Which files the session has read, and their modification time then, so
//! that `write` and `edit` can refuse to change a file that changed since.

/// Files read in this session.
#[derive(Debug, Default)]
pub struct FileTracker {}
