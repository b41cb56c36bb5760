//! `gyre run` / `gyre -p`: one run, printed in the chosen output format (the
//! `run` function).
//!
//! stdout carries only the chosen format (stream-json: nothing but JSON
//! lines); a failure is also said in one line on stderr. SIGINT cancels the run
//! (the loop kills running tools and records the interrupted state), then the
//! process exits 130; a second SIGINT exits at once.
//!
//! Outside stream-json (which has its `system/retry` lines), each wait
//! before a retry is one line on stderr saying what failed and when the
//! next attempt comes; on a terminal the line is rewritten in place, so an
//! outage is one line, not a scroll of them.

use std::io::Write;
use std::path::Path;

use futures::StreamExt;
use gyre_core::{ManualCompaction, RunRequest};
use gyre_protocol::{Event, FinishReason, RunSummary};

use crate::output::{StreamJson, result_object};
use gyre_host::OutputFormat;
use gyre_host::Settings;
use gyre_host::exit::{CANCELLED, Exit, code_for};

pub async fn run(settings: &Settings, home: &Path, prompt: String) -> Result<i32, Exit> {
    let (agent, session) = settings.start(home, &prompt).await?;
    let session_id = session.id().to_string();
    let request = RunRequest {
        prompt: Some(prompt),
        compact: settings.compact_first.then(ManualCompaction::default),
    };
    let mut run = agent.start(session, request);

    let handle = run.handle.clone();
    let interrupts = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            handle.cancel();
        }
        if tokio::signal::ctrl_c().await.is_ok() {
            std::process::exit(CANCELLED);
        }
    });

    let lines = StreamJson::new(session_id.clone(), settings.include_partial_messages);
    let mut summary: Option<RunSummary> = None;
    let mut stdout_open = true;
    let mut waits = RetryLine::new();
    while let Some(event) = run.events.next().await {
        if settings.output_format != OutputFormat::StreamJson {
            waits.show(&event);
        }
        if settings.output_format == OutputFormat::StreamJson
            && stdout_open
            && let Some(line) = lines.line(&event)
            && print_line(&line.to_string()).is_err()
        {
            // Whoever read our output is gone: stop working for them.
            stdout_open = false;
            run.handle.cancel();
        }
        if let Event::RunFinished(finished) = event {
            summary = Some(finished);
        }
    }
    interrupts.abort();
    waits.finish();
    let summary =
        summary.ok_or_else(|| Exit::failure("the run ended without a result (internal error)"))?;

    // A closed stdout here is the reader's choice; the exit code still tells.
    if stdout_open {
        let _ = match settings.output_format {
            OutputFormat::Json => print_line(&result_object(&summary, &session_id).to_string()),
            OutputFormat::Text if !summary.final_text.is_empty() => print_line(&summary.final_text),
            _ => Ok(()),
        };
    }
    if let Some(error) = &summary.error
        && summary.reason != FinishReason::Completed
    {
        eprintln!("gyre: {}", error.message);
    }
    Ok(code_for(&summary))
}

fn print_line(line: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(line.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// The stderr line of the retries of a non-stream-json run.
struct RetryLine {
    in_place: bool,
    open: bool,
}

impl RetryLine {
    fn new() -> Self {
        use std::io::IsTerminal;
        Self {
            in_place: std::io::stderr().is_terminal(),
            open: false,
        }
    }

    fn show(&mut self, event: &Event) {
        let Event::RetryScheduled {
            attempt,
            delay_ms,
            reason,
            message,
        } = event
        else {
            return;
        };
        let what = if message.is_empty() { reason } else { message };
        let line = format!(
            "gyre: {}; retry {attempt} in {:.1} s",
            what.trim_end_matches('.'),
            *delay_ms as f64 / 1000.0
        );
        let mut err = std::io::stderr().lock();
        let _ = if self.in_place {
            self.open = true;
            write!(err, "\r\x1b[2K{line}")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
    }

    /// Ends a line left open on a terminal, so what follows starts clean.
    fn finish(&mut self) {
        if std::mem::take(&mut self.open) {
            eprintln!();
        }
    }
}
