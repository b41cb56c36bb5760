//! One function per group of rows (see `args::Group`): each runs its
//! scenarios, pushes its rows (FAILED rows when a scenario failed, with the
//! error under the table) and the notes that say what its rows include.

use std::path::Path;

use crate::args::Options;
use crate::batch;
use crate::edit_bench;
use crate::grep_bench::{self, Mode, Timings};
use crate::inproc::Tools;
use crate::report::{Report, Row, Unit, Value};
use crate::scenarios::{self, Samples, Session};
use crate::sse;
use crate::stats::{self, Summary};
use crate::tree::{self, Tree};

const VERSION_WALL_TARGET_MS: f64 = 2.5;
const TASK_WALL_TARGET_MS: f64 = 50.0;
const TASK_RSS_TARGET_MIB: f64 = 15.0;
const BINARY_SIZE_TARGET_MIB: f64 = 25.0;
const LONG_SESSION_TURNS: u32 = 50;

pub fn version(report: &mut Report, gyre: &Path, options: &Options) {
    progress(&format!("gyre --version ×{}", options.version_runs));
    let version = outcome(report, scenarios::version(gyre, options.version_runs));
    report
        .rows
        .push(wall(&version, "`gyre --version` wall").target(VERSION_WALL_TARGET_MS));
    report.rows.push(rss(&version, "`gyre --version` peak RSS"));
    let size = std::fs::metadata(gyre)
        .map(|m| Value::MedianOnly(m.len() as f64 / (1024.0 * 1024.0)))
        .unwrap_or(Value::Failed);
    report.rows.push(
        Row::new(
            "release binary size (the `--gyre` file)",
            size,
            Unit::Mebibytes,
        )
        .target(BINARY_SIZE_TARGET_MIB),
    );
}

pub fn sessions(report: &mut Report, gyre: &Path, options: &Options) {
    let task = run_session(report, gyre, &Session::three_step_task(), options);
    report
        .rows
        .push(wall(&task, "3-step task wall").target(TASK_WALL_TARGET_MS));
    report.rows.push(cpu(&task, "3-step task CPU (user+sys)"));
    report
        .rows
        .push(rss(&task, "3-step task peak RSS").target(TASK_RSS_TARGET_MIB));
    progress(&format!(
        "3-step task, resident memory sampled ×{}",
        options.session_runs
    ));
    let resident = outcome(
        report,
        scenarios::session_resident(gyre, &Session::three_step_task(), options.session_runs),
    );
    report.rows.push(row(
        &resident,
        "3-step task resident at its largest sample: file-backed",
        Unit::Mebibytes,
        |s| &s.file_mib,
    ));
    report.rows.push(row(
        &resident,
        "3-step task resident at its largest sample: anonymous",
        Unit::Mebibytes,
        |s| &s.anon_mib,
    ));
    report
        .rows
        .push(rss(&resident, "3-step task peak RSS in the sampled runs"));

    let long_name = "50-turn session";
    let long = run_session(
        report,
        gyre,
        &Session::read_loop(long_name, LONG_SESSION_TURNS),
        options,
    );
    let one = run_session(
        report,
        gyre,
        &Session::read_loop("1-turn session", 1),
        options,
    );
    for (samples, name) in [(&long, long_name), (&one, "1-turn session")] {
        report.rows.push(wall(samples, &format!("{name} wall")));
        report
            .rows
            .push(cpu(samples, &format!("{name} CPU (user+sys)")));
        report.rows.push(rss(samples, &format!("{name} peak RSS")));
    }
    let extra_turns = f64::from(LONG_SESSION_TURNS - 1);
    let per_turn = |pick: fn(&Samples) -> &Vec<f64>| match (&long, &one) {
        (Some(long), Some(one)) => difference(pick(long), pick(one), extra_turns),
        _ => Value::Failed,
    };
    report.rows.push(Row::new(
        "loop overhead per turn, wall",
        per_turn(|s| &s.wall_ms),
        Unit::Milliseconds,
    ));
    report.rows.push(Row::new(
        "loop overhead per turn, CPU",
        per_turn(|s| &s.cpu_ms),
        Unit::Milliseconds,
    ));
    report.notes.push(
        "Resident memory of the 3-step task: separate runs (the sampler competes for the \
         CPU, so they are not the timed ones) in which a thread of gyre-bench reads the \
         child's `/proc/PID/status` every 0.25 ms until it exits; the sample with the most \
         resident pages gives file-backed (`RssFile`: pages of the binary and the shared \
         libraries the run touched) and anonymous (`RssAnon` + `RssShmem`: heap, stacks, \
         relocated `.data.rel.ro`/GOT pages copied on write). Its sum can be a little under \
         the exact peak (`ru_maxrss`, the row after them). See bench/README.md."
            .into(),
    );
    report.notes.push(
        "Sessions: loop overhead per turn = (median of the 50-turn session − median of the \
         1-turn session) / 49. It includes the mock's HTTP round trip over loopback and the \
         `read` tool's own time, not only the loop. Every run has a fresh workspace and a \
         fresh, empty GYRE_HOME, made outside the timed region."
            .into(),
    );
}

