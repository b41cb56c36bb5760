//! Measuring a child from a small process: `gyre-bench __measure RESULT
//! LIMIT_MS -- PROGRAM ARGS…` runs PROGRAM as `runner::run_measured` does and
//! writes what it measured to the file RESULT.
//!
//! Why: Linux sets a new program's peak RSS (`ru_maxrss`) at exec to at least
//! the peak RSS of the memory it replaced, which for a child spawned with
//! `vfork`/`posix_spawn` (as Rust's `Command` does) is the *parent's* address
//! space. A benchmark process that holds a 10 MB history (and a mock that
//! recorded 10 MB bodies) is ~200 MB, so every child it starts would report
//! ~200 MB, whatever it used itself. This helper is a fresh exec of the
//! benchmark binary: its own address space is a few MB, so the child it
//! starts reports its own peak (or the helper's few MB, whichever is larger).
//!
//! Invariants: the child inherits the helper's environment, working
//! directory and stdio (the caller sets them on the helper's command); the
//! helper exits 0 once it has measured the child, whatever the child's exit,
//! and non-zero (with a message on stderr) when it could not measure; wall
//! time is the helper's, from just before the child's spawn to its exit, so
//! the helper's own start-up is not in it.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::{Context, bail};

use crate::runner::{ExitKind, Measured, run_measured};

/// The first argument that selects the helper.
pub const ARG: &str = "__measure";
/// The helper is given this much longer than the child, so the child's own
/// time limit is what ends a run that hangs.
const HELPER_MARGIN: Duration = Duration::from_secs(10);

/// Runs the helper when the arguments ask for it; `None` otherwise.
pub fn main_if_asked(args: &[String]) -> Option<ExitCode> {
    if args.first().map(String::as_str) != Some(ARG) {
        return None;
    }
    Some(match helper(&args[1..]) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gyre-bench {ARG}: {e:#}");
            ExitCode::from(2)
        }
    })
}

fn helper(args: &[String]) -> anyhow::Result<()> {
    let [result, limit_ms, dashes, program, rest @ ..] = args else {
        bail!("usage: gyre-bench {ARG} RESULT LIMIT_MS -- PROGRAM [ARGS…]");
    };
    if dashes != "--" {
        bail!("expected `--` before the program, not {dashes:?}");
    }
    let limit = Duration::from_millis(limit_ms.parse().context("LIMIT_MS")?);
    let m = run_measured(Command::new(program).args(rest), limit)?;
    let exit = match m.exit {
        ExitKind::Code(code) => format!("code {code}"),
        ExitKind::Signal(signal) => format!("signal {signal}"),
    };
    let line = format!(
        "{} {} {} {exit}\n",
        m.wall.as_nanos(),
        m.cpu.as_nanos(),
        m.max_rss_kib
    );
    std::fs::write(result, line).with_context(|| format!("cannot write {result}"))
}

/// The helper's arguments for measuring `program` (its own arguments follow).
pub fn command<'a>(
    helper_command: &'a mut Command,
    result: &Path,
    limit: Duration,
    program: &Path,
) -> &'a mut Command {
    helper_command
        .arg(ARG)
        .arg(result)
        .arg(limit.as_millis().to_string())
        .arg("--")
        .arg(program)
}

/// Runs the helper command (built with [`command`]) and returns what it
/// measured of its child.
pub fn run(
    helper_command: &mut Command,
    result: &Path,
    limit: Duration,
) -> anyhow::Result<Measured> {
    let _ = std::fs::remove_file(result);
    let helper = run_measured(helper_command, limit + HELPER_MARGIN)?;
    if helper.exit != ExitKind::Code(0) {
        bail!("the measuring helper failed ({})", helper.exit);
    }
    let text = std::fs::read_to_string(result)
        .with_context(|| format!("the helper wrote no result to {}", result.display()))?;
    parse(&text).with_context(|| format!("the helper's result {text:?}"))
}

fn parse(text: &str) -> anyhow::Result<Measured> {
    let fields: Vec<&str> = text.split_whitespace().collect();
    let [wall, cpu, rss, kind, value] = fields.as_slice() else {
        bail!("not 5 fields");
    };
    let nanos = |s: &str| -> anyhow::Result<Duration> { Ok(Duration::from_nanos(s.parse()?)) };
    let value: i32 = value.parse()?;
    Ok(Measured {
        wall: nanos(wall)?,
        cpu: nanos(cpu)?,
        max_rss_kib: rss.parse()?,
        exit: match *kind {
            "code" => ExitKind::Code(value),
            "signal" => ExitKind::Signal(value),
            other => bail!("unknown exit kind {other:?}"),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_round_trip() {
        let m = parse("1500000 700000 13312 code 3\n").expect("parses");
        assert_eq!(m.wall, Duration::from_micros(1500));
        assert_eq!(m.cpu, Duration::from_micros(700));
        assert_eq!(m.max_rss_kib, 13312);
        assert_eq!(m.exit, ExitKind::Code(3));
        assert_eq!(
            parse("1 2 3 signal 9").expect("parses").exit,
            ExitKind::Signal(9)
        );
        assert!(parse("1 2 3 code").is_err());
        assert!(parse("1 2 3 nope 1").is_err());
    }

    #[test]
    fn the_helper_measures_its_child() {
        let dir = tempfile::tempdir().expect("temp dir");
        let result = dir.path().join("result");
        let args: Vec<String> = [
            ARG,
            &result.display().to_string(),
            "5000",
            "--",
            "sh",
            "-c",
            "exit 4",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(main_if_asked(&args), Some(ExitCode::SUCCESS));
        let m = parse(&std::fs::read_to_string(&result).expect("result")).expect("parses");
        assert_eq!(m.exit, ExitKind::Code(4));
        assert!(m.max_rss_kib > 0);
        assert_eq!(main_if_asked(&args[1..]), None);
    }
}
