//! The file a process's whole output is saved to once it outgrows what is
//! kept in memory.
//!
//! Invariants: the file is created only when needed (most commands print
//! little), it never grows beyond [`MAX_SPILL_BYTES`], and a failure to write
//! never fails the command: it is reported in the marker instead.

use std::path::PathBuf;

use tokio::io::AsyncWriteExt;

/// The most a spill file holds.
pub(crate) const MAX_SPILL_BYTES: u64 = 64 * 1024 * 1024;

enum State {
    /// Nothing written yet.
    Idle,
    Open(tokio::fs::File),
    /// Reached [`MAX_SPILL_BYTES`]; later output is not saved.
    Capped,
    Failed(String),
}

/// A lazily created, capped output file.
pub(crate) struct SpillLog {
    path: Option<PathBuf>,
    state: State,
    written: u64,
}

impl SpillLog {
    /// A log that will write to `path`, or never when `None`.
    pub(crate) fn new(path: Option<PathBuf>) -> Self {
        SpillLog {
            path,
            state: State::Idle,
            written: 0,
        }
    }

    /// Whether there is a file to write to.
    pub(crate) fn enabled(&self) -> bool {
        self.path.is_some()
    }

    /// Whether writing has begun (or was tried).
    pub(crate) fn started(&self) -> bool {
        !matches!(self.state, State::Idle)
    }

    /// Appends `bytes`, creating the file first if needed.
    pub(crate) async fn write(&mut self, bytes: &[u8]) {
        if let State::Idle = self.state {
            let Some(path) = &self.path else {
                return;
            };
            self.state = match open(path).await {
                Ok(file) => State::Open(file),
                Err(e) => State::Failed(e.to_string()),
            };
        }
        let State::Open(file) = &mut self.state else {
            return;
        };
        let room = MAX_SPILL_BYTES.saturating_sub(self.written);
        let take = usize::try_from(room).unwrap_or(usize::MAX).min(bytes.len());
        if let Err(e) = file.write_all(&bytes[..take]).await {
            self.state = State::Failed(e.to_string());
            return;
        }
        self.written += take as u64;
        if take < bytes.len() {
            let _ = file.flush().await;
            self.state = State::Capped;
        }
    }

    /// Flushes what was written.
    pub(crate) async fn finish(&mut self) {
        if let State::Open(file) = &mut self.state
            && let Err(e) = file.flush().await
        {
            self.state = State::Failed(e.to_string());
        }
    }

    /// Where the whole output is, for a cut marker: `; full output in PATH`,
    /// or empty when there is no file.
    pub(crate) fn whereabouts(&self) -> String {
        match (&self.state, &self.path) {
            (State::Open(_), Some(path)) => format!("; full output in {}", path.display()),
            (State::Capped, Some(path)) => format!(
                "; the first {} MB of the output in {}",
                MAX_SPILL_BYTES / (1024 * 1024),
                path.display()
            ),
            (State::Failed(e), Some(_)) => format!("; the full output could not be saved: {e}"),
            _ => String::new(),
        }
    }
}

async fn open(path: &std::path::Path) -> std::io::Result<tokio::fs::File> {
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await?;
    }
    tokio::fs::File::create(path).await
}
