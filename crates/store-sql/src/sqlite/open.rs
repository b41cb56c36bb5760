//! Connecting to a SQLite file: the integrity check before anything is
//! written, the schema upgrade, the read-only open, and errors that say
//! what to do.
//!
//! Invariants:
//! - `PRAGMA quick_check` runs on every file before the schema upgrade
//!   (the first statement that could write): a damaged file is reported
//!   and never written into.
//! - A read-only open never writes, so it cannot upgrade a schema: an older
//!   one is an error that says to open it once where it can be written.
//! - A read-only open with no write-ahead log to read is `immutable` (no
//!   `-shm` file needed, none made, so it works in a directory this user
//!   cannot write); with a log it reads through the existing `-shm` like
//!   any reader, so no committed write is missed.

use std::path::{Path, PathBuf};

use gyre_store::StoreError;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{Sqlite, SqliteConnection};
use tokio::sync::Mutex;

use super::{SqliteStore, Storage, base_options, connect_when_free, schema, sqlite_filename};
use crate::dialect::{Dialect, local_now_ms};
use crate::schema::MigrateError;
use crate::sql::{CURRENT_VERSION, LATEST_VERSION};
use crate::trouble::{self, Trouble};

/// Connects, checks the file and brings its schema up to date.
pub(super) async fn connect(
    path: PathBuf,
    storage: Storage,
    options: SqliteConnectOptions,
) -> Result<SqliteStore, StoreError> {
    let database = path.display().to_string();
    let mut conn = match connect_when_free(&options).await {
        Ok(conn) => conn,
        Err(source) => return Err(open_error(&path, source)),
    };
    if storage != Storage::Memory {
        check(&mut conn, &database).await?;
    }
    if storage == Storage::ReadOnlyFile {
        current_schema(&mut conn, &path).await?;
    } else {
        migrate(&mut conn, &path).await?;
    }
    Ok(SqliteStore {
        path,
        name: database,
        storage,
        conn: Mutex::new(conn),
    })
}

/// Opens `path` for reading only (see the module's invariants).
pub(super) async fn read_only(path: &Path) -> Result<SqliteStore, StoreError> {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let has_log = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0);
    let options = base_options()
        .filename(sqlite_filename(path))
        .read_only(true)
        .immutable(!has_log);
    connect(path.to_path_buf(), Storage::ReadOnlyFile, options).await
}

/// The integrity check: the whole file's structure, without its indexes'
/// contents (`quick_check`, linear in the file's size).
async fn check(conn: &mut SqliteConnection, database: &str) -> Result<(), StoreError> {
    let corrupt = |source: sqlx::Error| StoreError::Corrupt {
        database: database.to_owned(),
        source: Box::new(source),
    };
    let found: Vec<String> = sqlx::query_scalar("PRAGMA quick_check(3)")
        .fetch_all(&mut *conn)
        .await
        .map_err(|source| match Sqlite::trouble(&source) {
            Trouble::Corrupt => corrupt(source),
            _ => StoreError::Open {
                database: database.to_owned(),
                source: Box::new(source),
            },
        })?;
    if found.len() == 1 && found[0] == "ok" {
        return Ok(());
    }
    // One line, whatever SQLite's report looks like.
    let mut said = found
        .join("; ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if let Some((at, _)) = said.char_indices().nth(200) {
        said.truncate(at);
        said.push('…');
    }
    Err(StoreError::Corrupt {
        database: database.to_owned(),
        source: format!("its integrity check found: {said}").into(),
    })
}

async fn migrate(conn: &mut SqliteConnection, path: &Path) -> Result<(), StoreError> {
    let database = path.display().to_string();
    match schema::migrate(conn, local_now_ms()).await {
        Ok(()) => Ok(()),
        Err(MigrateError::Newer { found }) => Err(StoreError::NewerSchema {
            database,
            found,
            supported: LATEST_VERSION,
        }),
        Err(MigrateError::Sql(source)) => Err(classified(path, source, |database, source| {
            StoreError::Migrate { database, source }
        })),
    }
}

/// A read-only file must already have this gyre's schema.
async fn current_schema(conn: &mut SqliteConnection, path: &Path) -> Result<(), StoreError> {
    let database = path.display().to_string();
    let found: i64 = sqlx::query_scalar(CURRENT_VERSION)
        .fetch_one(&mut *conn)
        .await
        .map_err(|source| StoreError::Open {
            database: database.clone(),
            source: Box::new(source),
        })?;
    match found.cmp(&LATEST_VERSION) {
        std::cmp::Ordering::Equal => Ok(()),
        std::cmp::Ordering::Greater => Err(StoreError::NewerSchema {
            database,
            found,
            supported: LATEST_VERSION,
        }),
        std::cmp::Ordering::Less => Err(StoreError::ReadOnly {
            database,
            dir: super::write_target(path),
            reason: format!(
                "its schema (version {found}) must be upgraded to {LATEST_VERSION}, which writes"
            ),
        }),
    }
}

/// Why a file could not be opened, in terms a person can act on.
fn open_error(path: &Path, source: sqlx::Error) -> StoreError {
    let cannot_open = trouble::sqlite_cannot_open(&source) && !writable_place(path);
    classified(path, source, |database, source| {
        if cannot_open {
            StoreError::ReadOnly {
                database,
                dir: super::write_target(path),
                reason: source.to_string(),
            }
        } else {
            StoreError::Open { database, source }
        }
    })
}

/// A failed statement's error as what it means (damage, a full disk, a
/// read-only place), or `other`'s when it is none of those.
fn classified(
    path: &Path,
    source: sqlx::Error,
    other: impl FnOnce(String, gyre_store::BoxError) -> StoreError,
) -> StoreError {
    let database = path.display().to_string();
    match full_io(Sqlite::trouble(&source), path) {
        Trouble::Corrupt => StoreError::Corrupt {
            database,
            source: Box::new(source),
        },
        Trouble::Full => StoreError::DiskFull {
            database,
            free: trouble::free_space(path),
        },
        Trouble::ReadOnly => StoreError::ReadOnly {
            database,
            dir: super::write_target(path),
            reason: source.to_string(),
        },
        Trouble::Io | Trouble::Other => other(database, Box::new(source)),
    }
}

/// An I/O error where the disk has no room left is a full disk.
fn full_io(trouble: Trouble, path: &Path) -> Trouble {
    match trouble {
        Trouble::Io if trouble::nearly_full(path) => Trouble::Full,
        trouble => trouble,
    }
}

fn writable_place(path: &Path) -> bool {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    trouble::writable(dir)
}
