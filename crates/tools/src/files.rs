//! Which files the session has read (or written), and what they were like
//! then, so that `write`, `edit` and `multi_edit` can refuse to change a file
//! the model has not seen, or one that changed since it saw it.
//!
//! Invariants:
//! - Keys are the canonical paths [`crate::Workspace::resolve`] returns, so
//!   two spellings of one file share one entry.
//! - An entry holds the file's [`FileStamp`] (modification time and size) and,
//!   when the whole content passed through gyre, a hash of it. A tool's own
//!   change is recorded right after it writes, so it is never "stale".
//! - The content hash, when known, decides: a file whose mtime moved but whose
//!   bytes are the same (a `touch`, a formatter that changed nothing) is still
//!   fresh, and a change within one mtime tick that kept the size is still
//!   caught. Without a hash, mtime and size decide.
//! - The lock is a short `std::sync::Mutex`, never held across an await or
//!   any IO; a poisoned lock is used as is (the map stays consistent, every
//!   update is a single insert or remove).
//! - At most [`MAX_ENTRIES`] files are remembered; beyond that the entry seen
//!   longest ago is dropped, and the model is asked to read that file again.

use std::collections::HashMap;
use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

/// How many files one session remembers.
pub const MAX_ENTRIES: usize = 4096;

/// What a file looked like on disk: its modification time and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    /// `None` where the platform does not report modification times.
    pub modified: Option<SystemTime>,
    pub len: u64,
}

impl FileStamp {
    pub fn of(metadata: &std::fs::Metadata) -> Self {
        FileStamp {
            modified: metadata.modified().ok(),
            len: metadata.len(),
        }
    }
}

/// A hash of a file's whole content, for telling "touched" from "changed".
/// Not cryptographic: it guards against accidents, not adversaries.
#[derive(Debug, Default, Clone)]
pub struct ContentHasher(std::collections::hash_map::DefaultHasher);

impl ContentHasher {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes; the result does not depend on how the content is
    /// split into calls.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
    }

    pub fn finish(&self) -> u64 {
        self.0.finish()
    }

    /// The hash of `bytes` in one go.
    pub fn of(bytes: &[u8]) -> u64 {
        let mut hasher = Self::new();
        hasher.update(bytes);
        hasher.finish()
    }
}

/// What the session knows of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    pub stamp: FileStamp,
    /// Hash of the whole content, when it passed through gyre.
    pub content_hash: Option<u64>,
    /// When gyre read or wrote it (wall clock), for messages.
    pub at: SystemTime,
}

impl Seen {
    /// `at` as `HH:MM:SS UTC`, for "changed since it was read at …".
    pub fn at_display(&self) -> String {
        let secs = self
            .at
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let day = secs % 86_400;
        format!(
            "{:02}:{:02}:{:02} UTC",
            day / 3600,
            (day % 3600) / 60,
            day % 60
        )
    }
}

/// Whether a file may be changed, judged against what the session saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// As the session last saw it.
    Fresh,
    /// Never read (or forgotten) in this session.
    NotRead,
    /// Changed since the session last saw it.
    Changed(Seen),
}

/// Files read or written in this session.
#[derive(Debug, Default)]
pub struct FileTracker {
    seen: Mutex<HashMap<PathBuf, Seen>>,
}

impl FileTracker {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<PathBuf, Seen>> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes that gyre read or wrote `path` (canonical) and that it now looks
    /// like `stamp` (with content hash `content_hash` when the whole content
    /// is known).
    pub fn record(&self, path: &Path, stamp: FileStamp, content_hash: Option<u64>) {
        let seen = Seen {
            stamp,
            content_hash,
            at: SystemTime::now(),
        };
        let mut map = self.lock();
        if map.len() >= MAX_ENTRIES && !map.contains_key(path) {
            let oldest = map.iter().min_by_key(|(_, s)| s.at).map(|(p, _)| p.clone());
            if let Some(oldest) = oldest {
                map.remove(&oldest);
            }
        }
        map.insert(path.to_path_buf(), seen);
    }

    /// What the session knows of `path`, if anything.
    pub fn get(&self, path: &Path) -> Option<Seen> {
        self.lock().get(path).copied()
    }

