//! The `serve` group's rows: `gyre serve`'s added latency (p50, p90, p99)
//! with one session at a time and with many at once, the burst's wall time
//! and the server's RSS (see `serve_bench` for what is timed).

use std::path::Path;

use crate::args::Options;
use crate::groups::{outcome, progress, summary};
use crate::report::{Report, Row, Unit, Value};
use crate::serve_bench::{self, ALONE_RUNS, Latencies, MODEL_DELAY_MS};
use crate::stats;

pub fn serve(report: &mut Report, gyre: &Path, options: &Options) {
    let sessions = options.serve_sessions;
    progress(&format!(
        "gyre serve: {ALONE_RUNS} sessions one at a time, then {sessions} at once"
    ));
    let measured = outcome(report, serve_bench::measure(gyre, sessions));
    let alone = format!("gyre serve, 1 session at a time ×{ALONE_RUNS}");
    let burst = format!("gyre serve, {sessions} sessions at once");
    for (name, pick) in [
        (
            &alone,
            (|m: &serve_bench::Measured| &m.alone) as fn(&_) -> &Latencies,
        ),
        (&burst, |m: &serve_bench::Measured| &m.burst),
    ] {
        let latencies = measured.as_ref().map(pick);
        for (what, samples) in [
            ("first text", latencies.map(|l| l.first_ms.as_slice())),
            ("run_finished", latencies.map(|l| l.end_ms.as_slice())),
        ] {
            report.rows.push(Row::new(
                format!("{name}: added latency to {what} (p50, min, p90)"),
                summary(samples),
                Unit::Milliseconds,
            ));
            report.rows.push(Row::new(
                format!("{name}: added latency to {what}, p99"),
                samples
                    .and_then(|s| stats::percentile(s, 99.0))
                    .map_or(Value::Failed, Value::MedianOnly),
                Unit::Milliseconds,
            ));
        }
    }
    let value = |pick: fn(&serve_bench::Measured) -> f64| {
        measured
            .as_ref()
            .map_or(Value::Failed, |m| Value::MedianOnly(pick(m)))
    };
    report.rows.push(Row::new(
        format!("{burst}: wall, first POST to last run_finished"),
        value(|m| m.burst_wall_ms),
        Unit::Milliseconds,
    ));
    report.rows.push(Row::new(
        "gyre serve RSS after start-up and one session (VmRSS)",
        value(|m| m.rss_before_mib),
        Unit::Mebibytes,
    ));
    report.rows.push(Row::new(
        format!("gyre serve peak RSS over the run, {sessions} at once included (VmHWM)"),
        value(|m| m.rss_peak_mib),
        Unit::Mebibytes,
    ));
    let events = measured.as_ref().map_or(0, |m| m.events);
    report.notes.push(format!(
        "serve: the release `gyre serve --port 0 --permission-mode bypassPermissions` in a fresh \
         GYRE_HOME (SQLite) against `gyre mock-server`, whose every answer is one short text \
         after a fixed {MODEL_DELAY_MS} ms pause before its headers. A session = `POST /sessions` \
         with a prompt, then `GET /sessions/ID/events` read to the run's `run_finished`, by an \
         HTTP client in gyre-bench (reqwest, 2 runtime threads, on the same 2 cores as the \
         server and the mock). Added latency = the client's time from just before the POST to \
         receiving the first `text_delta` (resp. `run_finished`), minus the {MODEL_DELAY_MS} ms \
         pause: it is HTTP handling, creating and storing the session, building its agent, the \
         run's start and its stored messages, the model request over loopback (the mock's own \
         CPU included), SSE delivery and the client. One warm-up session first; then \
         {ALONE_RUNS} sessions one after another; then {sessions} started at once. Every \
         session checked: ids without gaps, one run, completed with the scripted text \
         ({events} events read in all). RSS from /proc/PID/status of the server: VmRSS after \
         the warm-up, VmHWM (peak) after the burst. p99 by nearest rank."
    ));
}
