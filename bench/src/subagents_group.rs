//! The `subagents` group's rows: the wall time of 8 concurrent foreground
//! subagents of 10 turns each against one agent doing the 80 turns itself
//! (in-process, against the mock), per run and per model request, and
//! what the concurrency buys (sequential / fan-out).
//!
//! Each shape fails on its own: a failed one gives FAILED rows and its
//! error under the table.

use crate::args::Options;
use crate::groups::{outcome, progress, ratio, summary};
use crate::report::{Report, Row, Unit, Value};
use crate::stats;
use crate::subagent_bench::{self, CHILD_TURNS, CHILDREN, SEQUENTIAL_TURNS, Samples, Shape};

pub fn subagents(report: &mut Report, options: &Options) {
    let runs = options.subagent_runs;
    let fan_out_name = format!(
        "{CHILDREN} concurrent subagents × {CHILD_TURNS} turns (fan-out, {} requests)",
        Shape::FanOut.requests()
    );
    let sequential_name = format!("1 agent × {SEQUENTIAL_TURNS} turns (sequential)");
    let mut measured = Vec::new();
    for (shape, name) in [
        (Shape::FanOut, &fan_out_name),
        (Shape::Sequential, &sequential_name),
    ] {
        progress(&format!("{name} ×{runs}"));
        let samples = outcome(report, subagent_bench::measure(shape, runs));
        report.rows.push(Row::new(
            format!("{name}: wall"),
            summary(samples.as_ref().map(|s| s.wall_ms.as_slice())),
            Unit::Milliseconds,
        ));
        report.rows.push(Row::new(
            format!("{name}: CPU (user+sys, whole process)"),
            summary(samples.as_ref().map(|s| s.cpu_ms.as_slice())),
            Unit::Milliseconds,
        ));
        let per_request = samples
            .as_ref()
            .and_then(|s| stats::median(&s.wall_ms))
            .map_or(Value::Failed, |ms| {
                Value::MedianOnly(ms / shape.requests() as f64)
            });
        report.rows.push(Row::new(
            format!("{name}: wall per model request"),
            per_request,
            Unit::Milliseconds,
        ));
        if shape == Shape::FanOut {
            report.rows.push(Row::new(
                format!("{name}: subagents running at once (peak)"),
                summary(samples.as_ref().map(|s| s.peak_children.as_slice())),
                Unit::Count,
            ));
        }
        measured.push(samples);
    }
    let wall = |s: &Option<Samples>| s.as_ref().map(|s| s.wall_ms.clone()).unwrap_or_default();
    report.rows.push(Row::new(
        "subagents: sequential / fan-out (median wall)",
        ratio(&wall(&measured[1]), &wall(&measured[0])),
        Unit::Ratio,
    ));
    report.notes.push(format!(
        "Subagents (in-process): gyre_core's main agent from the built-in `build` profile \
         (`Agent::from_profile`, BypassPermissions, read_only_concurrency {CHILDREN}, \
         SubagentLimits max_depth 1, max_concurrent {CHILDREN}) on a current-thread runtime as \
         the CLI builds it, a SqliteStore in a temp dir and the mock (Anthropic wire, zero \
         latency) on a runtime of its own. Fan-out: the parent's first answer makes \
         {CHILDREN} `task` calls to `explore`; each child makes {} answers calling `read` on a \
         small file, then a text answer; then the parent answers. Sequential: one agent makes \
         {} `read` answers, then a text answer. Wall: from `Agent::start` to the top-level \
         RunFinished. Checked each run: completed, every child's answer in the parent's task \
         results and in its last request, and exactly {} / {SEQUENTIAL_TURNS} requests \
         recorded. Peak: the most children between their nested RunStarted and RunFinished. \
         Per request = median wall / requests. CPU: this process's user+sys over the same \
         span (all threads, the mock's included); CPU / wall ≈ cores used.",
        CHILD_TURNS - 1,
        SEQUENTIAL_TURNS - 1,
        Shape::FanOut.requests()
    ));
}
