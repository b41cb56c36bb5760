//! The `context` group's rows: request build time over 1 MB and 10 MB
//! histories per wire (in-process), the `gyre` binary resuming sessions with
//! those histories (wall, CPU, peak RSS, RSS per MB of history), and the
//! bytes a 100-turn session sends with and without pruning (in-process).
//!
//! Each part fails on its own: a failed part gives FAILED rows and its error
//! under the table; the others still run.

use std::path::Path;

use gyre_core::Pruning;
use gyre_protocol::Message;

use crate::args::Options;
use crate::groups::{cpu, outcome, progress, ratio, rss, summary, wall};
use crate::history;
use crate::long_session::{self, Sent};
use crate::report::{Report, Row, Unit, Value};
use crate::request_build;
use crate::resume_rss::{self, ResumeSamples};
use crate::stats;

/// History sizes, in MiB of text.
const SIZES_MIB: [usize; 2] = [1, 10];
const HISTORY_SEED: u64 = 0xC0_27E7;

pub fn context(report: &mut Report, gyre: &Path, options: &Options) {
    progress("context: generating the 1 MB and 10 MB histories");
    let histories: Vec<(String, Vec<Message>)> = SIZES_MIB
        .iter()
        .map(|&mib| {
            let messages = history::generate(mib << 20, HISTORY_SEED);
            (format!("{mib} MB history"), messages)
        })
        .collect();
    request_build(report, &histories, options);
    resume(report, gyre, &histories, options);
    pruning(report);
}

fn request_build(report: &mut Report, histories: &[(String, Vec<Message>)], options: &Options) {
    let runs = options.context_runs;
    let mut sizes = Vec::new();
    for (name, messages) in histories {
        progress(&format!("request build, {name}, each wire ×{runs}"));
        let samples = outcome(report, request_build::measure(messages, runs));
        for wire in request_build::WIRES {
            let found = samples
                .as_ref()
                .and_then(|all| all.iter().find(|s| s.wire == wire));
            let what = match found {
                Some(s) => {
                    sizes.push(format!("{name} {}: {:.1}", wire.label(), mib(s.body_bytes)));
                    format!(
                        "request build, {name} ({} msgs), {}: serialise (body {:.1} MB)",
                        messages.len(),
                        wire.label(),
                        mib(s.body_bytes)
                    )
                }
                None => format!("request build, {name}, {}: serialise", wire.label()),
            };
            report.rows.push(Row::new(
                what,
                summary(found.map(|s| s.ms.as_slice())),
                Unit::Milliseconds,
            ));
        }
    }
    let shapes: Vec<String> = histories
        .iter()
        .map(|(name, m)| {
            format!(
                "{name}: {} messages, {:.2} MB of text",
                m.len(),
                mib(history::text_bytes(m))
            )
        })
        .collect();
    report.notes.push(format!(
        "Request build (in-process): a generated coding session (`src/history.rs`: tasks of a \
         prompt, 3–8 rounds of assistant text + one tool call and a 1–8 KB tool result, and an \
         answer; {}). Timed: `ModelClient::stream(&ModelRequest)` with the real system prompt \
         and the 12 builtin tool schemas, which serialises the whole body and sends nothing \
         until polled; the stream is dropped unpolled after the clock. gyre_core's token \
         estimate is crate-private and not timed. One warm-up per wire is sent to the \
         in-process mock and checked (the body it received holds at least the history's text \
         bytes); body sizes in MB: {}.",
        shapes.join("; "),
        sizes.join(", ")
    ));
}

