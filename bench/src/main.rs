//! gyre-bench: measures gyre as a user runs it and prints a Markdown table:
//! start-up, a 3-step task and the loop's per-turn overhead against the
//! scripted mock server (the `gyre` binary), and, in-process, SSE decode
//! throughput, `grep` against ripgrep on a 100k-file tree, `edit` on a large
//! file, and a concurrent batch of read-only tool calls; and how gyre copes
//! with a large context: request build time and resume RSS over 1 and 10 MB
//! histories, and the bytes pruning saves over a long session; and the
//! session store: appends per second, resuming a 10,000-message session and
//! bytes on disk per 1,000 turns; and 8 concurrent subagents against one
//! agent doing their 80 turns; and `gyre serve` with 1,000 sessions at once
//! (added latency, RSS); and the terminal UI: a frame of a 1,000-message
//! transcript (in-process), and the `gyre` UI in tmux (idle CPU and
//! wake-ups, a 250-turn session's RSS, resuming it). See bench/README.md for
//! what each row means.
//!
//! Exit status: 0 when every scenario ran and checked out (a missed target is
//! reported in the table, not as a failure); 1 when a scenario failed; 2 for a
//! usage error.

mod args;
mod batch;
mod build_group;
mod cache_group;
mod context_group;
mod edit_bench;
mod grep_bench;
mod groups;
mod helper;
mod history;
mod inproc;
mod long_session;
mod lsp_group;
mod machine;
mod memory;
mod mock;
mod priced_session;
mod report;
mod request_build;
mod resume_rss;
mod rng;
mod runner;
mod scenarios;
mod scripts;
mod serve_bench;
mod serve_group;
mod sse;
mod sse_answer;
mod sse_wire;
mod stats;
mod store_bench;
mod store_group;
mod store_pg;
mod store_write;
mod subagent_bench;
mod subagents_group;
mod tmux;
mod tree;
mod tui_frame;
mod tui_group;

use std::process::ExitCode;

use anyhow::Context;

use crate::args::{Group, Options, Parsed};
use crate::report::Report;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = helper::main_if_asked(&args) {
        return code;
    }
    let options = match Options::parse(args) {
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
    let needs_binary = options.groups.iter().any(|g| g.needs_binary());
    let gyre = if needs_binary {
        Some(
            std::fs::canonicalize(&options.gyre)
                .with_context(|| format!("no gyre binary at {}", options.gyre.display()))?,
        )
    } else {
        None
    };
    let gyre_version = match &gyre {
        Some(gyre) => format!("{} ({})", scenarios::version_line(gyre)?, gyre.display()),
        None => "binary not run (only in-process groups selected)".to_owned(),
    };
    let in_process = options.groups.iter().any(|g| g.runs_in_process());
    let mut report = Report {
        date: machine::utc_now(),
        gyre_version,
        machine: match machine::load_average() {
            Some(load) => format!("{}, {load}", machine::describe()),
            None => machine::describe(),
        },
        build: in_process.then(build_description),
        runs: runs_description(options),
        ..Report::default()
    };
    report.notes.push(
        "Targets are judged on the median. MB = MiB (1024 KiB), from `ru_maxrss`. min/p90 are \
         observed runs (nearest rank); derived rows (ratios, per turn, throughput) come from \
         medians and have no spread of their own."
            .into(),
    );
    if needs_binary {
        report.notes.push(
            "Process rows: wall from just before spawn to the child's exit. CPU: user+sys of \
             the gyre process and the children it reaped (the `bash` of a tool call), from \
             `wait4`. Peak RSS: the largest of those processes. The mock server (a separate \
             process; inside gyre-bench for the `context` and `store` rows) is never counted \
             in CPU or RSS."
                .into(),
        );
    }

    // The grep tree, made (or loaded) when the first group that needs it runs.
    let mut tree = None;
    for group in &options.groups {
        match (group, &gyre) {
            (Group::Version, Some(gyre)) => groups::version(&mut report, gyre, options),
            (Group::Sessions, Some(gyre)) => groups::sessions(&mut report, gyre, options),
            (Group::Context, Some(gyre)) => context_group::context(&mut report, gyre, options),
            (Group::Store, Some(gyre)) => store_group::store(&mut report, gyre, options),
            (Group::Serve, Some(gyre)) => serve_group::serve(&mut report, gyre, options),
            (Group::Tui, Some(gyre)) => tui_group::tui(&mut report, gyre, options),
            (
                Group::Version
                | Group::Sessions
                | Group::Context
                | Group::Store
                | Group::Serve
                | Group::Tui,
                None,
            ) => {}
            (Group::Sse, _) => groups::sse(&mut report, options),
            (Group::Grep, _) => {
                let tree = tree.get_or_insert_with(|| groups::tree(&mut report, options));
                groups::grep(&mut report, options, tree.as_ref());
            }
            (Group::Edit, _) => groups::edit(&mut report, options),
            (Group::Subagents, _) => subagents_group::subagents(&mut report, options),
            (Group::TuiFrame, _) => tui_frame::tui_frame(&mut report, options),
            (Group::Build, _) => build_group::build(&mut report, options),
            (Group::Lsp, _) => lsp_group::lsp(&mut report, options),
            (Group::Cache, _) => cache_group::cache(&mut report),
            (Group::Batch, _) => {
                let tree = tree.get_or_insert_with(|| groups::tree(&mut report, options));
                groups::batch(&mut report, options, tree.as_ref());
            }
        }
    }
    Ok(report)
}

/// What the in-process rows measure, and a loud warning for a debug build.
fn build_description() -> String {
    let profile = if cfg!(debug_assertions) {
        "**DEBUG build: these numbers mean nothing; use `bash bench/run.sh`**"
    } else {
        "release build"
    };
    format!(
        "the gyre crates compiled into gyre-bench ({profile}, same sources and profile as the \
         gyre binary)"
    )
}

fn runs_description(options: &Options) -> String {
    let parts: Vec<String> = options
        .groups
        .iter()
        .map(|group| match group {
            Group::Version => format!("`gyre --version` ×{}", options.version_runs),
            Group::Sessions => format!("each session ×{}", options.session_runs),
            Group::Sse => format!("each SSE decoder ×{}", options.sse_runs),
            Group::Grep => format!("grep and rg ×{} per mode", options.grep_runs),
            Group::Edit => format!("edit ×{}", options.tool_runs),
            Group::Batch => format!("batch ×{} each way", options.tool_runs),
            Group::Context => format!(
                "request build ×{} per wire and size, each resume ×{}, long sessions ×1",
                options.context_runs, options.context_runs
            ),
            Group::Store => format!(
                "store appends, loads and resumes ×{} each, bytes on disk ×1",
                options.store_runs
            ),
            Group::Subagents => format!(
                "subagent fan-out and sequential agent ×{} each",
                options.subagent_runs
            ),
            Group::TuiFrame => "TUI frames ×200 per row".to_owned(),
            Group::Serve => format!(
                "gyre serve: {} lone sessions, then {} at once",
                serve_bench::ALONE_RUNS,
                options.serve_sessions
            ),
            Group::Tui => "the TUI in tmux: idle ×1, a 250-turn session ×1, resume ×3".to_owned(),
            Group::Build => "a cold release build ×1".to_owned(),
            Group::Lsp => format!("edits with and without pyright ×{}", options.tool_runs),
            Group::Cache => "priced 200-turn sessions ×1 per window and strategy".to_owned(),
        })
        .collect();
    format!(
        "{} (after one discarded, checked warm-up run each)",
        parts.join(", ")
    )
}
