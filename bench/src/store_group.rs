//! The `store` group's rows: appends per second to the session store as the
//! loop writes (SQLite, and PostgreSQL when `GYRE_BENCH_DATABASE_URL` is
//! set), resuming a 10,000-message session (`Session::load` in-process, and
//! the `gyre` binary's `run --resume`), and the bytes a SQLite file takes
//! per 1,000 turns.
//!
//! Each part fails on its own: a failed part gives FAILED rows and its error
//! under the table; the others still run. Without the variable the
//! PostgreSQL rows say so instead of a number. The scratch schema is dropped
//! whatever the PostgreSQL rows' outcome.

use std::path::Path;
use std::sync::Arc;

use gyre_store::SessionStore;
use gyre_store_sql::SqliteStore;
use tokio::runtime::Runtime;

use crate::args::Options;
use crate::groups::{cpu, outcome, progress, rss, summary, wall};
use crate::history;
use crate::report::{Report, Row, Unit, Value};
use crate::resume_rss;
use crate::scenarios::{RunDirs, Samples};
use crate::stats;
use crate::store_bench::{self, AppendTarget, Appends, Disk, Fill};
use crate::store_pg::{self, Scratch};

const LOAD_TARGET_MS: f64 = 100.0;
const SKIPPED: &str = "set GYRE_BENCH_DATABASE_URL";

/// The PostgreSQL side: not asked for, failed to set up, or ready.
enum Pg {
    Unset,
    Failed,
    Ready(Scratch, Arc<dyn SessionStore>),
}

impl Pg {
    fn store(&self) -> Option<&dyn SessionStore> {
        match self {
            Pg::Ready(_, store) => Some(store.as_ref()),
            Pg::Unset | Pg::Failed => None,
        }
    }

    /// The value of a row this side could not measure.
    fn missing(&self) -> Value {
        match self {
            Pg::Unset => Value::Skipped(SKIPPED),
            Pg::Failed | Pg::Ready(..) => Value::Failed,
        }
    }
}

pub fn store(report: &mut Report, gyre: &Path, options: &Options) {
    let Some(runtime) = outcome(report, resume_rss::runtime()) else {
        return;
    };
    let pg = match store_pg::database_url() {
        None => Pg::Unset,
        Some(url) => {
            progress("store: a scratch schema in GYRE_BENCH_DATABASE_URL's database");
            match outcome(report, runtime.block_on(open_pg(&url))) {
                Some((scratch, store)) => Pg::Ready(scratch, store),
                None => Pg::Failed,
            }
        }
    };
    appends(report, &runtime, options, &pg);
    resume(report, &runtime, gyre, options, &pg);
    disk(report, &runtime);
    if let Pg::Ready(scratch, store) = pg {
        drop(store);
        outcome(report, runtime.block_on(scratch.drop_schema()));
    }
}

async fn open_pg(url: &str) -> anyhow::Result<(Scratch, Arc<dyn SessionStore>)> {
    let mut scratch = Scratch::create(url).await?;
    let opened = async {
        let store = gyre_store_sql::open(&scratch.location).await?;
        anyhow::ensure!(
            scratch.holds_the_store().await?,
            "the store's tables are not in the scratch schema {}",
            scratch.schema()
        );
        Ok(store)
    }
    .await;
    match opened {
        Ok(store) => Ok((scratch, store)),
        Err(e) => {
            let _ = scratch.drop_schema().await;
            Err(e)
        }
    }
}

