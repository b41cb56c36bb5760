//! The `store` group's in-process measurements: append throughput (as the
//! loop writes, a sync per turn), `Session::load` of a long session, and
//! the bytes a SQLite file takes per turn.
//!
//! Invariants:
//! - Every timed run writes into a new session (SQLite: a new database file
//!   in a fresh temp dir, as a first session would; PostgreSQL: a new session
//!   in the one scratch schema); one warm-up run first, not recorded.
//! - Each run is checked after the clock stops: the store gives back exactly
//!   the messages written, in order (a load of `Session::load` holds every
//!   message).
//! - Loops are bounded by the run count and the fixed turn counts here.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use gyre_protocol::Message;
use gyre_store::{SessionRecord, SessionStore};
use gyre_store_sql::SqliteStore;

use crate::history;
use crate::resume_rss::session_meta;
use crate::store_write::{self, DiskBytes, Written};

/// Turns per timed append run.
pub const APPEND_TURNS: usize = 200;
/// Rounds of the resumed session: with its prompt and closing answer,
/// 10,000 messages.
pub const RESUME_ROUNDS: usize = 4_999;
/// Turns written for the bytes-on-disk rows.
pub const DISK_TURNS: usize = 1_000;
const SEED: u64 = 0x57_0E;

/// Where the append runs write.
pub enum AppendTarget<'a> {
    /// A new file per run in a fresh temp dir.
    Sqlite,
    /// A new session per run in this store.
    Store(&'a dyn SessionStore),
}

/// Append runs: wall per run of [`APPEND_TURNS`] turns.
#[derive(Debug, Clone, Default)]
pub struct Appends {
    pub ms: Vec<f64>,
    /// Of each run's wall, the part spent in `sync`.
    pub sync_ms: Vec<f64>,
    /// Per run (the counts are the same every run).
    pub written: Written,
}

impl Appends {
    pub fn ms_per_turn(&self) -> Vec<f64> {
        self.per_turn(&self.ms)
    }

    pub fn sync_ms_per_turn(&self) -> Vec<f64> {
        self.per_turn(&self.sync_ms)
    }

    fn per_turn(&self, ms: &[f64]) -> Vec<f64> {
        let turns = self.written.turns.max(1) as f64;
        ms.iter().map(|ms| ms / turns).collect()
    }
}

pub async fn appends(target: AppendTarget<'_>, runs: usize) -> anyhow::Result<Appends> {
    let messages = history::rounds(APPEND_TURNS, SEED);
    let state = store_write::loop_state()?;
    let mut out = Appends::default();
    for run in 0..=runs {
        let (elapsed, written) = match &target {
            AppendTarget::Sqlite => {
                let dir = tempfile::tempdir().context("cannot make a temp dir")?;
                let store = SqliteStore::open(&dir.path().join("sessions.db")).await?;
                let timed = append_run(&store, dir.path(), &messages, &state).await?;
                store.close().await?;
                timed
            }
            AppendTarget::Store(store) => {
                append_run(*store, Path::new("/"), &messages, &state).await?
            }
        };
        if run > 0 {
            out.ms.push(elapsed.as_secs_f64() * 1e3);
            out.sync_ms.push(written.sync.as_secs_f64() * 1e3);
            out.written = written;
        }
    }
    Ok(out)
}

/// The prompt outside the clock, then every round timed; checked after.
async fn append_run(
    store: &dyn SessionStore,
    cwd: &Path,
    messages: &[Message],
    state: &serde_json::Value,
) -> anyhow::Result<(Duration, Written)> {
    let meta = session_meta(cwd);
    store.create_session(&meta).await?;
    let (prompt, rounds) = messages.split_at(1);
    store.append_message(&meta.id, &prompt[0]).await?;
    store.sync().await?;
    let start = Instant::now();
    let written = store_write::like_the_loop(store, &meta.id, rounds, state).await?;
    let elapsed = start.elapsed();
    let stored = store.load_messages(&meta.id).await?;
    ensure!(
        stored == messages,
        "the store gave back {} messages, not the {} written (or not the same ones)",
        stored.len(),
        messages.len()
    );
    Ok((elapsed, written))
}

