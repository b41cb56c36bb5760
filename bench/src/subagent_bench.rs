//! The `subagents` scenarios, in-process: gyre_core's main agent (built-in
//! `build` profile, with the `task` tool) against the mock server, either
//! fanning out to 8 foreground `explore` subagents of 10 turns each, or
//! doing all 80 turns itself.
//!
//! Each run gets a fresh temp workspace (8 small files), a fresh SQLite
//! store in a temp dir and a fresh mock server, all made before the clock
//! starts. The agent runs on a current-thread tokio runtime, as the CLI
//! builds it; the mock runs on a runtime of its own (one worker thread), as
//! a model server is never inside gyre's process: sharing gyre's one
//! thread would make the mock's replies to 8 children queue behind gyre's
//! own work.
//!
//! Invariants:
//! - The clock runs from just before `Agent::start` to the top-level
//!   `RunFinished` event.
//! - A run counts only when it completed, every child's final answer is
//!   in the parent's tool results (events and the last recorded request),
//!   and the mock recorded exactly the scripted number of requests.
//! - Every scripted step after a child's first requires the previous tool
//!   result to hold the file's text, so a failing tool makes the next
//!   request match no step and the run fail, instead of being timed.
//! - Bounded: each run is given [`RUN_LIMIT`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use futures::StreamExt;
use gyre_core::prompt::PromptTemplate;
use gyre_core::{
    Agent, AgentCatalog, AgentConfig, PermissionMode, RunRequest, Session, SubagentLimits,
    SubagentSetup,
};
use gyre_llm::{AnthropicClient, ClientConfig, ModelClient};
use gyre_mock::{Item, MockServer, Reply, Script, Step, StreamReply, When};
use gyre_protocol::{Event, FinishReason, ToolResultContent};
use gyre_store_sql::SqliteStore;
use gyre_tools::{Registry, Workspace};
use serde_json::{Value, json};

use crate::inproc::process_cpu;

/// Subagents the parent starts in its first answer.
pub const CHILDREN: usize = 8;
/// Turns of each subagent: tool-calling answers, then one text answer.
pub const CHILD_TURNS: usize = 10;
/// Turns of the one agent that does all the work itself.
pub const SEQUENTIAL_TURNS: usize = CHILDREN * CHILD_TURNS;
/// Model requests of a fan-out run: the parent's two and the children's.
pub const FAN_OUT_REQUESTS: usize = 1 + CHILDREN * CHILD_TURNS + 1;
const MODEL: &str = "bench-model";
const RUN_LIMIT: Duration = Duration::from_secs(120);
/// Only the parent's requests carry this (its prompt).
const PARENT_MARKER: &str = "FANOUT-PARENT";
const SEQUENTIAL_MARKER: &str = "SEQUENTIAL-RUN";

/// The two ways of doing the same 80 turns of reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One answer of 8 `task` calls to `explore`, 10 turns each.
    FanOut,
    /// One agent, 80 turns.
    Sequential,
}

impl Shape {
    /// Model requests one run makes.
    pub fn requests(self) -> usize {
        match self {
            Shape::FanOut => FAN_OUT_REQUESTS,
            Shape::Sequential => SEQUENTIAL_TURNS,
        }
    }
}

/// The measured runs of one shape.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    pub wall_ms: Vec<f64>,
    /// This process's user+sys over the same span: gyre's thread, the
    /// blocking pool, SQLite's worker and the mock's thread.
    pub cpu_ms: Vec<f64>,
    /// The most subagents running at once (their nested `RunStarted` not
    /// yet followed by their `RunFinished`), per run.
    pub peak_children: Vec<f64>,
}

/// What one run gave.
struct Measured {
    wall: Duration,
    cpu: Duration,
    peak_children: usize,
}

/// One checked warm-up run, then `runs` measured runs of `shape`.
pub fn measure(shape: Shape, runs: usize) -> anyhow::Result<Samples> {
    let agent_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a tokio runtime")?;
    let mock_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the mock's tokio runtime")?;
    let mut samples = Samples::default();
    for run in 0..=runs {
        let server = mock_runtime
            .block_on(MockServer::start(script(shape)))
            .context("cannot start the mock server")?;
        let result = agent_runtime.block_on(async {
            tokio::time::timeout(RUN_LIMIT, run_once(shape, &server))
                .await
                .with_context(|| format!("the run did not end within {RUN_LIMIT:?}"))?
        });
        mock_runtime.block_on(server.shutdown());
        let measured = result.with_context(|| format!("{shape:?} run {run}"))?;
        // Run 0 is the warm-up: checked, not recorded.
        if run > 0 {
            samples.wall_ms.push(measured.wall.as_secs_f64() * 1e3);
            samples.cpu_ms.push(measured.cpu.as_secs_f64() * 1e3);
            samples.peak_children.push(measured.peak_children as f64);
        }
    }
    Ok(samples)
}

