//! Command-line options (few enough to parse by hand).

use std::path::PathBuf;

use anyhow::{Context, bail};

pub const USAGE: &str = "\
usage: gyre-bench [--gyre PATH] [--only GROUPS] [--quick] [--version-runs N]
                  [--session-runs N] [--sse-runs N] [--grep-runs N] [--tool-runs N]
                  [--context-runs N] [--store-runs N] [--subagent-runs N]
                  [--serve-sessions N] [--sse-chunk BYTES] [--cache-dir DIR]
                  [--build-dir DIR]

  --gyre PATH        the gyre binary to measure (default: target/release/gyre)
  --only GROUPS      comma-separated subset of: version, sessions, sse, grep,
                     edit, batch, context, store, subagents, tui_frame,
                     serve, tui (default: all, in that order), and build
                     (only when named: a cold release build, minutes), and
                     lsp (only when named: needs GYRE_TEST_PYRIGHT_DIR)
  --quick            fewer runs (version 10, sessions 5, sse 3, grep 3, tools 5,
                     context 5, store 5, subagents 3)
  --version-runs N   runs of `gyre --version` (default 50)
  --session-runs N   runs of each session scenario (default 15)
  --sse-runs N       runs of each SSE decoder (default 10)
  --grep-runs N      runs of gyre's grep and of rg, per output mode (default 7)
  --tool-runs N      runs of the edit and the batch scenarios (default 15)
  --context-runs N   runs of each request build and each resumed session
                     (default 15)
  --store-runs N     runs of each store append, load and resume (default 15);
                     PostgreSQL rows run when GYRE_BENCH_DATABASE_URL is set
  --subagent-runs N  runs of the subagent fan-out and of the sequential agent
                     (default 10)
  --serve-sessions N sessions started at once against `gyre serve`
                     (default 1000, also with --quick)
  --sse-chunk BYTES  bytes per chunk handed to the SSE decoders (default 16384)
  --cache-dir DIR    where the generated grep tree is cached
                     (default: bench/out in the source tree)
  --build-dir DIR    the target directory the build group empties and builds
                     into (default: bench/out/coldbuild-target)

Prints a Markdown table on stdout; progress goes to stderr.";

/// Bytes per chunk handed to the SSE decoders: a typical socket read when
/// data arrives faster than it is consumed.
const DEFAULT_SSE_CHUNK: usize = 16 * 1024;
const MAX_SSE_CHUNK: usize = 16 << 20;
/// Sessions at once against `gyre serve` (issue 10's figure).
const DEFAULT_SERVE_SESSIONS: usize = 1000;
const MAX_SERVE_SESSIONS: usize = 5000;

/// A set of rows that can be run on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// `gyre --version` (process start-up).
    Version,
    /// The headless sessions against the mock server.
    Sessions,
    /// SSE decode throughput, in-process.
    Sse,
    /// gyre's grep tool against rg on the generated tree.
    Grep,
    /// The edit tool on a 50k-line file.
    Edit,
    /// 10 read-only calls, concurrent against serial.
    Batch,
    /// Large histories (request build, resume RSS) and pruning's savings.
    Context,
    /// The session store: appends, resume of a long session, bytes on disk.
    Store,
    /// 8 concurrent subagents against one agent doing their turns.
    Subagents,
    /// Drawing the terminal UI's frame of a 1,000-message session.
    TuiFrame,
    /// `gyre serve` with many sessions at once: added latency and RSS.
    Serve,
    /// The `gyre` terminal UI in tmux: idle CPU, a long session's RSS.
    Tui,
    /// A cold release build of `gyre` (opt-in: minutes of every core).
    Build,
    /// A 200-turn session priced with the prompt cache, three strategies.
    Cache,
    /// Edits with and without pyright's diagnostics (opt-in: needs pyright).
    Lsp,
}

/// Every group, in table order; `--only` picks from these.
pub const ALL_GROUPS: [Group; 15] = [
    Group::Version,
    Group::Sessions,
    Group::Sse,
    Group::Grep,
    Group::Edit,
    Group::Batch,
    Group::Context,
    Group::Cache,
    Group::Store,
    Group::Subagents,
    Group::TuiFrame,
    Group::Serve,
    Group::Tui,
    Group::Build,
    Group::Lsp,
];

/// What runs without `--only`: every group but `build`.
pub const DEFAULT_GROUPS: [Group; 13] = [
    Group::Version,
    Group::Sessions,
    Group::Sse,
    Group::Grep,
    Group::Edit,
    Group::Batch,
    Group::Context,
    Group::Cache,
    Group::Store,
    Group::Subagents,
    Group::TuiFrame,
    Group::Serve,
    Group::Tui,
];

