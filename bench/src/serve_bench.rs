//! `gyre serve` under load: sessions created with a prompt over HTTP, each
//! followed on its SSE stream to its `run_finished`, against the mock with a
//! fixed pause before every answer.
//!
//! Invariants:
//! - The server is the real `gyre serve` binary (release) in a fresh
//!   GYRE_HOME and workspace with a clean environment; the mock is a
//!   `gyre mock-server` process; both are killed on every path (guards).
//! - Every session is checked: its stream numbered 1, 2, … without gaps,
//!   exactly one `run_started` and one completed `run_finished` with the
//!   scripted answer. A session that fails fails the scenario.
//! - Added latency is measured by the client from just before it sends
//!   `POST /sessions` (with the prompt) to receiving the run's first
//!   `text_delta` (resp. its `run_finished`), minus the mock's fixed
//!   [`MODEL_DELAY_MS`] pause before each answer's headers. The streaming of
//!   the short answer itself takes microseconds over loopback.
//! - Everything is bounded in time ([`LIMIT`] per phase).

use std::path::Path;
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::mock::MockServer;
use crate::scenarios::RunDirs;

/// The mock's pause before each answer: the model's "thinking" time.
pub const MODEL_DELAY_MS: u64 = 200;
/// Sessions run one after another, for the unloaded figures.
pub const ALONE_RUNS: usize = 20;
/// What the model answers (two text deltas of the mock's 16 characters).
const ANSWER: &str = "The bench answer is here.";
/// The most one phase may take.
const LIMIT: Duration = Duration::from_secs(300);
/// How long the server may take to say where it listens.
const STARTUP_LIMIT: Duration = Duration::from_secs(20);

/// Added latencies (ms) of one phase, one entry per session.
#[derive(Debug, Default, Clone)]
pub struct Latencies {
    pub first_ms: Vec<f64>,
    pub end_ms: Vec<f64>,
}

/// What the scenario measured.
#[derive(Debug, Clone)]
pub struct Measured {
    pub alone: Latencies,
    pub burst: Latencies,
    /// From the first POST of the burst to the last `run_finished`.
    pub burst_wall_ms: f64,
    /// The server's RSS after start-up and one session (VmRSS).
    pub rss_before_mib: f64,
    /// The server's peak RSS over everything (VmHWM), read after the burst.
    pub rss_peak_mib: f64,
    pub events: usize,
}

