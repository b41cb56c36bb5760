//! Prompts typed before, browsed with Up and Down, kept across runs in a
//! file (`$GYRE_HOME/history`).
//!
//! Invariants:
//! - Bounded: at most [`MAX_ENTRIES`] in memory; the file is cut back to
//!   them when it is read with more than twice as many lines.
//! - The file is one JSON string per line (a prompt may hold newlines);
//!   lines that do not parse are skipped, so a damaged file costs entries,
//!   never the start.
//! - File work happens off the async runtime: reading in
//!   `spawn_blocking`, appending in one writer task, in submission order.
//!   A failure to write is logged, never shown: history is a convenience.
//!   [`History::close`] waits for the writer, so what was typed before the
//!   app quits is in the file when the process ends.

use std::io::Write;
use std::path::{Path, PathBuf};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Prompts kept.
pub const MAX_ENTRIES: usize = 1000;
/// Appends waiting for the writer (more are dropped).
const PENDING_WRITES: usize = 64;

/// The prompts typed before, oldest first, and where browsing is.
#[derive(Debug, Default)]
pub struct History {
    entries: Vec<String>,
    /// The entry shown while browsing (`None`: not browsing).
    at: Option<usize>,
    /// What was in the editor before browsing began.
    draft: String,
    writer: Option<mpsc::Sender<String>>,
    /// The writer task, awaited by [`History::close`].
    written: Option<JoinHandle<()>>,
}

impl History {
    /// A history kept in memory only.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// Loads `file` (missing: empty) and appends new entries to it.
    pub async fn load(file: PathBuf) -> Self {
        let path = file.clone();
        let entries = tokio::task::spawn_blocking(move || read_file(&path))
            .await
            .unwrap_or_default();
        let (tx, rx) = mpsc::channel(PENDING_WRITES);
        let written = tokio::spawn(write_entries(file, rx));
        Self {
            entries,
            writer: Some(tx),
            written: Some(written),
            ..Self::default()
        }
    }

    /// Stops writing to the file and waits until every entry pushed before
    /// is written (later ones are kept in memory only).
    pub async fn close(&mut self) {
        self.writer = None;
        if let Some(written) = self.written.take() {
            let _ = written.await;
        }
    }

    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Remembers a sent prompt (not twice in a row) and stops browsing.
    pub fn push(&mut self, text: &str) {
        self.reset();
        if text.trim().is_empty() || self.entries.last().is_some_and(|l| l == text) {
            return;
        }
        if self.entries.len() == MAX_ENTRIES {
            self.entries.remove(0);
        }
        self.entries.push(text.to_string());
        if let Some(writer) = &self.writer {
            let _ = writer.try_send(text.to_string());
        }
    }

    /// Stops browsing (the editor's text is the user's again).
    pub fn reset(&mut self) {
        self.at = None;
        self.draft.clear();
    }

    pub fn is_browsing(&self) -> bool {
        self.at.is_some()
    }

    /// The entry before the one shown (`current`: the editor's text, kept
    /// as the draft when browsing begins); `None` at the oldest.
    pub fn older(&mut self, current: &str) -> Option<&str> {
        let next = match self.at {
            None => {
                let last = self.entries.len().checked_sub(1)?;
                self.draft = current.to_string();
                last
            }
            Some(0) => return None,
            Some(at) => at - 1,
        };
        self.at = Some(next);
        self.entries.get(next).map(String::as_str)
    }

    /// The entry after the one shown, or the draft after the newest;
    /// `None` when not browsing.
    pub fn newer(&mut self) -> Option<String> {
        let at = self.at?;
        if at + 1 < self.entries.len() {
            self.at = Some(at + 1);
            return self.entries.get(at + 1).cloned();
        }
        self.at = None;
        Some(std::mem::take(&mut self.draft))
    }
}

fn read_file(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let lines = text.lines().count();
    let mut entries: Vec<String> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<String>(line).ok())
        .collect();
    let cut = entries.len().saturating_sub(MAX_ENTRIES);
    entries.drain(..cut);
    if lines > 2 * MAX_ENTRIES {
        // Rewritten whole: a crash in between loses the history, not a run.
        let mut out = String::new();
        for entry in &entries {
            out.push_str(&encode(entry));
        }
        if let Err(e) = std::fs::write(path, out) {
            tracing::warn!("cannot rewrite the prompt history {}: {e}", path.display());
        }
    }
    entries
}

fn encode(entry: &str) -> String {
    let mut line = serde_json::to_string(entry).unwrap_or_default();
    line.push('\n');
    line
}

async fn write_entries(path: PathBuf, mut rx: mpsc::Receiver<String>) {
    while let Some(entry) = rx.recv().await {
        let path = path.clone();
        let written = tokio::task::spawn_blocking(move || {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)?;
            file.write_all(encode(&entry).as_bytes())
        })
        .await;
        if let Ok(Err(e)) = written {
            tracing::warn!("cannot append to the prompt history: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browsing_goes_back_and_returns_to_the_draft() {
        let mut history = History::in_memory();
        history.push("one");
        history.push("two");
        history.push("two");
        assert_eq!(history.entries(), ["one", "two"]);
        assert_eq!(history.older("draft"), Some("two"));
        assert_eq!(history.older("two"), Some("one"));
        assert_eq!(history.older("one"), None);
        assert_eq!(history.newer().as_deref(), Some("two"));
        assert_eq!(history.newer().as_deref(), Some("draft"));
        assert!(!history.is_browsing());
        assert_eq!(history.newer(), None);
    }

    #[tokio::test]
    async fn entries_survive_in_the_file_newlines_included() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("history");
        let mut history = History::load(file.clone()).await;
        history.push("first\nsecond line");
        history.push("third");
        history.close().await;
        history.push("not written");
        let again = History::load(file).await;
        assert_eq!(again.entries(), ["first\nsecond line", "third"]);
    }

    #[test]
    fn a_long_file_is_cut_to_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("history");
        let text: String = (0..2 * MAX_ENTRIES + 5)
            .map(|i| encode(&format!("p{i}")))
            .collect::<String>()
            + "not json\n";
        std::fs::write(&file, text).unwrap();
        let entries = read_file(&file);
        assert_eq!(entries.len(), MAX_ENTRIES);
        assert_eq!(
            entries.last().unwrap(),
            &format!("p{}", 2 * MAX_ENTRIES + 4)
        );
        assert_eq!(
            std::fs::read_to_string(&file).unwrap().lines().count(),
            MAX_ENTRIES
        );
    }
}