pub fn sse(report: &mut Report, options: &Options) {
    progress("SSE: generating the answer");
    let answer = sse::answer();
    let calls = answer.calls().len();
    let mut sizes = Vec::new();
    for case in sse::CASES {
        let label = case.wire.label();
        progress(&format!("SSE decode {label} ×{}", options.sse_runs));
        let samples = outcome(
            report,
            sse::measure(case, &answer, options.sse_runs, options.sse_chunk),
        );
        let (throughput, per_event, name) = match &samples {
            Some(s) => {
                sizes.push(format!(
                    "{label} {:.1} MiB in {} SSE events → {} model events",
                    s.mib(),
                    s.sse_events,
                    s.model_events
                ));
                let throughput = stats::median(&s.wall_ms)
                    .map_or(Value::Failed, |ms| Value::MedianOnly(s.mib() / (ms / 1e3)));
                (
                    throughput,
                    summary(Some(&s.ns_per_event())),
                    format!(
                        "{label} ({:.1} MiB, {} events, {} chunks)",
                        s.mib(),
                        s.sse_events,
                        chunk_label(options.sse_chunk)
                    ),
                )
            }
            None => (Value::Failed, Value::Failed, label.to_owned()),
        };
        report.rows.push(Row::new(
            format!("SSE decode {name}: throughput"),
            throughput,
            Unit::MebibytesPerSecond,
        ));
        report.rows.push(Row::new(
            format!("SSE decode {label}: time per SSE event"),
            per_event,
            Unit::Nanoseconds,
        ));
    }
    report.notes.push(format!(
        "SSE decode (in-process): one generated answer, {} text deltas of 1–3 tokens in blocks of \
         200–800, with {calls} tool calls between blocks whose JSON arguments arrive in 4–40 byte \
         fragments, encoded per wire ({}); handed to the public decoder in {} chunks on a \
         current-thread tokio runtime. Timed: decoding to the end and collecting every model \
         event. Throughput = stream size / median wall (MiB/s); time per SSE event = wall / \
         SSE events. Each run checked: text, tool calls (name and arguments) and the final \
         `Finished`.",
        sse::TEXT_DELTAS,
        sizes.join("; "),
        chunk_label(options.sse_chunk)
    ));
}

/// The cached tree, or the failure recorded for the report.
pub fn tree(report: &mut Report, options: &Options) -> Option<Tree> {
    progress(&format!(
        "grep tree: {} (generated once, then cached)",
        options.cache_dir.join(tree::TREE_VERSION).display()
    ));
    let tree = outcome(report, tree::cached(&options.cache_dir))?;
    let how = if tree.generated_now {
        "generated by this run"
    } else {
        "reused from the cache; generating it took"
    };
    let line = format!(
        "grep tree `{}`: {} files, {} of them with a match a search must report; {how} {:.1} s \
         (outside every measurement)",
        tree::TREE_VERSION,
        tree.files,
        tree.matching_files,
        tree.generation.as_secs_f64()
    );
    eprintln!("gyre-bench: {line}");
    report.notes.push(line);
    Some(tree)
}