/// The running server; killed on drop.
struct Served {
    child: Child,
    base: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn measure(gyre: &Path, sessions: usize) -> anyhow::Result<Measured> {
    let dirs = RunDirs::new()?;
    let script = dirs.home().join("serve-script.json");
    let steps = json!({"steps": [{"reply": {
        "items": [{"text": ANSWER}],
        "stall_before_headers_ms": MODEL_DELAY_MS
    }}]});
    std::fs::write(&script, steps.to_string()).context("cannot write the mock's script")?;
    let mock = MockServer::start(gyre, &script)?;
    let served = start(gyre, &dirs, &mock.anthropic_base_url())?;
    let pid = served.child.id();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start a runtime")?;
    runtime.block_on(async {
        gyre_tools::tls::install_crypto_provider();
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(sessions)
            .build()
            .context("cannot build the HTTP client")?;
        let base: Arc<str> = Arc::from(served.base.as_str());
        // Warm-up, checked, not recorded.
        one_session(&http, &base, 0)
            .await
            .context("warm-up session")?;
        let rss_before_mib = memory(pid, "VmRSS")?;

        let mut alone = Latencies::default();
        let mut events = 0;
        for i in 1..=ALONE_RUNS {
            let (first, end, count) = tokio::time::timeout(LIMIT, one_session(&http, &base, i))
                .await
                .context("a lone session took too long")??;
            alone.first_ms.push(first);
            alone.end_ms.push(end);
            events += count;
        }

        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..sessions {
            let (http, base) = (http.clone(), base.clone());
            tasks.spawn(async move { one_session(&http, &base, 1000 + i).await });
        }
        let mut burst = Latencies::default();
        let finished = tokio::time::timeout(LIMIT, async {
            while let Some(joined) = tasks.join_next().await {
                let (first, end, count) = joined.context("a session's task")??;
                burst.first_ms.push(first);
                burst.end_ms.push(end);
                events += count;
            }
            anyhow::Ok(())
        })
        .await;
        let burst_wall_ms = ms(started.elapsed());
        match finished {
            Ok(result) => result?,
            Err(_) => bail!(
                "{} of {sessions} concurrent sessions finished within {LIMIT:?}",
                burst.end_ms.len()
            ),
        }
        Ok(Measured {
            alone,
            burst,
            burst_wall_ms,
            rss_before_mib,
            rss_peak_mib: memory(pid, "VmHWM")?,
            events,
        })
    })
}

fn start(gyre: &Path, dirs: &RunDirs, mock_url: &str) -> anyhow::Result<Served> {
    let mut command = dirs.command(gyre)?;
    command
        .args([
            "serve",
            "--port",
            "0",
            "--permission-mode",
            "bypassPermissions",
        ])
        .env("XDG_CONFIG_HOME", dirs.home())
        .env("ANTHROPIC_API_KEY", "bench-key")
        .env("ANTHROPIC_BASE_URL", mock_url);
    let child = command
        .spawn()
        .with_context(|| format!("cannot start {} serve", gyre.display()))?;
    let mut served = Served {
        child,
        base: String::new(),
    };
    let deadline = Instant::now() + STARTUP_LIMIT;
    loop {
        let said = std::fs::read_to_string(dirs.stderr()).unwrap_or_default();
        if let Some(base) = listening_url(&said) {
            served.base = base.to_string();
            return Ok(served);
        }
        if let Some(status) = served.child.try_wait()? {
            bail!("gyre serve exited ({status}) before listening: {said}");
        }
        if Instant::now() > deadline {
            bail!("gyre serve did not listen within {STARTUP_LIMIT:?}: {said}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The URL of `gyre serve listening on http://ADDR:PORT`.
fn listening_url(stderr: &str) -> Option<&str> {
    stderr
        .lines()
        .find_map(|line| line.strip_prefix("gyre serve listening on "))
        .map(str::trim)
}

/// One session: created with a prompt, its stream read to `run_finished`;
/// the added latencies to the first text and to the end (ms), and the
/// number of events read.
async fn one_session(
    http: &reqwest::Client,
    base: &str,
    i: usize,
) -> anyhow::Result<(f64, f64, usize)> {
    let delay = MODEL_DELAY_MS as f64;
    let sent = Instant::now();
    let created: Value = http
        .post(format!("{base}/sessions"))
        .json(&json!({"prompt": format!("bench session {i}")}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let id = created["session"]["id"]
        .as_str()
        .context("no session id in the answer")?;
    let response = http
        .get(format!("{base}/sessions/{id}/events"))
        .send()
        .await?
        .error_for_status()?;
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let (mut last_id, mut first, mut started) = (0_u64, None, 0);
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let Some((seq, event, data)) = parse(&block)? else {
                continue;
            };
            ensure!(
                seq == last_id + 1,
                "session {id}: event {seq} after {last_id}"
            );
            last_id = seq;
            match event.as_str() {
                "run_started" => started += 1,
                "text_delta" if first.is_none() => first = Some(ms(sent.elapsed())),
                "run_finished" => {
                    let end = ms(sent.elapsed());
                    ensure!(started == 1, "session {id}: {started} run_started events");
                    ensure!(
                        data["reason"] == "completed" && data["final_text"] == ANSWER,
                        "session {id} did not complete as scripted: {data}"
                    );
                    let first = first.context("no text before the run's end")?;
                    return Ok((first - delay, end - delay, last_id as usize));
                }
                _ => {}
            }
        }
        let chunk = body
            .next()
            .await
            .with_context(|| format!("session {id}: the stream ended early"))??;
        buffer.push_str(std::str::from_utf8(&chunk).context("the stream is not UTF-8")?);
    }
}

/// One SSE block's sequence number (of its `EPOCH-SEQ` id), event name and
/// data; `None` for a comment.
fn parse(block: &str) -> anyhow::Result<Option<(u64, String, Value)>> {
    let (mut id, mut event, mut data) = (None, None, String::new());
    for line in block
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(':'))
    {
        let (field, value) = line.split_once(": ").unwrap_or((line, ""));
        match field {
            "id" => {
                let seq = value.rsplit_once('-').map_or(value, |(_, seq)| seq);
                id = Some(seq.parse::<u64>().context("an event id not EPOCH-SEQ")?);
            }
            "event" => event = Some(value.to_string()),
            "data" => data.push_str(value),
            _ => {}
        }
    }
    let Some(event) = event else { return Ok(None) };
    let id = id.with_context(|| format!("event {event} without an id"))?;
    Ok(Some((id, event, serde_json::from_str(&data)?)))
}

/// A `/proc/PID/status` memory line (kB) in MiB.
fn memory(pid: u32, field: &str) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .with_context(|| format!("no {field} in /proc/{pid}/status"))?;
    Ok(kib / 1024.0)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_blocks_and_the_listening_line() {
        let block = "id: 9f3a-3\nevent: text_delta\ndata: {\"run\":1,\"text\":\"hi\"}\n\n";
        let (id, event, data) = parse(block).unwrap().unwrap();
        assert_eq!((id, event.as_str()), (3, "text_delta"));
        assert_eq!(data["text"], "hi");
        assert!(parse(": keep-alive\n\n").unwrap().is_none());
        assert_eq!(
            listening_url("warning: x\ngyre serve listening on http://127.0.0.1:4242\n"),
            Some("http://127.0.0.1:4242")
        );
    }

    #[test]
    fn reads_memory_of_this_process() {
        let rss = memory(std::process::id(), "VmHWM").unwrap();
        assert!(rss > 0.1, "{rss}");
    }
}