fn appends(report: &mut Report, runtime: &Runtime, options: &Options, pg: &Pg) {
    let runs = options.store_runs;
    for backend in ["SQLite", "PostgreSQL"] {
        let what = |s: &str| {
            format!(
                "store appends, {backend}, {} turns a run: {s}",
                store_bench::APPEND_TURNS
            )
        };
        let measured = match (backend, pg.store()) {
            ("SQLite", _) => {
                progress(&format!("{} ×{runs}", what("appends")));
                Ok(outcome(
                    report,
                    runtime.block_on(store_bench::appends(AppendTarget::Sqlite, runs)),
                ))
            }
            (_, Some(store)) => {
                progress(&format!("{} ×{runs}", what("appends")));
                Ok(outcome(
                    report,
                    runtime.block_on(store_bench::appends(AppendTarget::Store(store), runs)),
                ))
            }
            (_, None) => Err(pg.missing()),
        };
        let (per_turn, sync, appends_per_s, turns_per_s) = match measured {
            Ok(Some(a)) => (
                summary(Some(&a.ms_per_turn())),
                summary(Some(&a.sync_ms_per_turn())),
                rate(&a, a.written.appends),
                rate(&a, a.written.turns),
            ),
            Ok(None) => (Value::Failed, Value::Failed, Value::Failed, Value::Failed),
            Err(missing) => (missing.clone(), missing.clone(), missing.clone(), missing),
        };
        report.rows.push(Row::new(
            what("time per turn (2 messages, 3 appends, state, sync)"),
            per_turn,
            Unit::Milliseconds,
        ));
        report.rows.push(Row::new(
            what("of which `sync`, per turn"),
            sync,
            Unit::Milliseconds,
        ));
        report
            .rows
            .push(Row::new(what("appends/s"), appends_per_s, Unit::PerSecond));
        report
            .rows
            .push(Row::new(what("turns/s"), turns_per_s, Unit::PerSecond));
    }
    report.notes.push(format!(
        "Store appends (in-process): a prompt and {} rounds (`src/history.rs` `rounds`: assistant \
         text of 80–500 bytes and one tool call; a user message with its 1.5–2.5 KB result) \
         written as core's loop records them: `append_message` with the first part, \
         `append_part` for the call, then at each turn boundary (after the result) `save_state` \
         (a default QueryState's JSON) and `sync`. Timed: the {} turns; the prompt, opening the \
         store and making the session are outside the clock. SQLite: a fresh file per run under \
         the temp dir (ext4 here; WAL, synchronous=NORMAL, `sync` = a PASSIVE checkpoint, an \
         fsync when it cannot complete); PostgreSQL: a new session per run in a scratch schema \
         (`options=-c search_path=…`, dropped after), where `sync` does nothing and every call \
         is a committed transaction. Of which `sync`: the time inside the `sync` calls. \
         appends/s and turns/s = count / median wall. Each run checked: the store gives back exactly the messages written.",
        store_bench::APPEND_TURNS,
        store_bench::APPEND_TURNS
    ));
}

/// count / median wall, per second.
fn rate(appends: &Appends, count: usize) -> Value {
    stats::median(&appends.ms).map_or(Value::Failed, |ms| {
        Value::MedianOnly(count as f64 / (ms / 1e3))
    })
}

fn resume(report: &mut Report, runtime: &Runtime, gyre: &Path, options: &Options, pg: &Pg) {
    let runs = options.store_runs;
    let messages = store_bench::resume_history();
    let count = messages.len();
    let text_mib = history::text_bytes(&messages) as f64 / (1024.0 * 1024.0);
    let name = format!("{count}-message session ({text_mib:.1} MB of text)");

    progress(&format!(
        "store: writing a {name} into SQLite like the loop"
    ));
    let sqlite = outcome(
        report,
        runtime.block_on(async {
            let dirs = RunDirs::new()?;
            resume_rss::write_config(&dirs.home())?;
            let store = SqliteStore::open(&dirs.home().join("sessions.db")).await?;
            let (id, write) =
                store_bench::fill(&store, &dirs.workspace(), &messages, Fill::LikeTheLoop).await?;
            store.close().await?;
            // Opened again, as a resumed process does (its WAL checkpointed
            // and removed by the close).
            progress(&format!("Session::load, {name}, SQLite ×{runs}"));
            let store = SqliteStore::open(&dirs.home().join("sessions.db")).await?;
            let loads = store_bench::loads(&store, &id, &messages, runs).await;
            store.close().await?;
            anyhow::Ok((dirs, id, write, loads?))
        }),
    );
    report.rows.push(Row::new(
        format!("write the {name} like the loop, SQLite: wall (one run)"),
        sqlite.as_ref().map_or(Value::Failed, |(_, _, write, _)| {
            Value::MedianOnly(write.as_secs_f64() * 1e3)
        }),
        Unit::Milliseconds,
    ));
    report.rows.push(
        Row::new(
            format!("`Session::load`, {name}, SQLite"),
            summary(sqlite.as_ref().map(|(_, _, _, loads)| loads.as_slice())),
            Unit::Milliseconds,
        )
        .target(LOAD_TARGET_MS),
    );

    let pg_loads = match pg.store() {
        Some(store) => {
            progress(&format!("Session::load, {name}, PostgreSQL ×{runs}"));
            let loads = outcome(
                report,
                runtime.block_on(async {
                    let (id, _) =
                        store_bench::fill(store, Path::new("/"), &messages, Fill::Import).await?;
                    store_bench::loads(store, &id, &messages, runs).await
                }),
            );
            summary(loads.as_deref())
        }
        None => pg.missing(),
    };
    report.rows.push(Row::new(
        format!("`Session::load`, {name}, PostgreSQL"),
        pg_loads,
        Unit::Milliseconds,
    ));

    let scenario = format!("`gyre run --resume`, {name}, SQLite");
    let binary: Option<Samples> = sqlite.and_then(|(dirs, id, _, _)| {
        progress(&format!("{scenario} ×{runs}"));
        let measured =
            resume_rss::measure_stored(runtime, gyre, &scenario, &dirs, &id, &messages, runs);
        outcome(report, measured).map(|r| r.samples)
    });
    report
        .rows
        .push(wall(&binary, &format!("{scenario}: wall")));
    report
        .rows
        .push(cpu(&binary, &format!("{scenario}: CPU (user+sys)")));
    report
        .rows
        .push(rss(&binary, &format!("{scenario}: peak RSS")));
    report.notes.push(format!(
        "Store resume: a prompt, {} rounds as in the appends rows and a closing answer \
         ({count} messages), written once like the loop (a sync per turn) into a fresh \
         GYRE_HOME's sessions.db; the write's wall is one sample. `Session::load` \
         (in-process): gyre_core's load (messages, state, meta; the history from its last \
         compact boundary) on a store closed after the write and opened again, once for all \
         runs (outside the clock), the file in the OS page cache; checked: every message \
         back. PostgreSQL: the same messages imported in one \
         `import_session` transaction (fewer commits; the same rows), then loaded the same \
         way. The binary: `gyre run \"one more\" --resume ID --output-format json` against the \
         in-process mock, as in the context group's resume rows (config window 10M tokens, \
         so nothing is pruned; each run grows the session by two messages).",
        store_bench::RESUME_ROUNDS
    ));
}