pub fn grep(report: &mut Report, options: &Options, tree: Option<&Tree>) {
    let tools = tree.and_then(|t| outcome(report, Tools::new(&t.root)));
    let runs = options.grep_runs;
    for mode in [Mode::FilesWithMatches, Mode::Content] {
        let (gyre, rg) = match (tree, &tools) {
            (Some(tree), Some(tools)) => {
                progress(&format!("gyre grep {} ×{runs}", mode.label()));
                let gyre = outcome(report, grep_bench::gyre(tools, tree, mode, runs));
                let rg = match &gyre {
                    Some((_, reference)) => {
                        progress(&format!("rg {} ×{runs}", mode.label()));
                        outcome(report, grep_bench::rg(tree, mode, runs, reference))
                    }
                    None => None,
                };
                (gyre.map(|(t, _)| t), rg)
            }
            _ => (None, None),
        };
        let what = |s: &str| format!("grep 100k files, {}: {s}", mode.label());
        let pick = |t: &Option<Timings>, f: fn(&Timings) -> &Vec<f64>| {
            summary(t.as_ref().map(|t| f(t).as_slice()))
        };
        let ms = Unit::Milliseconds;
        report
            .rows
            .push(Row::new(what("gyre wall"), pick(&gyre, |t| &t.wall_ms), ms));
        report
            .rows
            .push(Row::new(what("rg wall"), pick(&rg, |t| &t.wall_ms), ms));
        let ratio = match (&gyre, &rg) {
            (Some(g), Some(r)) => ratio(&g.wall_ms, &r.wall_ms),
            _ => Value::Failed,
        };
        report.rows.push(Row::new(
            what("gyre / rg (median wall)"),
            ratio,
            Unit::Ratio,
        ));
        report
            .rows
            .push(Row::new(what("gyre CPU"), pick(&gyre, |t| &t.cpu_ms), ms));
        report
            .rows
            .push(Row::new(what("rg CPU"), pick(&rg, |t| &t.cpu_ms), ms));
    }
    report.notes.push(format!(
        "grep (warm page cache): pattern `{}` over the whole tree. gyre: the `grep` tool \
         in-process (`Registry::builtin()`), sequential sorted walk; its CPU is this process's \
         user+sys over the call. rg: `rg --no-config --no-require-git` (`-l`, or `-n \
         --no-heading -H`) as a process with its default threads, output to a file; wall \
         includes its start-up. Each run checked: gyre's output not cut and naming the expected \
         files; rg printing exactly gyre's lines.",
        tree::PATTERN
    ));
}

pub fn edit(report: &mut Report, options: &Options) {
    progress(&format!("edit ×{}", options.tool_runs));
    let samples = outcome(report, edit_bench::measure(options.tool_runs));
    report.rows.push(Row::new(
        "edit, replace 1 line near the end of a 50k-line file: wall",
        summary(samples.as_deref()),
        Unit::Milliseconds,
    ));
    report.notes.push(format!(
        "edit (in-process): the `edit` tool replaces one unique line 10 lines before the end of a \
         {}-line ({:.1} MiB) file; a fresh copy is made before each run (outside the clock). \
         Timed: the call (read, uniqueness check, replace, write back, confirmation snippet).",
        edit_bench::LINES,
        edit_bench::file_bytes() as f64 / (1024.0 * 1024.0)
    ));
}

