//! The `gyre` binary resuming a stored session with a large history:
//! `gyre run "one more" --resume ID --output-format json` against the mock
//! server (in-process, Anthropic wire), measured as a child process (wall,
//! CPU, peak RSS: see `runner`), started by the small measuring helper
//! (`helper`: this process is far bigger than gyre, and a child started
//! from it directly would report this process's peak RSS as its own).
//!
//! Invariants:
//! - The session is written before the first run, straight into a fresh
//!   `GYRE_HOME`'s `sessions.db` with gyre_store_sql's `SqliteStore`
//!   (`SessionMeta` and `append_message`; no loop state: the state column
//!   stays empty, as for a session that never finished a turn). The store is
//!   closed (its WAL checkpointed) before gyre opens it. [`measure_stored`]
//!   takes a session the caller wrote the same way (the `store` group writes
//!   it as the loop does, with its state).
//! - Every run resumes that same session, so the history grows by this
//!   run's prompt and answer (~20 bytes) from one run to the next; a fresh
//!   copy of a 10 MB database per run would cost more than it tells.
//! - The model's window is set in the user config
//!   (`$XDG_CONFIG_HOME/gyre/config.toml`, `[models.m] context_window`) far
//!   above the history, so no pruning or compaction happens: what is
//!   measured is loading the history and sending it once.
//! - A fresh mock server per run (made before the clock starts), so its
//!   record holds one request, which is checked: it carries the whole
//!   history (at least as many messages, and at least its text bytes).
//! - Each run is checked: exit 0, one JSON result with `subtype` success,
//!   `num_turns` 1 and the scripted answer. One warm-up run, not recorded.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use gyre_mock::{Item, MockServer, Reply, Script, Step, StreamReply, When};
use gyre_protocol::Message;
use gyre_store::{SessionMeta, SessionStore};
use gyre_store_sql::SqliteStore;
use serde_json::Value;
use tokio::runtime::Runtime;

use crate::helper;
use crate::history;
use crate::runner::{ExitKind, Measured};
use crate::scenarios::{RunDirs, Samples, read_bounded, run_label};

/// The model the config names, with a window no history here comes near.
const MODEL: &str = "m";
const CONTEXT_WINDOW: u64 = 10_000_000;
/// One run must be done within this (a 10 MB history takes well under it).
const RUN_LIMIT: Duration = Duration::from_secs(60);
const PROMPT: &str = "one more";
const ANSWER: &str = "Done.";

/// Runs of one history size.
#[derive(Debug, Clone)]
pub struct ResumeSamples {
    pub samples: Samples,
    /// The history's text, in MiB (see `history::text_bytes`).
    pub history_mib: f64,
}

/// `runs` resumed runs (after one warm-up) of a session holding `messages`.
pub fn measure(
    gyre: &Path,
    name: &str,
    messages: &[Message],
    runs: usize,
) -> anyhow::Result<ResumeSamples> {
    let runtime = runtime()?;
    let dirs = RunDirs::new()?;
    write_config(&dirs.home())?;
    let id = runtime
        .block_on(store_session(&dirs, messages))
        .context("cannot write the session")?;
    measure_stored(&runtime, gyre, name, &dirs, &id, messages, runs)
}

/// A runtime whose worker lets the mock answer while this thread waits for
/// the child.
pub fn runtime() -> anyhow::Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start a tokio runtime")
}

/// `runs` resumed runs (after one warm-up) of the session `id`, holding
/// `messages`, that the caller wrote (and closed) into `dirs`' GYRE_HOME
/// (`sessions.db`), beside the config [`write_config`] wrote.
pub fn measure_stored(
    runtime: &Runtime,
    gyre: &Path,
    name: &str,
    dirs: &RunDirs,
    id: &str,
    messages: &[Message],
    runs: usize,
) -> anyhow::Result<ResumeSamples> {
    let helper = std::env::current_exe().context("cannot find this program's path")?;
    let mut samples = Samples::default();
    for run in 0..=runs {
        let label = run_label(name, run, runs);
        let m = one_run(runtime, &helper, gyre, dirs, id, messages)
            .map_err(|e| dirs.failure(&format!("{e:#}"), &label))?;
        if run > 0 {
            samples.push(&m);
        }
    }
    Ok(ResumeSamples {
        samples,
        history_mib: history::text_bytes(messages) as f64 / (1024.0 * 1024.0),
    })
}