async fn run_once(shape: Shape, server: &MockServer) -> anyhow::Result<Measured> {
    let workspace = tempfile::tempdir().context("cannot make a temp dir")?;
    let home = tempfile::tempdir().context("cannot make a temp dir")?;
    for child in 0..CHILDREN {
        std::fs::write(workspace.path().join(file_name(child)), file_text(child))
            .context("cannot write a workspace file")?;
    }
    let store = Arc::new(SqliteStore::open(&home.path().join("sessions.db")).await?);
    let client: Arc<dyn ModelClient> = Arc::new(AnthropicClient::new(ClientConfig::new(
        server.anthropic_base_url(),
        Some("bench".into()),
    )));
    let catalog = Arc::new(AgentCatalog::default());
    let template = PromptTemplate {
        api: "anthropic".into(),
        cwd: workspace.path().to_path_buf(),
        ..PromptTemplate::default()
    };
    let limits = SubagentLimits {
        max_depth: 1,
        max_concurrent: CHILDREN,
    };
    let setup = SubagentSetup::new(catalog.clone(), template, Registry::builtin(), limits);
    let profile = catalog
        .require("build")
        .map_err(anyhow::Error::msg)?
        .clone();
    // The system prompt is the template's, assembled by `from_profile`.
    let mut config = AgentConfig::new(MODEL, "");
    config.permissions.mode = PermissionMode::BypassPermissions;
    config.read_only_concurrency = CHILDREN;
    let (agent, _warnings) = Agent::from_profile(
        client,
        store.clone(),
        Arc::new(Workspace::new(workspace.path())?),
        &config,
        &setup,
        &profile,
    );
    let prompt = parent_prompt(shape);
    let cwd = workspace.path().display().to_string();
    let session = Session::create(store.as_ref(), &cwd, "anthropic", MODEL, &prompt).await?;

    let start = Instant::now();
    let cpu_start = process_cpu();
    let mut run = agent.start(session, RunRequest::prompt(prompt));
    let mut wall_and_cpu = None;
    let mut summary = None;
    let (mut running, mut peak_children) = (0usize, 0usize);
    let mut task_results = Vec::new();
    while let Some(event) = run.events.next().await {
        match event {
            Event::RunFinished(s) => {
                wall_and_cpu = Some((start.elapsed(), process_cpu().saturating_sub(cpu_start)));
                summary = Some(s);
            }
            Event::Subagent { inner, .. } => match *inner {
                Event::RunStarted { .. } => {
                    running += 1;
                    peak_children = peak_children.max(running);
                }
                Event::RunFinished(_) => running = running.saturating_sub(1),
                _ => {}
            },
            Event::ToolResult { result, .. } if result.name == "task" => {
                ensure!(!result.is_error, "a task call failed: {:?}", result.content);
                task_results.push(text_of(&result.content));
            }
            _ => {}
        }
    }
    run.finish().await.context("the run's task failed")?;
    let summary = summary.context("the run sent no RunFinished")?;
    let (wall, cpu) = wall_and_cpu.context("the run sent no RunFinished")?;
    ensure!(
        summary.reason == FinishReason::Completed,
        "the run ended {:?}: {:?}",
        summary.reason,
        summary.error
    );
    check_requests(shape, server, &task_results)?;
    Ok(Measured {
        wall,
        cpu,
        peak_children,
    })
}

/// The recorded requests and the parent's task results are what the script
/// makes when everything ran.
fn check_requests(
    shape: Shape,
    server: &MockServer,
    task_results: &[String],
) -> anyhow::Result<()> {
    let requests = server.requests();
    ensure!(
        requests.len() == shape.requests(),
        "the mock recorded {} requests, not {}",
        requests.len(),
        shape.requests()
    );
    if shape == Shape::Sequential {
        ensure!(
            task_results.is_empty(),
            "the sequential agent started a task"
        );
        return Ok(());
    }
    ensure!(
        task_results.len() == CHILDREN,
        "{} task results, not {CHILDREN}",
        task_results.len()
    );
    let last = requests.last().context("no request recorded")?;
    let body = last.body.to_string();
    ensure!(
        body.contains(PARENT_MARKER),
        "the last request was not the parent's"
    );
    let in_request = tool_results_in(&last.body);
    for child in 0..CHILDREN {
        let report = child_report(child);
        ensure!(
            task_results.iter().any(|r| r.contains(&report)),
            "no task result holds {report:?}"
        );
        ensure!(
            in_request.iter().any(|r| r.contains(&report)),
            "the parent's last request has no tool result holding {report:?}"
        );
        let marker = child_marker(child);
        let made = requests
            .iter()
            .filter(|r| {
                let body = r.body.to_string();
                body.contains(&marker) && !body.contains(PARENT_MARKER)
            })
            .count();
        ensure!(
            made == CHILD_TURNS,
            "child {child} made {made} requests, not {CHILD_TURNS}"
        );
    }
    Ok(())
}