pub fn batch(report: &mut Report, options: &Options, tree: Option<&Tree>) {
    let runs = options.tool_runs;
    let samples = tree.and_then(|t| {
        progress(&format!(
            "batch of 10 read-only calls, concurrent and serial ×{runs}"
        ));
        let tools = outcome(report, Tools::new(&t.root))?;
        outcome(report, batch::measure(&tools, runs))
    });
    let what = |s: &str| format!("10 read-only calls (5 grep + 5 read): {s}");
    let pick = |f: fn(&batch::BatchSamples) -> &Vec<f64>| {
        summary(samples.as_ref().map(|s| f(s).as_slice()))
    };
    report.rows.push(Row::new(
        what(&format!("concurrent (≤{}) wall", batch::CONCURRENCY)),
        pick(|s| &s.concurrent_ms),
        Unit::Milliseconds,
    ));
    report.rows.push(Row::new(
        what("serial wall"),
        pick(|s| &s.serial_ms),
        Unit::Milliseconds,
    ));
    report.rows.push(Row::new(
        what("concurrent CPU"),
        pick(|s| &s.concurrent_cpu_ms),
        Unit::Milliseconds,
    ));
    report.rows.push(Row::new(
        what("serial CPU"),
        pick(|s| &s.serial_cpu_ms),
        Unit::Milliseconds,
    ));
    let speed_up = samples
        .as_ref()
        .map_or(Value::Failed, |s| ratio(&s.serial_ms, &s.concurrent_ms));
    report.rows.push(Row::new(
        what("speed-up (serial / concurrent)"),
        speed_up,
        Unit::Ratio,
    ));
    report.notes.push(format!(
        "batch (in-process, warm page cache): 5 × (`grep` content mode under one top directory \
         of the tree, ~5,000 files; `read` of a ~1 KB file). Concurrent: spawned tasks behind a \
         {}-permit semaphore, as core's scheduler runs a turn's read-only calls; serial: the \
         same calls one after another. Tools only: no model, permission check or loop. CPU: this \
         process's user+sys over the batch (all threads); CPU / wall ≈ cores used: a \
         speed-up near 1× with concurrent CPU / wall near 1 means only one core's worth of CPU \
         was had (the calls serialise, or the other core was busy: see the load average).",
        batch::CONCURRENCY
    ));
}

fn chunk_label(bytes: usize) -> String {
    if bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} B")
    }
}

fn run_session(
    report: &mut Report,
    gyre: &Path,
    session: &Session,
    options: &Options,
) -> Option<Samples> {
    progress(&format!("{} ×{}", session.name, options.session_runs));
    outcome(
        report,
        scenarios::session(gyre, session, options.session_runs),
    )
}

/// Keeps the value, or records the failure for the report.
pub fn outcome<T>(report: &mut Report, result: anyhow::Result<T>) -> Option<T> {
    result
        .map_err(|e| {
            eprintln!("gyre-bench: FAILED: {e:#}");
            report.failures.push(format!("{e:#}"));
        })
        .ok()
}

pub fn progress(what: &str) {
    eprintln!("gyre-bench: running {what}");
}

pub fn summary(samples: Option<&[f64]>) -> Value {
    samples
        .and_then(Summary::of)
        .map_or(Value::Failed, Value::Summary)
}

/// median(a) / median(b).
pub fn ratio(a: &[f64], b: &[f64]) -> Value {
    match (stats::median(a), stats::median(b)) {
        (Some(a), Some(b)) if b > 0.0 => Value::MedianOnly(a / b),
        _ => Value::Failed,
    }
}

/// (median(a) − median(b)) / divisor.
pub fn difference(a: &[f64], b: &[f64], divisor: f64) -> Value {
    match (stats::median(a), stats::median(b)) {
        (Some(a), Some(b)) => Value::MedianOnly((a - b) / divisor),
        _ => Value::Failed,
    }
}

pub fn row(samples: &Option<Samples>, what: &str, unit: Unit, pick: fn(&Samples) -> &[f64]) -> Row {
    Row::new(what, summary(samples.as_ref().map(pick)), unit)
}

pub fn wall(samples: &Option<Samples>, what: &str) -> Row {
    row(samples, what, Unit::Milliseconds, |s| &s.wall_ms)
}

pub fn cpu(samples: &Option<Samples>, what: &str) -> Row {
    row(samples, what, Unit::Milliseconds, |s| &s.cpu_ms)
}

pub fn rss(samples: &Option<Samples>, what: &str) -> Row {
    row(samples, what, Unit::Mebibytes, |s| &s.rss_mib)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_values() {
        assert_eq!(ratio(&[4.0, 6.0], &[2.0]), Value::MedianOnly(2.5));
        assert_eq!(ratio(&[], &[2.0]), Value::Failed);
        assert_eq!(ratio(&[1.0], &[0.0]), Value::Failed);
        assert_eq!(difference(&[10.0], &[4.0], 2.0), Value::MedianOnly(3.0));
        assert_eq!(summary(None), Value::Failed);
    }
}