impl Group {
    pub fn name(self) -> &'static str {
        match self {
            Group::Version => "version",
            Group::Sessions => "sessions",
            Group::Sse => "sse",
            Group::Grep => "grep",
            Group::Edit => "edit",
            Group::Batch => "batch",
            Group::Context => "context",
            Group::Store => "store",
            Group::Subagents => "subagents",
            Group::TuiFrame => "tui_frame",
            Group::Serve => "serve",
            Group::Tui => "tui",
            Group::Build => "build",
            Group::Lsp => "lsp",
            Group::Cache => "cache",
        }
    }

    /// Whether the group runs the gyre binary.
    pub fn needs_binary(self) -> bool {
        matches!(
            self,
            Group::Version
                | Group::Sessions
                | Group::Context
                | Group::Store
                | Group::Serve
                | Group::Tui
        )
    }

    /// Whether the group measures gyre crates compiled into gyre-bench.
    pub fn runs_in_process(self) -> bool {
        !matches!(
            self,
            Group::Version | Group::Sessions | Group::Serve | Group::Tui | Group::Build
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub gyre: PathBuf,
    /// The groups to run, in table order.
    pub groups: Vec<Group>,
    pub version_runs: usize,
    pub session_runs: usize,
    pub sse_runs: usize,
    pub grep_runs: usize,
    pub tool_runs: usize,
    pub context_runs: usize,
    pub store_runs: usize,
    pub subagent_runs: usize,
    pub serve_sessions: usize,
    pub sse_chunk: usize,
    pub cache_dir: PathBuf,
    /// The target directory of the `build` group (emptied first).
    pub build_dir: PathBuf,
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
        let mut groups = DEFAULT_GROUPS.to_vec();
        let mut quick = false;
        let mut counts: [Option<usize>; 8] = [None; 8];
        let mut sse_chunk = DEFAULT_SSE_CHUNK;
        let mut serve_sessions = DEFAULT_SERVE_SESSIONS;
        let mut cache_dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/out"));
        let mut build_dir =
            PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/out/coldbuild-target"));
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut value =
                |name: &str| args.next().with_context(|| format!("{name} needs a value"));
            match arg.as_str() {
                "--gyre" => gyre = PathBuf::from(value("--gyre")?),
                "--only" => groups = parse_groups(&value("--only")?)?,
                "--quick" => quick = true,
                "--version-runs" => counts[0] = Some(count(&value(&arg)?)?),
                "--session-runs" => counts[1] = Some(count(&value(&arg)?)?),
                "--sse-runs" => counts[2] = Some(count(&value(&arg)?)?),
                "--grep-runs" => counts[3] = Some(count(&value(&arg)?)?),
                "--tool-runs" => counts[4] = Some(count(&value(&arg)?)?),
                "--context-runs" => counts[5] = Some(count(&value(&arg)?)?),
                "--store-runs" => counts[6] = Some(count(&value(&arg)?)?),
                "--subagent-runs" => counts[7] = Some(count(&value(&arg)?)?),
                "--sse-chunk" => sse_chunk = chunk(&value(&arg)?)?,
                "--serve-sessions" => serve_sessions = sessions(&value(&arg)?)?,
                "--cache-dir" => cache_dir = PathBuf::from(value("--cache-dir")?),
                "--build-dir" => build_dir = PathBuf::from(value("--build-dir")?),
                "-h" | "--help" => return Ok(Parsed::Help),
                other => bail!("unknown argument {other:?}\n\n{USAGE}"),
            }
        }
        let defaults = if quick {
            [10, 5, 3, 3, 5, 5, 5, 3]
        } else {
            [50, 15, 10, 7, 15, 15, 15, 10]
        };
        let [
            version_runs,
            session_runs,
            sse_runs,
            grep_runs,
            tool_runs,
            context_runs,
            store_runs,
            subagent_runs,
        ] = [0, 1, 2, 3, 4, 5, 6, 7].map(|i| counts[i].unwrap_or(defaults[i]));
        Ok(Parsed::Run(Options {
            gyre,
            groups,
            version_runs,
            session_runs,
            sse_runs,
            grep_runs,
            tool_runs,
            context_runs,
            store_runs,
            subagent_runs,
            serve_sessions,
            sse_chunk,
            cache_dir,
            build_dir,
        }))
    }
}

/// A comma-separated list of group names, kept in table order.
fn parse_groups(text: &str) -> anyhow::Result<Vec<Group>> {
    let mut wanted = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match ALL_GROUPS.iter().find(|g| g.name() == name) {
            Some(group) => wanted.push(*group),
            None => {
                let names: Vec<&str> = ALL_GROUPS.iter().map(|g| g.name()).collect();
                bail!(
                    "unknown group {name:?} in --only; the groups are {}",
                    names.join(", ")
                )
            }
        }
    }
    if wanted.is_empty() {
        bail!("--only needs at least one group");
    }
    Ok(ALL_GROUPS
        .into_iter()
        .filter(|g| wanted.contains(g))
        .collect())
}