/// The long session to resume: a prompt, [`RESUME_ROUNDS`] rounds, an answer.
pub fn resume_history() -> Vec<Message> {
    let mut messages = history::rounds(RESUME_ROUNDS, SEED + 1);
    messages.push(Message::new(
        "bench-answer",
        gyre_protocol::Role::Assistant,
        vec![gyre_protocol::Part::text(
            "All the checks pass now; the parser handles empty input.",
        )],
    ));
    messages
}

/// How a long session gets into the store before it is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Message by message, a sync per turn (see `store_write`).
    LikeTheLoop,
    /// One `import_session` transaction: the same rows, far fewer commits.
    Import,
}

/// Writes `messages` as a new session; returns its id and the wall time.
pub async fn fill(
    store: &dyn SessionStore,
    workspace: &Path,
    messages: &[Message],
    how: Fill,
) -> anyhow::Result<(String, Duration)> {
    let meta = session_meta(workspace);
    let state = store_write::loop_state()?;
    let start = Instant::now();
    match how {
        Fill::LikeTheLoop => {
            store.create_session(&meta).await?;
            store_write::like_the_loop(store, &meta.id, messages, &state).await?;
        }
        Fill::Import => {
            let record = SessionRecord {
                meta: meta.clone(),
                state: Some(state),
                messages: messages.to_vec(),
                checkpoints: Vec::new(),
            };
            store.import_session(&record).await?;
        }
    }
    Ok((meta.id, start.elapsed()))
}

/// `runs` timed `Session::load`s (after one warm-up), each checked.
pub async fn loads(
    store: &dyn SessionStore,
    id: &str,
    messages: &[Message],
    runs: usize,
) -> anyhow::Result<Vec<f64>> {
    let mut ms = Vec::with_capacity(runs);
    for run in 0..=runs {
        let start = Instant::now();
        let session = gyre_core::Session::load(store, id).await?;
        let elapsed = start.elapsed();
        ensure!(
            session.history.len() == messages.len()
                && session.history.last().map(|m| &m.id) == messages.last().map(|m| &m.id),
            "Session::load gave {} messages, not the {} stored",
            session.history.len(),
            messages.len()
        );
        drop(session);
        if run > 0 {
            ms.push(elapsed.as_secs_f64() * 1e3);
        }
    }
    Ok(ms)
}

/// What [`DISK_TURNS`] turns take in a fresh SQLite file.
#[derive(Debug, Clone, Copy)]
pub struct Disk {
    pub turns: usize,
    pub after_sync: DiskBytes,
    pub after_truncate: DiskBytes,
    /// After the store closed (its last connection checkpoints and removes
    /// the WAL).
    pub after_close: DiskBytes,
    /// The text the model reads (see `history::text_bytes`).
    pub content_bytes: usize,
    /// The serde JSON of every part: what the store writes into `parts.data`.
    pub part_json_bytes: usize,
}

pub async fn disk() -> anyhow::Result<Disk> {
    let messages = history::rounds(DISK_TURNS, SEED + 2);
    let dir = tempfile::tempdir().context("cannot make a temp dir")?;
    let db = dir.path().join("sessions.db");
    let store = SqliteStore::open(&db).await?;
    let meta = session_meta(dir.path());
    store.create_session(&meta).await?;
    let state = store_write::loop_state()?;
    let written = store_write::like_the_loop(&store, &meta.id, &messages, &state).await?;
    ensure!(
        written.turns == DISK_TURNS,
        "wrote {} turns, not {DISK_TURNS}",
        written.turns
    );
    let after_sync = DiskBytes::of(&db)?;
    store_write::checkpoint_truncate(&db).await?;
    let after_truncate = DiskBytes::of(&db)?;
    ensure!(
        store.load_messages(&meta.id).await?.len() == messages.len(),
        "the store lost messages"
    );
    store.close().await?;
    let after_close = DiskBytes::of(&db)?;
    let part_json_bytes = messages
        .iter()
        .flat_map(|m| &m.parts)
        .map(|part| serde_json::to_string(part).map(|json| json.len()))
        .sum::<Result<usize, _>>()
        .context("cannot serialise a part")?;
    Ok(Disk {
        turns: written.turns,
        after_sync,
        after_truncate,
        after_close,
        content_bytes: history::text_bytes(&messages),
        part_json_bytes,
    })
}
