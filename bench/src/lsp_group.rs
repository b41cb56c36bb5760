//! The `lsp` group (issue 24, only when named: it needs pyright, from npm,
//! in `GYRE_TEST_PYRIGHT_DIR` as `.ci/run` installs it): what the wait for
//! a changed file's diagnostics adds to an edit, and that no language
//! server work happens before the first model request.
//!
//! Rows, each from the same 30-line Python file in a fresh workspace:
//! - the `edit` call with no language server (the hook absent);
//! - the same call with pyright already started and the file open, timed
//!   to the end of the wait (the edit alternately breaks and fixes a type,
//!   and each run is checked to report the error, or none);
//! - the hook's set-up at start-up (`gyre_host::lsp::start`: a `PATH`
//!   look-up, no process), the only language-server work before the first
//!   request;
//! - pyright's cold start to its first diagnostics (the first edit of a
//!   session, unbounded here): what an edit would wait without the bound,
//!   and why the start runs in the background.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail, ensure};
use gyre_host::lsp::LspSection;
use gyre_lsp::{DiagnosticsConfig, ServerConfig};
use serde_json::json;

use crate::args::Options;
use crate::groups::{outcome, progress, summary};
use crate::inproc::{Tools, run, text};
use crate::report::{Report, Row, Unit};

const FILE: &str = "calc.py";

fn source() -> String {
    let mut text = String::new();
    for n in 0..14 {
        text.push_str(&format!("def f{n}(x: int) -> int:\n    return x + {n}\n"));
    }
    text.push_str("\nvalue: int = f3(2)\n");
    text
}

fn pyright() -> anyhow::Result<PathBuf> {
    let dir = std::env::var("GYRE_TEST_PYRIGHT_DIR")
        .context("GYRE_TEST_PYRIGHT_DIR is not set (see .ci/run: pyright from npm)")?;
    let program = Path::new(&dir).join("node_modules/.bin/pyright-langserver");
    ensure!(program.exists(), "{} is missing", program.display());
    Ok(program)
}

fn section(program: &Path) -> LspSection {
    let mut servers = std::collections::BTreeMap::new();
    for name in [
        "rust-analyzer",
        "gopls",
        "basedpyright",
        "typescript",
        "clangd",
    ] {
        let off = ServerConfig {
            enabled: Some(false),
            ..ServerConfig::default()
        };
        servers.insert(name.to_owned(), off);
    }
    let pyright = ServerConfig {
        command: Some(program.display().to_string()),
        ..ServerConfig::default()
    };
    servers.insert("pyright".to_owned(), pyright);
    LspSection {
        servers,
        diagnostics: DiagnosticsConfig {
            wait_ms: Some(120_000),
            ..DiagnosticsConfig::default()
        },
    }
}

struct Samples {
    plain: Vec<f64>,
    waited: Vec<f64>,
    setup_ms: Vec<f64>,
    cold: f64,
}

/// Edits `FILE` `runs` times (plus a warm-up), alternately breaking and
/// fixing the type of `value`; with `lsp`, checks what each reports.
fn edits(tools: &Tools, runs: usize, lsp: bool) -> anyhow::Result<Vec<f64>> {
    let mut wall = Vec::with_capacity(runs);
    for run_no in 0..=runs {
        let (old, new) = if run_no % 2 == 0 {
            ("value: int", "value: str")
        } else {
            ("value: str", "value: int")
        };
        let args = json!({"file_path": FILE, "old_string": old, "new_string": new});
        let start = Instant::now();
        let output = tools
            .runtime
            .block_on(run(&tools.registry, &tools.ctx, "edit", args))?;
        let elapsed = start.elapsed();
        let said = text(&output);
        if lsp && (run_no % 2 == 0) != said.contains("pyright reports 1 error") {
            bail!("edit {run_no}: unexpected diagnostics: {said}");
        }
        if run_no > 0 {
            wall.push(elapsed.as_secs_f64() * 1000.0);
        }
    }
    Ok(wall)
}