/// The user config giving the model a window far above any history here.
pub fn write_config(home: &Path) -> anyhow::Result<()> {
    let dir = home.join(".config").join("gyre");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot make {}", dir.display()))?;
    let config = format!("[models.{MODEL}]\ncontext_window = {CONTEXT_WINDOW}\n");
    std::fs::write(dir.join("config.toml"), config).context("cannot write the config")
}

/// Writes the session and closes the store; returns its id.
async fn store_session(dirs: &RunDirs, messages: &[Message]) -> anyhow::Result<String> {
    let store = SqliteStore::open(&dirs.home().join("sessions.db")).await?;
    let meta = session_meta(&dirs.workspace());
    store.create_session(&meta).await?;
    for message in messages {
        store.append_message(&meta.id, message).await?;
    }
    store.close().await?;
    Ok(meta.id)
}

/// A new session's meta, with the provider and model the runs ask for.
pub fn session_meta(workspace: &Path) -> SessionMeta {
    let now = gyre_core::now_ms();
    SessionMeta {
        id: gyre_core::new_id(),
        cwd: workspace.display().to_string(),
        provider: "anthropic".into(),
        model: MODEL.into(),
        title: "a long benchmark session".into(),
        created_at_ms: now,
        updated_at_ms: now,
        parent_id: None,
    }
}

fn one_run(
    runtime: &Runtime,
    helper: &Path,
    gyre: &Path,
    dirs: &RunDirs,
    id: &str,
    messages: &[Message],
) -> anyhow::Result<Measured> {
    let mock = runtime
        .block_on(MockServer::start(answer()))
        .context("cannot start the mock server")?;
    let result = dirs.home().join("measured");
    let mut command = dirs.command(helper)?;
    helper::command(&mut command, &result, RUN_LIMIT, gyre)
        .args(["run", PROMPT, "--resume", id])
        .args(["--provider", "anthropic", "--model", MODEL])
        .arg("--cwd")
        .arg(dirs.workspace())
        .args(["--output-format", "json"])
        .env("XDG_CONFIG_HOME", dirs.home().join(".config"))
        .env("ANTHROPIC_API_KEY", "bench")
        .env("ANTHROPIC_BASE_URL", mock.anthropic_base_url());
    let m = helper::run(&mut command, &result, RUN_LIMIT)?;
    if m.exit != ExitKind::Code(0) {
        bail!("{}", m.exit);
    }
    check_result(&read_bounded(&dirs.stdout())?)?;
    check_request(&mock, messages)?;
    runtime.block_on(mock.shutdown());
    Ok(m)
}

fn answer() -> Script {
    Script::new(vec![Step {
        when: When::default(),
        times: None,
        reply: Reply::Stream(StreamReply {
            items: vec![Item::Text(ANSWER.into())],
            ..StreamReply::default()
        }),
    }])
}

fn check_result(stdout: &str) -> anyhow::Result<()> {
    let result: Value =
        serde_json::from_str(stdout.trim()).context("stdout is not one JSON result")?;
    ensure!(
        result["subtype"] == "success",
        "subtype is {}, not \"success\"",
        result["subtype"]
    );
    ensure!(
        result["num_turns"] == 1,
        "num_turns is {}",
        result["num_turns"]
    );
    ensure!(
        result["result"] == ANSWER,
        "the answer is {}",
        result["result"]
    );
    Ok(())
}

/// The one request carried the stored history and the new prompt.
fn check_request(mock: &MockServer, messages: &[Message]) -> anyhow::Result<()> {
    let requests = mock.requests();
    ensure!(
        requests.len() == 1,
        "the mock saw {} requests, not 1",
        requests.len()
    );
    let body = &requests[0].body;
    let sent = body["messages"].as_array().map_or(0, Vec::len);
    ensure!(
        sent > messages.len(),
        "the request carried {sent} messages; the session holds {} before the prompt",
        messages.len()
    );
    let bytes = body.to_string().len();
    let text = history::text_bytes(messages);
    ensure!(
        bytes >= text,
        "the request body was {bytes} bytes, less than the history's {text} bytes of text"
    );
    Ok(())
}
