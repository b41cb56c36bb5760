//! Command-line options (few enough to parse by hand).

use std::path::PathBuf;

use anyhow::{Context, bail};

pub const USAGE: &str = "\
usage: gyre-bench [--gyre PATH] [--quick] [--version-runs N] [--session-runs N]

  --gyre PATH        the gyre binary to measure (default: target/release/gyre)
  --quick            fewer runs (--version 10, sessions 5)
  --version-runs N   runs of `gyre --version` (default 50)
  --session-runs N   runs of each session scenario (default 15)

Prints a Markdown table on stdout; progress goes to stderr.";

#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub gyre: PathBuf,
    pub version_runs: usize,
    pub session_runs: usize,
}

/// What the command line asks for.
#[derive(Debug, PartialEq)]
pub enum Parsed {
    Run(Options),
    Help,
}

impl Options {
    pub fn parse(args: impl IntoIterator<Item = String>) -> anyhow::Result<Parsed> {
        let mut gyre = PathBuf::from("target/release/gyre");
        let mut quick = false;
        let mut version_runs = None;
        let mut session_runs = None;
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut value =
                |name: &str| args.next().with_context(|| format!("{name} needs a value"));
            match arg.as_str() {
                "--gyre" => gyre = PathBuf::from(value("--gyre")?),
                "--quick" => quick = true,
                "--version-runs" => version_runs = Some(count(&value("--version-runs")?)?),
                "--session-runs" => session_runs = Some(count(&value("--session-runs")?)?),
                "-h" | "--help" => return Ok(Parsed::Help),
                other => bail!("unknown argument {other:?}\n\n{USAGE}"),
            }
        }
        let (default_version, default_session) = if quick { (10, 5) } else { (50, 15) };
        Ok(Parsed::Run(Options {
            gyre,
            version_runs: version_runs.unwrap_or(default_version),
            session_runs: session_runs.unwrap_or(default_session),
        }))
    }
}

fn count(text: &str) -> anyhow::Result<usize> {
    match text.parse::<usize>() {
        Ok(n @ 1..=1000) => Ok(n),
        _ => bail!("a run count must be a number from 1 to 1000, not {text:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> anyhow::Result<Parsed> {
        Options::parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn defaults_quick_and_explicit_counts() {
        let Parsed::Run(o) = parse(&[]).expect("parses") else {
            panic!("run")
        };
        assert_eq!((o.version_runs, o.session_runs), (50, 15));
        assert_eq!(o.gyre, PathBuf::from("target/release/gyre"));

        let Parsed::Run(o) =
            parse(&["--quick", "--gyre", "/x/gyre", "--session-runs", "3"]).expect("parses")
        else {
            panic!("run")
        };
        assert_eq!((o.version_runs, o.session_runs), (10, 3));
        assert_eq!(o.gyre, PathBuf::from("/x/gyre"));
    }

    #[test]
    fn rejects_bad_input() {
        assert!(parse(&["--gyre"]).is_err());
        assert!(parse(&["--session-runs", "0"]).is_err());
        assert!(parse(&["--frobnicate"]).is_err());
        assert_eq!(parse(&["--help"]).expect("help"), Parsed::Help);
    }
}