fn chunk(text: &str) -> anyhow::Result<usize> {
    match text.parse::<usize>() {
        Ok(n @ 1..=MAX_SSE_CHUNK) => Ok(n),
        _ => bail!("--sse-chunk must be a byte count from 1 to {MAX_SSE_CHUNK}, not {text:?}"),
    }
}

fn sessions(text: &str) -> anyhow::Result<usize> {
    match text.parse::<usize>() {
        Ok(n @ 1..=MAX_SERVE_SESSIONS) => Ok(n),
        _ => {
            bail!("--serve-sessions must be a number from 1 to {MAX_SERVE_SESSIONS}, not {text:?}")
        }
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

    fn options(args: &[&str]) -> Options {
        match parse(args).expect("parses") {
            Parsed::Run(o) => o,
            Parsed::Help => panic!("run"),
        }
    }

    #[test]
    fn defaults_quick_and_explicit_counts() {
        let o = options(&[]);
        assert_eq!((o.version_runs, o.session_runs), (50, 15));
        assert_eq!((o.sse_runs, o.grep_runs, o.tool_runs), (10, 7, 15));
        assert_eq!((o.context_runs, o.store_runs), (15, 15));
        assert_eq!(o.subagent_runs, 10);
        assert_eq!(o.serve_sessions, 1000);
        assert_eq!(options(&["--serve-sessions", "50"]).serve_sessions, 50);
        assert!(parse(&["--serve-sessions", "0"]).is_err());
        assert_eq!(o.gyre, PathBuf::from("target/release/gyre"));
        assert_eq!(o.groups, DEFAULT_GROUPS.to_vec());
        assert!(!o.groups.contains(&Group::Build));
        assert!(o.build_dir.ends_with("bench/out/coldbuild-target"));
        assert!(o.cache_dir.ends_with("bench/out"));
        assert_eq!(o.sse_chunk, 16 * 1024);
        assert_eq!(options(&["--sse-chunk", "512"]).sse_chunk, 512);
        assert!(parse(&["--sse-chunk", "0"]).is_err());

        let o = options(&["--quick", "--gyre", "/x/gyre", "--session-runs", "3"]);
        assert_eq!((o.version_runs, o.session_runs), (10, 3));
        assert_eq!((o.sse_runs, o.grep_runs, o.tool_runs), (3, 3, 5));
        assert_eq!((o.context_runs, o.store_runs), (5, 5));
        assert_eq!(o.subagent_runs, 3);
        assert_eq!(options(&["--subagent-runs", "4"]).subagent_runs, 4);
        assert_eq!(options(&["--context-runs", "2"]).context_runs, 2);
        assert_eq!(options(&["--store-runs", "3"]).store_runs, 3);
        assert_eq!(o.gyre, PathBuf::from("/x/gyre"));
    }

    #[test]
    fn only_selects_groups_in_table_order() {
        let o = options(&["--only", "batch, sse,grep"]);
        assert_eq!(o.groups, vec![Group::Sse, Group::Grep, Group::Batch]);
        assert!(parse(&["--only", "sse,nope"]).is_err());
        assert!(parse(&["--only", ","]).is_err());
        let o = options(&["--only", "context"]);
        assert_eq!(o.groups, vec![Group::Context]);
        assert!(Group::Context.needs_binary() && Group::Context.runs_in_process());
        assert_eq!(options(&["--only", "store"]).groups, vec![Group::Store]);
        assert!(Group::Store.needs_binary() && Group::Store.runs_in_process());
        let o = options(&["--only", "subagents"]);
        assert_eq!(o.groups, vec![Group::Subagents]);
        assert!(!Group::Subagents.needs_binary() && Group::Subagents.runs_in_process());
        assert_eq!(options(&["--only", "serve"]).groups, vec![Group::Serve]);
        assert!(Group::Serve.needs_binary() && !Group::Serve.runs_in_process());
        let o = options(&["--only", "build,version", "--build-dir", "/tmp/b"]);
        assert_eq!(o.groups, vec![Group::Version, Group::Build]);
        assert_eq!(o.build_dir, PathBuf::from("/tmp/b"));
        assert!(!Group::Build.needs_binary() && !Group::Build.runs_in_process());
    }

    #[test]
    fn rejects_bad_input() {
        assert!(parse(&["--gyre"]).is_err());
        assert!(parse(&["--session-runs", "0"]).is_err());
        assert!(parse(&["--frobnicate"]).is_err());
        assert_eq!(parse(&["--help"]).expect("help"), Parsed::Help);
    }
}
