//! The scheduler through the whole loop: concurrency of read-only calls and
//! its limit, strict order around mutating calls, tools that start while the
//! model still streams, and sibling abort.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use gyre_core::SiblingAbort;
use gyre_mock::{Reply, Script, Step, StreamReply, When};
use gyre_protocol::{Event, FinishReason, Outcome, ToolSpec};
use gyre_tools::{Registry, Tool, ToolContext, ToolError, ToolKind, ToolOutput};
use serde_json::json;

use crate::harness::*;

/// What the probes saw.
#[derive(Default)]
struct Log {
    running: AtomicUsize,
    most_at_once: AtomicUsize,
    lines: Mutex<Vec<String>>,
}

impl Log {
    fn push(&self, line: String) {
        self.lines.lock().unwrap().push(line);
    }
    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
}

/// A test tool: waits `ms` (stopping early when cancelled), reports that it
/// started as progress, and fails when `fail` is set.
struct Probe {
    spec: ToolSpec,
    kind: ToolKind,
    log: Arc<Log>,
}

impl Probe {
    fn register(tools: &mut Registry, name: &str, kind: ToolKind, log: &Arc<Log>) {
        tools.register(Arc::new(Probe {
            spec: ToolSpec {
                name: name.into(),
                description: "a test probe".into(),
                input_schema: json!({"type": "object"}),
            },
            kind,
            log: log.clone(),
        }));
    }
}

impl Tool for Probe {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn kind(&self, _: &serde_json::Value) -> ToolKind {
        self.kind
    }
    fn run<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        async move {
            let label = args["label"].as_str().unwrap_or("").to_string();
            let now = self.log.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.log.most_at_once.fetch_max(now, Ordering::SeqCst);
            ctx.report_progress(&format!("{label} started"));
            let ms = args["ms"].as_u64().unwrap_or(0);
            let stopped = tokio::select! {
                _ = ctx.cancel.cancelled() => true,
                _ = tokio::time::sleep(Duration::from_millis(ms)) => false,
            };
            self.log.running.fetch_sub(1, Ordering::SeqCst);
            if stopped {
                self.log.push(format!("{label} cancelled"));
                return Err(ToolError::Cancelled {
                    output: String::new(),
                });
            }
            self.log.push(format!("{label} done"));
            let mut output = ToolOutput::text(label.clone(), format!("{label} ok"));
            if args["fail"].as_bool().unwrap_or(false) {
                output.outcome = Outcome::Error;
            }
            Ok(output)
        }
        .boxed()
    }
}

fn probe(name: &str, label: &str, ms: u64) -> gyre_mock::Item {
    call(name, json!({"label": label, "ms": ms}))
}

fn probes(log: &Arc<Log>) -> Registry {
    let mut tools = Registry::builtin();
    Probe::register(&mut tools, "look", ToolKind::ReadOnly, log);
    Probe::register(&mut tools, "change", ToolKind::Mutating, log);
    tools
}

