//! The shell's state for one session: its working directory, which persists
//! from one `bash` call to the next, and its background jobs.

/// The session's shell.
#[derive(Debug, Default)]
pub struct ShellState {}