    /// Drops what the session knows of `path` (it was deleted, say).
    pub fn forget(&self, path: &Path) {
        self.lock().remove(path);
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Judges `path`, which now looks like `stamp`. `content` gives the
    /// current bytes on demand; it is asked for only when the stamp moved and
    /// a recorded hash could still prove the content unchanged (so a large
    /// file is not read for nothing).
    pub fn freshness(
        &self,
        path: &Path,
        stamp: FileStamp,
        content: impl FnOnce() -> Option<u64>,
    ) -> Freshness {
        let Some(seen) = self.get(path) else {
            return Freshness::NotRead;
        };
        match seen.content_hash {
            // The size differs: changed, whatever the hash would say.
            Some(_) if seen.stamp.len != stamp.len => Freshness::Changed(seen),
            Some(hash) => match content() {
                Some(now) if now == hash => Freshness::Fresh,
                // The bytes could not be read again: trust the stamp.
                None if seen.stamp == stamp => Freshness::Fresh,
                _ => Freshness::Changed(seen),
            },
            None if seen.stamp == stamp => Freshness::Fresh,
            None => Freshness::Changed(seen),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(len: u64, secs: u64) -> FileStamp {
        FileStamp {
            modified: Some(UNIX_EPOCH + std::time::Duration::from_secs(secs)),
            len,
        }
    }

    #[test]
    fn hashing_ignores_how_content_is_split() {
        let mut split = ContentHasher::new();
        split.update(b"hello ");
        split.update(b"wor");
        split.update(b"ld");
        assert_eq!(split.finish(), ContentHasher::of(b"hello world"));
        assert_ne!(ContentHasher::of(b"a"), ContentHasher::of(b"b"));
    }

    #[test]
    fn unknown_files_are_not_read() {
        let tracker = FileTracker::new();
        assert_eq!(
            tracker.freshness(Path::new("/a"), stamp(1, 1), || None),
            Freshness::NotRead
        );
    }

    #[test]
    fn the_hash_decides_when_known() {
        let tracker = FileTracker::new();
        let path = Path::new("/a");
        tracker.record(path, stamp(3, 10), Some(ContentHasher::of(b"abc")));
        // Touched: same bytes, new mtime.
        let touched = tracker.freshness(path, stamp(3, 20), || Some(ContentHasher::of(b"abc")));
        assert_eq!(touched, Freshness::Fresh);
        // Same mtime tick and size, other bytes.
        let sneaky = tracker.freshness(path, stamp(3, 10), || Some(ContentHasher::of(b"xyz")));
        assert!(matches!(sneaky, Freshness::Changed(_)));
        // Size differs: the content is not even asked for.
        let grown = tracker.freshness(path, stamp(4, 10), || panic!("content asked for"));
        assert!(matches!(grown, Freshness::Changed(_)));
    }

    #[test]
    fn without_a_hash_the_stamp_decides() {
        let tracker = FileTracker::new();
        let path = Path::new("/a");
        tracker.record(path, stamp(3, 10), None);
        assert_eq!(
            tracker.freshness(path, stamp(3, 10), || None),
            Freshness::Fresh
        );
        assert!(matches!(
            tracker.freshness(path, stamp(3, 11), || None),
            Freshness::Changed(_)
        ));
        tracker.forget(path);
        assert!(tracker.is_empty());
    }

    #[test]
    fn the_oldest_entry_makes_room() {
        let tracker = FileTracker::new();
        for i in 0..MAX_ENTRIES + 1 {
            tracker.record(&PathBuf::from(format!("/f{i}")), stamp(1, 1), None);
        }
        assert_eq!(tracker.len(), MAX_ENTRIES);
        assert!(
            tracker
                .get(Path::new(&format!("/f{MAX_ENTRIES}")))
                .is_some()
        );
    }

    #[test]
    fn times_show_as_utc_clock() {
        let seen = Seen {
            stamp: stamp(0, 0),
            content_hash: None,
            at: UNIX_EPOCH + std::time::Duration::from_secs(86_400 + 3_723),
        };
        assert_eq!(seen.at_display(), "01:02:03 UTC");
    }
}
