//! The acceptance tasks of the spine, per wire API.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use futures::FutureExt;
use futures::future::BoxFuture;
use gyre_mock::Script;
use gyre_protocol::{Event, FinishReason, Part, Role, ToolSpec};
use gyre_tools::{Registry, Tool, ToolContext, ToolError, ToolKind, ToolOutput};
use serde_json::json;

use crate::harness::*;

fn three_step_script() -> Script {
    Script::linear(vec![
        vec![
            text("Reading the notes."),
            call("read", json!({"file_path": "notes.txt"})),
        ],
        vec![call(
            "bash",
            json!({"command": "echo built > out.txt && cat out.txt"}),
        )],
        vec![text("Done: out.txt says built.")],
    ])
}

#[tokio::test]
async fn three_step_task_over_each_wire_api() {
    for wire in WIRES {
        let h = Harness::new(wire, three_step_script()).await;
        std::fs::write(h.path("notes.txt"), "remember the milk\n").unwrap();

        let done = h.run("do the three steps").await;

        // Events: one run, three turns, two tools, in order.
        assert_eq!(
            done.summary.reason,
            FinishReason::Completed,
            "{wire:?}: {:?}",
            done.summary
        );
        assert_eq!(done.summary.num_turns, 3, "{wire:?}");
        assert_eq!(done.summary.final_text, "Done: out.txt says built.");
        assert_eq!(
            kinds(&done.events),
            [
                "run_started",
                "turn_started",
                "tool_call_ready",
                "turn_completed",
                "tool_result",
                "turn_started",
                "tool_call_ready",
                "turn_completed",
                "tool_result",
                "turn_started",
                "turn_completed",
                "run_finished"
            ],
            "{wire:?}"
        );
        let results = results(&done.events);
        assert!(
            results[0].text_content().contains("remember the milk"),
            "{wire:?}"
        );
        assert!(
            !results[0].is_error && !results[1].is_error,
            "{wire:?}: {results:?}"
        );
        assert!(results[1].text_content().contains("built"), "{wire:?}");

        // The file the shell wrote.
        assert_eq!(
            std::fs::read_to_string(h.path("out.txt")).unwrap(),
            "built\n"
        );

        // The store holds the whole conversation, as the loop saw it.
        let stored = h.stored(&done.session).await;
        let roles: Vec<Role> = stored.iter().map(|m| m.role).collect();
        use Role::*;
        assert_eq!(
            roles,
            [User, Assistant, User, Assistant, User, Assistant],
            "{wire:?}"
        );
        let history: Vec<_> = done.session.history.iter().map(|m| (**m).clone()).collect();
        assert_eq!(stored, history, "{wire:?}");

        // The third request carried both results, each paired with its call id.
        let bodies = h.bodies();
        assert_eq!(bodies.len(), 3, "{wire:?}");
        let ids = tool_call_ids_in(&bodies[2]);
        let carried = tool_results_in(&bodies[2]);
        assert_eq!(ids.len(), 2, "{wire:?}");
        // Gemini has no call ids on the wire; calls and results pair by name
        // and order there.
        assert_eq!(
            carried
                .iter()
                .map(|(id, _, _)| id.clone())
                .collect::<Vec<_>>(),
            ids,
            "{wire:?}"
        );
        assert!(carried[0].1.contains("remember the milk"), "{wire:?}");
        assert!(carried[1].1.contains("built"), "{wire:?}");
    }
}

