//! Limits, cancellation and provider failures end a run cleanly, with a valid
//! stored history.

use std::time::{Duration, Instant};

use futures::StreamExt;
use gyre_mock::{HttpReply, Reply, Script, Step, StreamReply, When};
use gyre_protocol::{Event, FinishReason, Role, RunErrorKind};
use serde_json::json;

use crate::harness::*;

#[tokio::test]
async fn max_turns_ends_with_a_wrap_up_turn_without_tools() {
    for wire in WIRES {
        let script = Script {
            context_window: None,
            steps: vec![Step {
                reply: Reply::Stream(StreamReply {
                    items: vec![
                        text("Reading again."),
                        call("read", json!({"file_path": "a.txt"})),
                    ],
                    ..StreamReply::default()
                }),
                ..Step::default()
            }],
        };
        let h = Harness::with(wire, script, gyre_tools::Registry::builtin(), |c| {
            c.max_turns = Some(2)
        })
        .await;
        std::fs::write(h.path("a.txt"), "a").unwrap();
        let done = h.run("loop forever").await;

        assert_eq!(done.summary.reason, FinishReason::MaxTurns, "{wire:?}");
        assert_eq!(done.summary.num_turns, 2);
        assert_eq!(
            done.summary.error.as_ref().unwrap().kind,
            RunErrorKind::Limit
        );
        let bodies = h.bodies();
        assert_eq!(bodies.len(), 2);
        // The first request offers tools; the last forbids them and says why.
        match wire {
            Wire::Anthropic => {
                assert_eq!(bodies[0]["tool_choice"]["type"], "auto");
                assert_eq!(bodies[1]["tool_choice"]["type"], "none");
            }
            Wire::OpenAi | Wire::OpenAiResponses => {
                assert_eq!(bodies[0]["tool_choice"], "auto");
                assert_eq!(bodies[1]["tool_choice"], "none");
            }
            Wire::Gemini => {
                let mode = |b: &serde_json::Value| {
                    b["toolConfig"]["functionCallingConfig"]["mode"].clone()
                };
                assert_eq!(mode(&bodies[0]), "AUTO");
                assert_eq!(mode(&bodies[1]), "NONE");
            }
        }
        let history = ["messages", "input", "contents"]
            .iter()
            .find_map(|f| bodies[1][*f].as_array())
            .unwrap();
        let last = history.last().unwrap().to_string();
        assert!(last.contains("last turn allowed"), "{wire:?}: {last}");
        // The call the model made anyway was refused, and recorded.
        let results = results(&done.events);
        assert_eq!(results.len(), 2);
        assert!(results[1].is_error);
        assert!(results[1].text_content().contains("tools are disabled"));
        let stored = h.stored(&done.session).await;
        assert_eq!(stored.last().unwrap().role, Role::User);
    }
}

#[tokio::test]
async fn cancel_during_a_long_command_stops_at_once_and_records_it() {
    let marker = "31.4159";
    let script = Script::linear(vec![vec![call(
        "bash",
        json!({"command": format!("echo started; sleep {marker}")}),
    )]]);
    let h = Harness::new(Wire::Anthropic, script).await;
    let session = h.session("sleep").await;
    let mut run = h.agent.run(session, "sleep".into());

    let mut cancelled_at = None;
    let mut summary = None;
    let deadline = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(event) = run.events.next().await {
            match &event {
                Event::ToolProgress { output, .. }
                    if output.contains("started") && cancelled_at.is_none() =>
                {
                    cancelled_at = Some(Instant::now());
                    run.handle.cancel();
                }
                Event::RunFinished(s) => summary = Some(s.clone()),
                _ => {}
            }
        }
    });
    deadline.await.expect("the run did not end");
    let took = cancelled_at.expect("the command never started").elapsed();
    assert!(took < Duration::from_secs(1), "cancel took {took:?}");
    let summary = summary.unwrap();
    assert_eq!(summary.reason, FinishReason::Cancelled);

    let session = run.finish().await.unwrap();
    let stored = h.stored(&session).await;
    assert_eq!(stored.len(), 3, "prompt, the call, its interrupted result");
    let result = stored[2].tool_results().next().unwrap();
    assert!(result.is_error);
    assert!(
        result.text_content().to_lowercase().contains("cancel"),
        "{result:?}"
    );
    assert!(!process_running(marker), "the sleep outlived the cancel");
}

fn process_running(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).contains(marker))
            .unwrap_or(false)
    })
}

#[tokio::test]
async fn a_stream_cut_mid_event_fails_the_run_cleanly() {
    for wire in WIRES {
        let script = Script {
            context_window: None,
            steps: vec![Step {
                reply: Reply::Stream(StreamReply {
                    items: vec![text(
                        "This answer will be cut somewhere in the middle of it.",
                    )],
                    cut_after_events: Some(4),
                    ..StreamReply::default()
                }),
                ..Step::default()
            }],
        };
        let h = Harness::new(wire, script).await;
        let done = h.run("talk").await;
        assert_eq!(done.summary.reason, FinishReason::Failed, "{wire:?}");
        let error = done.summary.error.unwrap();
        assert_eq!(error.kind, RunErrorKind::Provider, "{wire:?}");
        assert!(!error.message.is_empty());
        // Nothing half-written in the history: the cut came before any part
        // was complete, so only the prompt is stored.
        let stored = h.stored(&done.session).await;
        assert_eq!(stored.len(), 1, "{wire:?}: {stored:?}");
        assert_eq!(stored[0].role, Role::User);
    }
}

#[tokio::test]
async fn provider_errors_are_classified() {
    for (status, kind) in [
        (401, RunErrorKind::Auth),
        (500, RunErrorKind::Provider),
        (429, RunErrorKind::Provider),
    ] {
        let script = Script {
            context_window: None,
            steps: vec![Step {
                when: When::default(),
                times: None,
                reply: Reply::Http(HttpReply {
                    status,
                    ..HttpReply::default()
                }),
            }],
        };
        let h = Harness::new(Wire::Anthropic, script).await;
        let done = h.run("hello").await;
        assert_eq!(done.summary.reason, FinishReason::Failed);
        let error = done.summary.error.unwrap();
        assert_eq!(error.kind, kind, "HTTP {status}: {}", error.message);
        assert!(
            !error.message.contains('\n'),
            "one sentence: {}",
            error.message
        );
    }
}