fn measure(runs: usize) -> anyhow::Result<Samples> {
    let program = pyright()?;
    let section = section(&program);
    // Without a language server.
    let dir = tempfile::tempdir().context("cannot make a temp dir")?;
    std::fs::write(dir.path().join(FILE), source()).context("cannot write the file")?;
    let tools = Tools::new(dir.path())?;
    tools.runtime.block_on(run(
        &tools.registry,
        &tools.ctx,
        "read",
        json!({"file_path": FILE}),
    ))?;
    let plain = edits(&tools, runs, false)?;

    // The set-up, as the factory does it before the first request.
    let mut setup_ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let late = gyre_tools::LateTools::new();
        let start = Instant::now();
        let hook = gyre_host::lsp::start(&section, dir.path(), &late);
        setup_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        ensure!(hook.is_some(), "pyright was not found");
    }

    // With pyright: the first write starts it (cold), the edits are timed.
    let dir = tempfile::tempdir().context("cannot make a temp dir")?;
    let mut tools = Tools::new(dir.path())?;
    let late = gyre_tools::LateTools::new();
    let hook = tools
        .runtime
        .block_on(async { gyre_host::lsp::start(&section, dir.path(), &late) });
    tools.ctx.diagnostics = hook;
    ensure!(tools.ctx.diagnostics.is_some(), "pyright was not found");
    tools.runtime.block_on(run(
        &tools.registry,
        &tools.ctx,
        "write",
        json!({"file_path": FILE, "content": source()}),
    ))?;
    // The write above started pyright and waited for its first answer:
    // time a fresh session's first edit instead, on its own workspace.
    let cold = {
        let dir = tempfile::tempdir().context("cannot make a temp dir")?;
        let mut cold_tools = Tools::new(dir.path())?;
        let late = gyre_tools::LateTools::new();
        cold_tools.ctx.diagnostics = cold_tools
            .runtime
            .block_on(async { gyre_host::lsp::start(&section, dir.path(), &late) });
        let start = Instant::now();
        cold_tools.runtime.block_on(run(
            &cold_tools.registry,
            &cold_tools.ctx,
            "write",
            json!({"file_path": FILE, "content": source().replace("value: int", "value: str")}),
        ))?;
        start.elapsed().as_secs_f64() * 1000.0
    };
    let waited = edits(&tools, runs, true)?;
    Ok(Samples {
        plain,
        waited,
        setup_ms,
        cold,
    })
}

pub fn lsp(report: &mut Report, options: &Options) {
    progress(&format!("lsp ×{}", options.tool_runs));
    let samples = outcome(report, measure(options.tool_runs));
    let pick = |f: fn(&Samples) -> &Vec<f64>| samples.as_ref().map(|s| f(s).as_slice());
    report.rows.push(Row::new(
        "edit a 30-line Python file, no language server: wall",
        summary(pick(|s| &s.plain)),
        Unit::Milliseconds,
    ));
    report.rows.push(Row::new(
        "the same edit with pyright's diagnostics waited for (warm): wall",
        summary(pick(|s| &s.waited)),
        Unit::Milliseconds,
    ));
    report.rows.push(Row::new(
        "language-server set-up before the first request (PATH look-up): wall",
        summary(pick(|s| &s.setup_ms)),
        Unit::Milliseconds,
    ));
    let cold = samples.as_ref().map(|s| vec![s.cold]);
    report.rows.push(Row::new(
        "pyright cold start to first diagnostics (a session's first edit, unbounded): wall",
        summary(cold.as_deref()),
        Unit::Milliseconds,
    ));
    report.notes.push(
        "lsp (in-process, needs GYRE_TEST_PYRIGHT_DIR): edits alternately break and fix a type \
         in a 30-line file; with pyright each run is checked to report the error or none. The \
         cold row is one run."
            .to_owned(),
    );
}