fn text_of(content: &[ToolResultContent]) -> String {
    content
        .iter()
        .filter_map(|c| match c {
            ToolResultContent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The texts of the `tool_result` blocks of an Anthropic request body.
fn tool_results_in(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] != "tool_result" {
                continue;
            }
            out.push(match &block["content"] {
                Value::String(s) => s.clone(),
                Value::Array(items) => items
                    .iter()
                    .filter_map(|i| i["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            });
        }
    }
    out
}

fn file_name(child: usize) -> String {
    format!("file-{child}.txt")
}

fn file_text(child: usize) -> String {
    format!("bench file {child} for the subagents group\n")
}

/// What the read of a child's file must have returned (the trailing space
/// keeps file 1 from matching file 10 and up).
fn file_guard(child: usize) -> String {
    format!("bench file {child} ")
}

fn child_marker(child: usize) -> String {
    format!("CHILD-{child}:")
}

/// A child's final answer, which must come back to the parent.
fn child_report(child: usize) -> String {
    format!("REPORT-{child}-OK")
}

fn parent_prompt(shape: Shape) -> String {
    match shape {
        Shape::FanOut => {
            format!("{PARENT_MARKER}: have {CHILDREN} explore agents read one file each, at once")
        }
        Shape::Sequential => format!(
            "{SEQUENTIAL_MARKER}: read {} {} times",
            file_name(0),
            SEQUENTIAL_TURNS - 1
        ),
    }
}

fn step(when: When, items: Vec<Item>) -> Step {
    Step {
        when,
        times: None,
        reply: Reply::Stream(StreamReply {
            items,
            ..StreamReply::default()
        }),
    }
}

/// A read of `child`'s file; its `limit` (always past the file's end)
/// differs per turn, so the loop guard sees work, not one call repeated.
fn read_call(child: usize, turn: usize) -> Item {
    Item::ToolCall {
        id: None,
        name: "read".into(),
        arguments: json!({"file_path": file_name(child), "limit": 1000 + turn}),
        fragments: None,
    }
}

/// `turns` turns of one conversation told apart by `marker` (in every one
/// of its requests): reads of `child`'s file, then `answer`.
fn read_steps(marker: &str, child: usize, turns: usize, answer: String) -> Vec<Step> {
    (0..turns)
        .map(|turn| {
            let when = When {
                turn: Some(turn as u32),
                body_contains: Some(marker.to_owned()),
                last_message_contains: (turn > 0).then(|| file_guard(child)),
                ..When::default()
            };
            let items = if turn + 1 < turns {
                vec![read_call(child, turn)]
            } else {
                vec![Item::Text(answer.clone())]
            };
            step(when, items)
        })
        .collect()
}

/// The parent's steps come first: its later requests also carry every
/// child's marker (in its own `task` calls), and the first matching step
/// answers.
pub fn script(shape: Shape) -> Script {
    match shape {
        Shape::Sequential => Script::new(read_steps(
            SEQUENTIAL_MARKER,
            0,
            SEQUENTIAL_TURNS,
            "Done.".into(),
        )),
        Shape::FanOut => {
            let parent = |turn: u32| When {
                turn: Some(turn),
                body_contains: Some(PARENT_MARKER.into()),
                ..When::default()
            };
            let calls = (0..CHILDREN)
                .map(|child| Item::ToolCall {
                    id: None,
                    name: "task".into(),
                    arguments: json!({
                        "description": format!("read file {child}"),
                        "prompt": format!(
                            "{} read {} {} times, then report",
                            child_marker(child),
                            file_name(child),
                            CHILD_TURNS - 1
                        ),
                        "agent": "explore",
                    }),
                    fragments: None,
                })
                .collect();
            let mut steps = vec![
                step(parent(0), calls),
                step(parent(1), vec![Item::Text("All reports are in.".into())]),
            ];
            for child in 0..CHILDREN {
                let answer = format!("{}: read {} fine", child_report(child), file_name(child));
                steps.extend(read_steps(&child_marker(child), child, CHILD_TURNS, answer));
            }
            Script::new(steps)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_have_one_step_per_request() {
        assert_eq!(
            script(Shape::FanOut).steps.len(),
            2 + CHILDREN * CHILD_TURNS
        );
        assert_eq!(script(Shape::Sequential).steps.len(), SEQUENTIAL_TURNS);
        assert_eq!(Shape::FanOut.requests(), 82);
        assert_eq!(Shape::Sequential.requests(), 80);
        for child in 0..CHILDREN {
            assert!(file_text(child).contains(&file_guard(child)));
        }
    }

    #[test]
    fn one_run_of_each_shape_checks_out() {
        let fan_out = measure(Shape::FanOut, 1).expect("fan-out");
        assert_eq!(fan_out.wall_ms.len(), 1);
        assert!(fan_out.peak_children[0] >= 1.0, "{fan_out:?}");
        let sequential = measure(Shape::Sequential, 1).expect("sequential");
        assert_eq!(sequential.peak_children, [0.0]);
    }
}
