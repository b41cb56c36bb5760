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

use crate::denials::Denials;
use crate::output::{InitInfo, StreamJson, result_object, with_cache_savings};
use gyre_host::OutputFormat;
use gyre_host::Settings;
use gyre_host::exit::{CANCELLED, Exit, code_for};

pub async fn run(
    settings: &Settings,
    home: &Path,
    prompt: String,
    images: Vec<gyre_protocol::Part>,
) -> Result<i32, Exit> {
    let (agent, session) = settings.start(home, &prompt).await?;
    let session_id = session.id().to_string();
    let request = RunRequest {
        prompt: Some(prompt),
        compact: settings.compact_first.then(ManualCompaction::default),
        images,
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

    let mut lines = StreamJson::new(session_id.clone(), settings.include_partial_messages)
        .with_init(with_server_states(
            init_info(settings),
            agent.config().late_tools.as_deref(),
        ))
        .with_pricing(settings.pricing);
    let mut summary: Option<RunSummary> = None;
    let mut stdout_open = true;
    let mut denials = Denials::default();
    let mut waits = RetryLine::new();
    while let Some(event) = run.events.next().await {
        if settings.output_format != OutputFormat::StreamJson {
            waits.show(&event);
        }
        if let Event::CheckpointFailed { message, .. } = &event
            && settings.output_format != OutputFormat::StreamJson
        {
            waits.finish();
            eprintln!("gyre: warning: {message}");
        }
        if let Some(denial) = denials.observe(&event)
            && settings.output_format == OutputFormat::Text
        {
            waits.finish();
            eprintln!("{}", denial.line());
        }
        if settings.output_format == OutputFormat::StreamJson && stdout_open {
            for mut line in lines.lines(&event) {
                if line["type"] == "result" {
                    with_denials(&mut line, &denials);
                    with_structured(&mut line, settings.output_schema.is_some());
                }
                if print_line(&line.to_string()).is_err() {
                    // Whoever read our output is gone: stop working for them.
                    stdout_open = false;
                    run.handle.cancel();
                    break;
                }
            }
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
            OutputFormat::Json => {
                let model = &settings.provider.model;
                let mut result = result_object(&summary, &session_id, model);
                crate::output::with_cost_note(&mut result, model, settings.pricing.is_some());
                with_cache_savings(&mut result, &summary.usage, settings.pricing.as_ref());
                with_denials(&mut result, &denials);
                with_structured(&mut result, settings.output_schema.is_some());
                print_line(&result.to_string())
            }
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

/// The result object with the run's refused calls (Claude Code's
/// `permission_denials`, empty when none).
pub(crate) fn with_denials(result: &mut serde_json::Value, denials: &Denials) {
    if let Some(object) = result.as_object_mut() {
        object.insert("permission_denials".into(), denials.json());
    }
}

/// With `--json-schema`, a successful result's value as Claude Code's
/// `structured_output` (the loop made its text the value's JSON).
pub(crate) fn with_structured(result: &mut serde_json::Value, wanted: bool) {
    if !wanted || result["subtype"] != "success" {
        return;
    }
    let value = result["result"]
        .as_str()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok());
    if let (Some(object), Some(value)) = (result.as_object_mut(), value) {
        object.insert("structured_output".into(), value);
    }
}

/// What `system/init` says beyond the run's own event.
pub(crate) fn init_info(settings: &Settings) -> InitInfo {
    let catalog = gyre_host::agent_catalog(
        gyre_host::config::user_config_dir().as_deref(),
        &settings.workspace,
    );
    InitInfo {
        permission_mode: settings.permissions.mode.as_str().to_string(),
        agents: catalog
            .names()
            .into_iter()
            .map(String::from)
            .chain(
                // The SDK's own agents (`initialize`), where not a file's.
                settings
                    .sdk_agents
                    .iter()
                    .map(|a| a.name.clone())
                    .filter(|n| !catalog.names().contains(&n.as_str())),
            )
            .collect(),
        // Started in the background: their states follow as
        // `system/mcp_server_status` lines.
        mcp_servers: settings
            .mcp_servers
            .iter()
            .map(|s| {
                let status = if s.enabled { "pending" } else { "disabled" };
                (s.name.clone(), status.to_string())
            })
            .collect(),
        warnings: settings.warnings.clone(),
        slash_commands: gyre_host::commands::list(&settings.workspace)
            .into_iter()
            .map(|command| command.name)
            .collect(),
        prices_known: Some(settings.pricing.is_some()),
        api_key_source: match settings.provider.api_key {
            Some(_) => "ANTHROPIC_API_KEY".to_string(),
            None => "none".to_string(),
        },
    }
}

/// The servers' states as they are now, in Claude Code's words: a
/// headless run has waited for them to be ready or failed before its first
/// request, so `system/init` can say `connected` or `failed`.
fn with_server_states(mut info: InitInfo, late: Option<&gyre_tools::LateTools>) -> InitInfo {
    let Some(late) = late else {
        return info;
    };
    let statuses = late.statuses();
    for (name, state) in &mut info.mcp_servers {
        if let Some(status) = statuses.iter().find(|s| s.server == *name) {
            *state = match status.status {
                gyre_protocol::McpServerState::Starting => "pending",
                gyre_protocol::McpServerState::Ready => "connected",
                _ => "failed",
            }
            .to_string();
        }
    }
    info
}

pub(crate) fn print_line(line: &str) -> std::io::Result<()> {
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