#[tokio::test]
async fn three_slow_reads_run_together() {
    let log = Arc::new(Log::default());
    let script = Script::linear(vec![
        vec![
            probe("look", "a", 300),
            probe("look", "b", 300),
            probe("look", "c", 300),
        ],
        vec![text("done")],
    ]);
    let h = Harness::with(Wire::Anthropic, script, probes(&log), |_| {}).await;
    let done = h.run("look thrice").await;
    assert_eq!(done.summary.reason, FinishReason::Completed);
    // All three were running at one moment: that is the overlap, measured
    // without a clock (a wall-time bound flaked on a loaded CI machine).
    assert_eq!(log.most_at_once.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn the_concurrency_limit_holds() {
    let log = Arc::new(Log::default());
    let calls = (0..6)
        .map(|i| probe("look", &format!("r{i}"), 60))
        .collect();
    let script = Script::linear(vec![calls, vec![text("done")]]);
    let h = Harness::with(Wire::OpenAi, script, probes(&log), |c| {
        c.read_only_concurrency = 2
    })
    .await;
    let done = h.run("look a lot").await;
    assert_eq!(done.summary.reason, FinishReason::Completed);
    assert_eq!(log.most_at_once.load(Ordering::SeqCst), 2);
    assert_eq!(results(&done.events).len(), 6);
}

#[tokio::test]
async fn a_change_waits_for_earlier_reads_and_later_reads_wait_for_it() {
    let log = Arc::new(Log::default());
    let script = Script::linear(vec![
        vec![
            probe("look", "before", 150),
            probe("change", "edit", 50),
            probe("look", "after", 1),
        ],
        vec![text("done")],
    ]);
    let h = Harness::with(Wire::Anthropic, script, probes(&log), |_| {}).await;
    h.run("change it").await;
    assert_eq!(log.lines(), ["before done", "edit done", "after done"]);
}

#[tokio::test]
async fn a_read_after_an_edit_sees_the_edit() {
    let script = Script::linear(vec![
        vec![
            call("read", json!({"file_path": "f.txt"})),
            call(
                "edit",
                json!({"file_path": "f.txt", "old_string": "old", "new_string": "new"}),
            ),
            call("read", json!({"file_path": "f.txt"})),
        ],
        vec![text("done")],
    ]);
    let h = Harness::new(Wire::Anthropic, script).await;
    std::fs::write(h.path("f.txt"), "old text\n").unwrap();
    let done = h.run("edit").await;
    let results = results(&done.events);
    assert!(results[0].text_content().contains("old text"));
    assert!(!results[1].is_error, "{}", results[1].text_content());
    assert!(results[2].text_content().contains("new text"));
}

#[tokio::test]
async fn a_tool_starts_while_the_model_is_still_streaming() {
    let log = Arc::new(Log::default());
    let script = Script {
        context_window: None,
        steps: vec![
            Step {
                when: When {
                    turn: Some(0),
                    ..When::default()
                },
                times: None,
                reply: Reply::Stream(StreamReply {
                    items: vec![probe("look", "early", 1)],
                    // Each event comes 250 ms after the one before: after the
                    // call's block closes, the message goes on for a while.
                    delay_between_ms: 250,
                    ..StreamReply::default()
                }),
            },
            Step {
                reply: Reply::Stream(StreamReply {
                    items: vec![text("done")],
                    ..StreamReply::default()
                }),
                ..Step::default()
            },
        ],
    };
    let h = Harness::with(Wire::Anthropic, script, probes(&log), |_| {}).await;
    let done = h.run("go").await;
    let position = |wanted: fn(&Event) -> bool| done.events.iter().position(wanted).unwrap();
    let progress = position(|e| matches!(e, Event::ToolProgress { .. }));
    let turn_done = position(|e| matches!(e, Event::TurnCompleted { .. }));
    assert!(
        progress < turn_done,
        "the tool reported progress before the answer ended: {:?}",
        kinds(&done.events)
    );
}

fn sibling_abort_run(failing_tool: &str, long_ms: u64) -> (Script, Arc<Log>, Registry) {
    let log = Arc::new(Log::default());
    let mut tools = probes(&log);
    // A read-only shell stand-in, so the batch runs concurrently.
    Probe::register(&mut tools, "bash", ToolKind::ReadOnly, &log);
    let script = Script::linear(vec![
        vec![
            probe("look", "long", long_ms),
            call(
                failing_tool,
                json!({"label": "failing", "ms": 50, "fail": true}),
            ),
            probe("look", "quick", 1),
        ],
        vec![text("done")],
    ]);
    (script, log, tools)
}

#[tokio::test]
async fn a_failing_shell_call_cancels_its_running_siblings() {
    let (script, log, tools) = sibling_abort_run("bash", 30_000);
    let h = Harness::with(Wire::Anthropic, script, tools, |_| {}).await;
    let started = Instant::now();
    let done = h.run("go").await;
    // The long sibling would take 30 s; well under that means it was cut.
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        done.summary.reason,
        FinishReason::Completed,
        "the run goes on"
    );
    let results = results(&done.events);
    assert!(results[0].is_error);
    assert!(
        results[0].text_content().contains("`bash`")
            && results[0].text_content().contains("failed"),
        "{}",
        results[0].text_content()
    );
    assert!(results[1].is_error, "the failure itself");
    assert!(
        !results[2].is_error,
        "a sibling that had finished keeps its result"
    );
    assert!(log.lines().contains(&"long cancelled".to_string()));
}

#[tokio::test]
async fn sibling_abort_follows_its_setting() {
    // `none`: the long sibling runs to its end.
    let (script, log, tools) = sibling_abort_run("bash", 1500);
    let h = Harness::with(Wire::Anthropic, script, tools, |c| {
        c.sibling_abort = SiblingAbort::None
    })
    .await;
    let done = h.run("go").await;
    assert!(!results(&done.events)[0].is_error);
    assert!(log.lines().contains(&"long done".to_string()));

    // `bash` (the default): another tool's failure cancels nothing.
    let (script, log, tools) = sibling_abort_run("look", 1500);
    let h = Harness::with(Wire::Anthropic, script, tools, |_| {}).await;
    h.run("go").await;
    assert!(log.lines().contains(&"long done".to_string()));

    // `any`: it does.
    let (script, log, tools) = sibling_abort_run("look", 30_000);
    let h = Harness::with(Wire::Anthropic, script, tools, |c| {
        c.sibling_abort = SiblingAbort::Any
    })
    .await;
    h.run("go").await;
    assert!(log.lines().contains(&"long cancelled".to_string()));
}