#[tokio::test]
async fn text_and_two_tool_calls_interleaved_in_one_message() {
    for wire in WIRES {
        let script = Script::linear(vec![
            vec![
                text("First a."),
                call("read", json!({"file_path": "a.txt"})),
                text("Then b."),
                call("read", json!({"file_path": "b.txt"})),
            ],
            vec![text("Both read.")],
        ]);
        let h = Harness::new(wire, script).await;
        std::fs::write(h.path("a.txt"), "alpha\n").unwrap();
        std::fs::write(h.path("b.txt"), "beta\n").unwrap();

        let done = h.run("read both").await;
        assert_eq!(done.summary.reason, FinishReason::Completed, "{wire:?}");

        let answer = &done.session.history[1];
        let calls: Vec<_> = answer.tool_calls().map(|c| c.id.clone()).collect();
        assert_eq!(calls.len(), 2);
        if wire == Wire::Anthropic {
            // Anthropic keeps the interleaving: text, call, text, call.
            let shape: Vec<&str> = answer
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text { .. } => "text",
                    Part::ToolCall(_) => "call",
                    _ => "other",
                })
                .collect();
            assert_eq!(shape, ["text", "call", "text", "call"]);
        }
        let results: Vec<_> = done.session.history[2].tool_results().collect();
        assert_eq!(
            results
                .iter()
                .map(|r| r.call_id.clone())
                .collect::<Vec<_>>(),
            calls,
            "{wire:?}: results in call order"
        );
        assert!(results[0].text_content().contains("alpha"));
        assert!(results[1].text_content().contains("beta"));
    }
}

/// A read-only test tool that waits until the call labelled `after` has
/// finished (an event, not a clock), then records that it finished.
struct Wait {
    spec: ToolSpec,
    finished: Arc<Mutex<Vec<String>>>,
    changed: Arc<Notify>,
}

impl Wait {
    /// Waits until `label` finished; false after a bound that only a
    /// broken scheduler (calls run one after the other) ever reaches.
    async fn until_finished(&self, label: &str) -> bool {
        let seen = async {
            loop {
                let changed = self.changed.notified();
                tokio::pin!(changed);
                // Registered before the check, so an end in between is seen.
                changed.as_mut().enable();
                if self.finished.lock().unwrap().iter().any(|l| l == label) {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), seen)
            .await
            .is_ok()
    }
}

impl Tool for Wait {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn kind(&self, _: &serde_json::Value) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn run<'a>(
        &'a self,
        args: serde_json::Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        async move {
            let mut label = args["label"].as_str().unwrap_or("").to_string();
            if let Some(after) = args["after"].as_str()
                && !self.until_finished(after).await
            {
                label = format!("{label} (never saw {after} finish)");
            }
            self.finished.lock().unwrap().push(label.clone());
            self.changed.notify_waiters();
            Ok(ToolOutput::text(
                format!("wait {label}"),
                format!("waited for {label}"),
            ))
        }
        .boxed()
    }
}

#[tokio::test]
async fn results_follow_call_order_when_calls_finish_out_of_order() {
    let finished = Arc::new(Mutex::new(Vec::new()));
    let mut tools = Registry::builtin();
    tools.register(Arc::new(Wait {
        spec: ToolSpec {
            name: "wait".into(),
            description: "waits".into(),
            input_schema: json!({"type": "object"}),
        },
        finished: finished.clone(),
        changed: Arc::default(),
    }));
    let script = Script::linear(vec![
        vec![
            call("wait", json!({"after": "fast", "label": "slow"})),
            call("wait", json!({"label": "fast"})),
        ],
        vec![text("ok")],
    ]);
    let h = Harness::with(Wire::Anthropic, script, tools, |_| {}).await;
    let done = h.run("wait twice").await;

    assert_eq!(
        *finished.lock().unwrap(),
        ["fast", "slow"],
        "they ran concurrently"
    );
    let labels: Vec<String> = results(&done.events)
        .iter()
        .map(|r| r.text_content())
        .collect();
    assert_eq!(labels, ["waited for slow", "waited for fast"]);
    // A result event never comes before its call was announced.
    let ready = done
        .events
        .iter()
        .position(|e| matches!(e, Event::ToolCallReady { .. }))
        .unwrap();
    let first_result = done
        .events
        .iter()
        .position(|e| matches!(e, Event::ToolResult { .. }))
        .unwrap();
    assert!(ready < first_result);
}