fn disk(report: &mut Report, runtime: &Runtime) {
    progress(&format!(
        "store: {} turns into a fresh SQLite file",
        store_bench::DISK_TURNS
    ));
    let measured = outcome(report, runtime.block_on(store_bench::disk()));
    let what = |s: &str| format!("SQLite bytes per 1,000 turns: {s}");
    let per_1000 = |f: fn(&Disk) -> u64| {
        measured.as_ref().map_or(Value::Failed, |d| {
            Value::MedianOnly(f(d) as f64 / (d.turns as f64 / 1000.0) / 1024.0)
        })
    };
    report.rows.push(Row::new(
        what("on disk after the last sync (db + WAL + SHM)"),
        per_1000(|d| d.after_sync.total()),
        Unit::Kibibytes,
    ));
    report.rows.push(Row::new(
        what("on disk after `wal_checkpoint(TRUNCATE)`"),
        per_1000(|d| d.after_truncate.total()),
        Unit::Kibibytes,
    ));
    report.rows.push(Row::new(
        what("message content written (text the model reads)"),
        per_1000(|d| d.content_bytes as u64),
        Unit::Kibibytes,
    ));
    report.rows.push(Row::new(
        what("on disk after TRUNCATE / content"),
        measured.as_ref().map_or(Value::Failed, |d| {
            Value::MedianOnly(d.after_truncate.total() as f64 / d.content_bytes as f64)
        }),
        Unit::Ratio,
    ));
    let detail = match &measured {
        Some(d) => format!(
            "; files after the last sync: db {} KB, WAL {} KB, SHM {} KB; after TRUNCATE: db {} \
             KB, WAL {} KB, SHM {} KB; after the store closed (WAL and SHM removed): {} KB; the \
             parts' serde JSON (what `parts.data` holds) is {} KB",
            kib(d.after_sync.db),
            kib(d.after_sync.wal),
            kib(d.after_sync.shm),
            kib(d.after_truncate.db),
            kib(d.after_truncate.wal),
            kib(d.after_truncate.shm),
            kib(d.after_close.total()),
            kib(d.part_json_bytes as u64),
        ),
        None => String::new(),
    };
    report.notes.push(format!(
        "Store bytes on disk (one run; sizes, not times): a prompt and {} rounds as in the \
         appends rows, written like the loop into a fresh SQLite file, then file sizes (a \
         missing file is 0); then `PRAGMA wal_checkpoint(TRUNCATE)` from a second connection \
         while the store's stays open, and the sizes again. KB = KiB. Content = text parts, \
         call names and arguments, result text; not ids or JSON framing{detail}.",
        store_bench::DISK_TURNS
    ));
}

fn kib(bytes: u64) -> String {
    format!("{:.0}", bytes as f64 / 1024.0)
}
