//! What a failed statement means for the person who has to act on it: a
//! damaged file, a full disk, a place this user cannot write; and the facts
//! the message needs (free space, whether a directory is writable).
//!
//! Only the driver's own error codes can tell these apart, so the decision
//! is made here, before the error is boxed into a
//! [`StoreError`](gyre_store::StoreError).

use std::path::Path;

/// What kind of failure a driver error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trouble {
    /// The content cannot be trusted (SQLite only).
    Corrupt,
    /// The disk (or the server's disk) is full.
    Full,
    /// The database or its directory cannot be written.
    ReadOnly,
    /// An I/O error (SQLite): a full disk when the file system has no room
    /// left (SQLite does not say which; see [`nearly_full`]).
    Io,
    /// Anything else: reported with what the store was doing.
    Other,
}

const SQLITE_PERM: i32 = 3;
const SQLITE_IOERR: i32 = 10;
const SQLITE_READONLY: i32 = 8;
const SQLITE_CORRUPT: i32 = 11;
const SQLITE_FULL: i32 = 13;
const SQLITE_CANTOPEN: i32 = 14;
const SQLITE_NOTADB: i32 = 26;
/// PostgreSQL's SQLSTATE for a full disk.
const PG_DISK_FULL: &str = "53100";

/// A SQLite error's kind, from its (extended) result code.
pub(crate) fn sqlite(error: &sqlx::Error) -> Trouble {
    let code = error
        .as_database_error()
        .and_then(|db| db.code())
        .and_then(|code| code.parse::<i32>().ok());
    // Extended result codes keep the primary code in the low byte.
    match code.map(|code| code & 0xff) {
        Some(SQLITE_CORRUPT | SQLITE_NOTADB) => Trouble::Corrupt,
        Some(SQLITE_FULL) => Trouble::Full,
        Some(SQLITE_READONLY | SQLITE_PERM) => Trouble::ReadOnly,
        Some(SQLITE_IOERR) => Trouble::Io,
        _ => Trouble::Other,
    }
}

/// Whether a SQLite error says a file could not be opened (or made).
pub(crate) fn sqlite_cannot_open(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|db| db.code())
        .and_then(|code| code.parse::<i32>().ok())
        .is_some_and(|code| code & 0xff == SQLITE_CANTOPEN)
}

/// A PostgreSQL error's kind.
pub(crate) fn postgres(error: &sqlx::Error) -> Trouble {
    match error.as_database_error().and_then(|db| db.code()) {
        Some(code) if code == PG_DISK_FULL => Trouble::Full,
        _ => Trouble::Other,
    }
}

/// Whether this process may create files in `dir` (its effective ids, so
/// root may, whatever the mode bits say).
pub(crate) fn writable(dir: &Path) -> bool {
    rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).is_ok()
}

/// Whether the file system holding `path` has (almost) no room left: an
/// I/O error there is a full disk (growing the `-shm` or `-wal` file failed).
pub(crate) fn nearly_full(path: &Path) -> bool {
    const ROOM: u64 = 256 * 1024;
    rustix::fs::statvfs(containing_dir(path))
        .is_ok_and(|stat| stat.f_bavail.saturating_mul(stat.f_frsize) < ROOM)
}

fn containing_dir(path: &Path) -> &Path {
    if path.is_dir() {
        path
    } else {
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
    }
}

/// ` (12.0 KiB free on /home)`: what is left on the file system holding
/// `path`, for a disk-full message; empty when it cannot be told.
pub(crate) fn free_space(path: &Path) -> String {
    let dir = containing_dir(path);
    match rustix::fs::statvfs(dir) {
        Ok(stat) => format!(
            " ({} free on the file system of {})",
            human_bytes(stat.f_bavail.saturating_mul(stat.f_frsize)),
            dir.display()
        ),
        Err(_) => String::new(),
    }
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_database_errors_are_other() {
        assert_eq!(sqlite(&sqlx::Error::RowNotFound), Trouble::Other);
        assert_eq!(postgres(&sqlx::Error::RowNotFound), Trouble::Other);
        assert!(!sqlite_cannot_open(&sqlx::Error::RowNotFound));
    }

    #[test]
    fn sizes_read_like_df() {
        assert_eq!(human_bytes(512), "512 bytes");
        assert_eq!(human_bytes(12 * 1024), "12.0 KiB");
        assert_eq!(human_bytes(3 * 1024 * 1024 * 1024 / 2), "1.5 GiB");
    }

    #[test]
    fn the_free_space_names_the_directory() {
        let dir = std::env::temp_dir();
        let said = free_space(&dir.join("sessions.db"));
        assert!(said.contains("free on the file system of"), "{said}");
    }
}
