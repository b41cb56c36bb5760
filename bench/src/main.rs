//! gyre-bench: measures gyre's start-up, a 3-step task and the agent loop's
//! per-turn overhead against the scripted mock server, and prints a Markdown
//! table. See bench/README.md for what each row means.
//!
//! Exit status: 0 when every scenario ran and checked out (a missed target is
//! reported in the table, not as a failure); 1 when a scenario failed; 2 for a
//! usage error.

mod args;
mod machine;
mod mock;
mod report;
mod runner;
mod scenarios;
mod scripts;
mod stats;

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use crate::args::{Options, Parsed};
use crate::report::{Report, Row, Unit, Value};
use crate::scenarios::{Samples, Session};
use crate::stats::Summary;

const VERSION_WALL_TARGET_MS: f64 = 5.0;
const TASK_WALL_TARGET_MS: f64 = 50.0;
const TASK_RSS_TARGET_MIB: f64 = 15.0;
const LONG_SESSION_TURNS: u32 = 50;

fn main() -> ExitCode {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(Parsed::Run(options)) => options,
        Ok(Parsed::Help) => {
            println!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("gyre-bench: {e:#}");
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(report) => {
            print!("{}", report.to_markdown());
            if report.failures.is_empty() {
                ExitCode::SUCCESS
            } else {
                eprintln!("gyre-bench: {} scenario(s) failed", report.failures.len());
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("gyre-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(options: &Options) -> anyhow::Result<Report> {
    let gyre = std::fs::canonicalize(&options.gyre)
        .with_context(|| format!("no gyre binary at {}", options.gyre.display()))?;
    let mut report = Report {
        date: machine::utc_now(),
        gyre_version: format!("{} ({})", scenarios::version_line(&gyre)?, gyre.display()),
        machine: machine::describe(),
        runs: format!(
            "`gyre --version` ×{}, each session ×{} (after one discarded warm-up run each)",
            options.version_runs, options.session_runs
        ),
        ..Report::default()
    };

    progress(&format!("gyre --version ×{}", options.version_runs));
    let version = outcome(&mut report, scenarios::version(&gyre, options.version_runs));
    report
        .rows
        .push(wall(&version, "`gyre --version` wall").target(VERSION_WALL_TARGET_MS));
    report.rows.push(rss(&version, "`gyre --version` peak RSS"));

    let task = run_session(&mut report, &gyre, &Session::three_step_task(), options);
    report
        .rows
        .push(wall(&task, "3-step task wall").target(TASK_WALL_TARGET_MS));
    report.rows.push(cpu(&task, "3-step task CPU (user+sys)"));
    report
        .rows
        .push(rss(&task, "3-step task peak RSS").target(TASK_RSS_TARGET_MIB));

    let long_name = "50-turn session";
    let long = run_session(
        &mut report,
        &gyre,
        &Session::read_loop(long_name, LONG_SESSION_TURNS),
        options,
    );
    let one = run_session(
        &mut report,
        &gyre,
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
        (Some(long), Some(one)) => {
            let long = stats::median(pick(long));
            let one = stats::median(pick(one));
            match (long, one) {
                (Some(long), Some(one)) => Value::MedianOnly((long - one) / extra_turns),
                _ => Value::Failed,
            }
        }
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

    report.notes = vec![
        "Targets are judged on the median. MB = MiB (1024 KiB), from `ru_maxrss`.".into(),
        "Wall: from just before spawn to the child's exit. CPU: user+sys of the gyre process \
         and the children it reaped (the `bash` of a tool call), from `wait4`. Peak RSS: the \
         largest of those processes. The mock server is a separate process and is never \
         counted in CPU or RSS."
            .into(),
        "Loop overhead per turn = (median of the 50-turn session − median of the 1-turn \
         session) / 49. It includes the mock's HTTP round trip over loopback and the `read` \
         tool's own time, not only the loop."
            .into(),
        "Every run has a fresh workspace and a fresh, empty GYRE_HOME, made outside the timed \
         region."
            .into(),
    ];
    Ok(report)
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

/// Keeps the samples, or records the failure for the report.
fn outcome(report: &mut Report, result: anyhow::Result<Samples>) -> Option<Samples> {
    result
        .map_err(|e| {
            eprintln!("gyre-bench: FAILED: {e:#}");
            report.failures.push(format!("{e:#}"));
        })
        .ok()
}

fn progress(what: &str) {
    eprintln!("gyre-bench: running {what}");
}

fn row(samples: &Option<Samples>, what: &str, unit: Unit, pick: fn(&Samples) -> &[f64]) -> Row {
    let value = samples
        .as_ref()
        .and_then(|s| Summary::of(pick(s)))
        .map_or(Value::Failed, Value::Summary);
    Row::new(what, value, unit)
}

fn wall(samples: &Option<Samples>, what: &str) -> Row {
    row(samples, what, Unit::Milliseconds, |s| &s.wall_ms)
}

fn cpu(samples: &Option<Samples>, what: &str) -> Row {
    row(samples, what, Unit::Milliseconds, |s| &s.cpu_ms)
}

fn rss(samples: &Option<Samples>, what: &str) -> Row {
    row(samples, what, Unit::Mebibytes, |s| &s.rss_mib)
}
