//! What pruning saves over a long session, in-process: gyre_core's `Agent`
//! with a `SqliteStore` in a temp dir and the builtin tools, against the
//! in-process mock server (Anthropic wire) whose window is 32k tokens (it
//! refuses a bigger request with Anthropic's real overflow error).
//!
//! The session: 100 turns; in every turn but the last the model says a few
//! sentences and calls `bash` to print a 20 KB file (so every tool output is
//! 20 KB), then it answers. Run once with pruning on and once with it off;
//! compaction is on in both, `max_output_tokens` 4096, the agent's window
//! 32k. Summary requests are recognised by their instruction.
//!
//! Invariants:
//! - The figures are counts, not times: bytes are the sum of the recorded
//!   request bodies' JSON lengths (summary requests included), so one run
//!   per setting is the whole measurement (it is deterministic up to the
//!   calibration of token estimates, which depends only on what was sent).
//! - The scenario fails unless the run completes all 100 turns, and unless
//!   every request fitted the window (the mock's count, body bytes / 4, at
//!   most 32k): an overflow is what this machinery exists to prevent.
//! - Bounded: the run is given 300 s; the mock keeps at most its bounded
//!   record of requests.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use futures::StreamExt;
use gyre_core::{Agent, AgentConfig, PermissionMode, Pruning, RunRequest, Session};
use gyre_llm::{AnthropicClient, ClientConfig, ModelClient};
use gyre_mock::MockServer;
use gyre_protocol::{Event, FinishReason};
use gyre_store_sql::SqliteStore;
use gyre_tools::{Registry, Workspace};

use crate::priced_session::SUMMARY_MARK;

pub const WINDOW: u64 = 32_000;
pub const TURNS: usize = 100;
const MAX_OUTPUT_TOKENS: u32 = 4_096;
/// The printed file: 20 KB over ~340 lines.
const LINE: &str = "0123456789 the quick brown fox jumps over the lazy dog 0123\n";
const FILE_BYTES: usize = 20_000;
const RUN_LIMIT: Duration = Duration::from_secs(300);

/// What one long session sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sent {
    /// Request-body bytes, summaries included.
    pub bytes: u64,
    pub requests: usize,
    /// Of `requests`, the summarising ones.
    pub summary_requests: usize,
    /// `CompactBoundary` events.
    pub compactions: usize,
    /// `ContextPruned` events.
    pub prune_steps: usize,
    /// The largest request by the mock's count.
    pub max_tokens: u64,
    pub wall: Duration,
}

/// One [`TURNS`]-turn session with `pruning`.
pub fn measure(pruning: Pruning) -> anyhow::Result<Sent> {
    measure_turns(pruning, TURNS)
}

fn measure_turns(pruning: Pruning, turns: usize) -> anyhow::Result<Sent> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a tokio runtime")?;
    runtime.block_on(async {
        tokio::time::timeout(RUN_LIMIT, session(pruning, turns))
            .await
            .with_context(|| format!("the session did not end within {RUN_LIMIT:?}"))?
    })
}

async fn session(pruning: Pruning, turns: usize) -> anyhow::Result<Sent> {
    let workspace = tempfile::tempdir().context("cannot make a temp dir")?;
    let home = tempfile::tempdir().context("cannot make a temp dir")?;
    std::fs::write(
        workspace.path().join("big.txt"),
        LINE.repeat(FILE_BYTES / LINE.len()),
    )
    .context("cannot write big.txt")?;
    let store = Arc::new(SqliteStore::open(&home.path().join("sessions.db")).await?);
    let server = MockServer::start(crate::priced_session::script(turns, WINDOW))
        .await
        .context("cannot start the mock server")?;
    let client: Arc<dyn ModelClient> = Arc::new(AnthropicClient::new(ClientConfig::new(
        server.anthropic_base_url(),
        Some("bench".into()),
    )));
    let system = gyre_core::prompt::system_prompt(workspace.path(), None);
    let mut config = AgentConfig::new("bench-model", system);
    config.permissions.mode = PermissionMode::BypassPermissions;
    config.max_output_tokens = MAX_OUTPUT_TOKENS;
    config.context.window = Some(WINDOW);
    config.context.pruning = pruning;
    let agent = Agent::new(
        client,
        store.clone(),
        Registry::builtin(),
        Arc::new(Workspace::new(workspace.path())?),
        config,
    );
    let prompt = "print big.txt many times";
    let cwd = workspace.path().display().to_string();
    let session = Session::create(store.as_ref(), &cwd, "anthropic", "bench-model", prompt).await?;

    let start = Instant::now();
    let mut run = agent.start(session, RunRequest::prompt(prompt));
    let (mut compactions, mut prune_steps) = (0, 0);
    let mut summary = None;
    while let Some(event) = run.events.next().await {
        match event {
            Event::CompactBoundary { .. } => compactions += 1,
            Event::ContextPruned { .. } => prune_steps += 1,
            Event::RunFinished(s) => summary = Some(s),
            _ => {}
        }
    }
    let wall = start.elapsed();
    run.finish().await.context("the run's task failed")?;
    let summary = summary.context("the run sent no RunFinished")?;
    ensure!(
        summary.reason == FinishReason::Completed,
        "the run ended {:?}: {:?}",
        summary.reason,
        summary.error
    );
    ensure!(
        summary.num_turns as usize == turns,
        "{} turns, not {turns}",
        summary.num_turns
    );

    let requests = server.requests();
    let over: Vec<u64> = requests
        .iter()
        .map(|r| r.input_tokens)
        .filter(|&t| t > WINDOW)
        .collect();
    ensure!(
        over.is_empty(),
        "{} request(s) did not fit the {WINDOW}-token window: {over:?}",
        over.len()
    );
    Ok(Sent {
        bytes: requests
            .iter()
            .map(|r| r.body.to_string().len() as u64)
            .sum(),
        requests: requests.len(),
        summary_requests: requests
            .iter()
            .filter(|r| r.body.to_string().contains(SUMMARY_MARK))
            .count(),
        compactions,
        prune_steps,
        max_tokens: requests.iter().map(|r| r.input_tokens).max().unwrap_or(0),
        wall,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_session_fits_the_window_both_ways() {
        let on = measure_turns(Pruning::On, 12).expect("pruning on");
        let off = measure_turns(Pruning::Off, 12).expect("pruning off");
        for sent in [&on, &off] {
            assert!(sent.max_tokens <= WINDOW, "{sent:?}");
            assert!(sent.requests >= 12, "{sent:?}");
            assert!(sent.compactions + sent.prune_steps > 0, "{sent:?}");
        }
        assert_eq!(off.prune_steps, 0, "{off:?}");
        assert!(off.compactions > 0, "{off:?}");
    }
}