fn resume(
    report: &mut Report,
    gyre: &Path,
    histories: &[(String, Vec<Message>)],
    options: &Options,
) {
    let runs = options.context_runs;
    let mut cases: Vec<(String, &[Message])> = vec![("empty history".to_owned(), &[])];
    cases.extend(
        histories
            .iter()
            .map(|(name, messages)| (name.clone(), messages.as_slice())),
    );
    let mut measured: Vec<Option<ResumeSamples>> = Vec::new();
    for (name, messages) in &cases {
        let scenario = format!("`gyre run --resume`, {name}");
        progress(&format!("{scenario} ×{runs}"));
        let result = outcome(report, resume_rss::measure(gyre, &scenario, messages, runs));
        let samples = result.as_ref().map(|r| r.samples.clone());
        report
            .rows
            .push(wall(&samples, &format!("{scenario}: wall")));
        report
            .rows
            .push(cpu(&samples, &format!("{scenario}: CPU (user+sys)")));
        report
            .rows
            .push(rss(&samples, &format!("{scenario}: peak RSS")));
        measured.push(result);
    }
    let empty = measured.first().and_then(Option::as_ref);
    for ((name, _), loaded) in cases.iter().zip(&measured).skip(1) {
        let growth = match (empty, loaded) {
            (Some(empty), Some(loaded)) if loaded.history_mib > 0.0 => {
                match (
                    stats::median(&loaded.samples.rss_mib),
                    stats::median(&empty.samples.rss_mib),
                ) {
                    (Some(a), Some(b)) => Value::MedianOnly((a - b) / loaded.history_mib),
                    _ => Value::Failed,
                }
            }
            _ => Value::Failed,
        };
        report.rows.push(Row::new(
            format!(
                "`gyre run --resume`, {name}: peak RSS above the empty session per MB of history"
            ),
            growth,
            Unit::MebibytesPerMebibyte,
        ));
    }
    report.notes.push(
        "Resume (the gyre binary): the session is written once into a fresh GYRE_HOME's \
         sessions.db with gyre_store_sql's SqliteStore (no loop state), then each run is `gyre run \
         \"one more\" --resume ID --output-format json` against an in-process mock (Anthropic \
         wire) that answers with text; the config sets a 10M-token window so nothing is pruned \
         or compacted. Checked: exit 0, a success result after 1 turn, one request carrying the \
         whole history. Every run resumes the same session (it grows by ~20 bytes a run). RSS \
         per MB = (median peak RSS − the empty session's median) / MB of history text."
            .into(),
    );
}

fn pruning(report: &mut Report) {
    let mut sent = Vec::new();
    for (pruning, label) in [(Pruning::On, "on"), (Pruning::Off, "off")] {
        progress(&format!(
            "{}-turn session in a 32k window, pruning {label}",
            long_session::TURNS
        ));
        let result = outcome(report, long_session::measure(pruning));
        let what = |s: &str| {
            format!(
                "{}-turn session, 20 KB outputs, 32k window, pruning {label}: {s}",
                long_session::TURNS
            )
        };
        let pick = |f: fn(&Sent) -> f64| {
            result
                .as_ref()
                .map_or(Value::Failed, |s| Value::MedianOnly(f(s)))
        };
        report.rows.push(Row::new(
            what("request bytes sent"),
            pick(|s| mib(s.bytes as usize)),
            Unit::Mebibytes,
        ));
        let requests = match &result {
            Some(s) => what(&format!(
                "requests ({} of them summaries)",
                s.summary_requests
            )),
            None => what("requests"),
        };
        report
            .rows
            .push(Row::new(requests, pick(|s| s.requests as f64), Unit::Count));
        report.rows.push(Row::new(
            what("compactions"),
            pick(|s| s.compactions as f64),
            Unit::Count,
        ));
        report.rows.push(Row::new(
            what("prune steps"),
            pick(|s| s.prune_steps as f64),
            Unit::Count,
        ));
        report.rows.push(
            Row::new(
                what("largest request"),
                pick(|s| s.max_tokens as f64),
                Unit::Tokens,
            )
            .target(long_session::WINDOW as f64),
        );
        report.rows.push(Row::new(
            what("wall (one run)"),
            pick(|s| s.wall.as_secs_f64() * 1e3),
            Unit::Milliseconds,
        ));
        sent.push(result);
    }
    let bytes = |s: &Option<Sent>| s.as_ref().map(|s| vec![s.bytes as f64]).unwrap_or_default();
    report.rows.push(Row::new(
        format!(
            "{}-turn session: request bytes, pruning off / on",
            long_session::TURNS
        ),
        ratio(&bytes(&sent[1]), &bytes(&sent[0])),
        Unit::Ratio,
    ));
    report.notes.push(format!(
        "Long session (in-process): gyre_core's Agent with a SqliteStore in a temp dir, the \
         builtin tools and the in-process mock (Anthropic wire) refusing any request over \
         {} tokens (its count: body bytes / 4) with Anthropic's overflow error; agent window \
         32k, max_output_tokens 4096, compaction on. {} turns: each but the last runs `bash` \
         printing a 20 KB file, then an answer. Bytes: the sum of every recorded request body \
         (summary requests included). Compactions and prune steps: `CompactBoundary` and \
         `ContextPruned` events. The scenario fails if the run does not complete or any \
         request was over the window. One run each (counts, not times; the wall is one \
         sample).",
        long_session::WINDOW,
        long_session::TURNS
    ));
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
