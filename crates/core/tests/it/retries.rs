//! Failed model requests: retried when that can help, after the right delay,
//! without duplicating anything in the transcript or running a tool twice.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use gyre_llm::catalog::Pricing;
use gyre_mock::{HttpReply, Item, Reply, Script, Step, StreamReply, When};
use gyre_protocol::{Event, FinishReason, Role, RunErrorKind, StopReason};
use serde_json::json;

use crate::harness::*;

fn http(status: u16, headers: &[(&str, &str)]) -> Reply {
    Reply::Http(HttpReply {
        status,
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        ..HttpReply::default()
    })
}

fn once(reply: Reply) -> Step {
    Step {
        when: When::default(),
        times: Some(1),
        reply,
    }
}

fn answer(items: Vec<Item>) -> Step {
    Step {
        reply: Reply::Stream(StreamReply {
            items,
            ..StreamReply::default()
        }),
        ..Step::default()
    }
}

fn cut(items: Vec<Item>, after_events: usize) -> Reply {
    Reply::Stream(StreamReply {
        items,
        cut_after_events: Some(after_events),
        ..StreamReply::default()
    })
}

fn retries(events: &[Event]) -> Vec<(u32, u64, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::RetryScheduled {
                attempt,
                delay_ms,
                reason,
                ..
            } => Some((*attempt, *delay_ms, reason.clone())),
            _ => None,
        })
        .collect()
}

fn one_fragment_call(name: &str, arguments: serde_json::Value) -> Item {
    Item::ToolCall {
        id: None,
        name: name.into(),
        arguments,
        fragments: Some(1),
    }
}

#[tokio::test]
async fn a_rate_limit_is_retried_after_the_delay_the_provider_asked_for() {
    for wire in WIRES {
        let script = Script {
            context_window: None,
            steps: vec![
                once(http(429, &[("retry-after", "1")])),
                answer(vec![text("done")]),
            ],
        };
        let h = Harness::new(wire, script).await;
        let started = Instant::now();
        let done = h.run("hello").await;

        assert_eq!(done.summary.reason, FinishReason::Completed, "{wire:?}");
        assert_eq!(retries(&done.events), vec![(1, 1000, "rate_limit".into())]);
        assert!(started.elapsed() >= Duration::from_secs(1), "{wire:?}");
        assert_eq!(h.bodies().len(), 2);
        assert_eq!(done.summary.num_turns, 1, "a retried request is one turn");
        let stored = h.stored(&done.session).await;
        assert_eq!(stored.len(), 2, "{wire:?}: {stored:?}");
        assert_eq!(stored[1].text(), "done");
    }
}

#[tokio::test]
async fn server_errors_and_overload_back_off_and_then_succeed() {
    let script = Script {
        context_window: None,
        steps: vec![
            once(http(500, &[])),
            once(http(529, &[])),
            once(http(503, &[])),
            answer(vec![text("finally")]),
        ],
    };
    let h = Harness::new(Wire::Anthropic, script).await;
    let done = h.run("hello").await;
    assert_eq!(done.summary.reason, FinishReason::Completed);
    let seen = retries(&done.events);
    assert_eq!(
        seen.iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![1, 2, 3],
        "{seen:?}"
    );
    assert_eq!(seen[1].2, "overloaded");
    // fast_retries: 10 ms doubling, capped at 40 ms, with equal jitter.
    for (attempt, delay, _) in &seen {
        let full = (10u64 << (attempt - 1)).min(40);
        assert!(
            (full / 2..=full).contains(delay),
            "attempt {attempt}: {delay} ms"
        );
    }
    assert_eq!(done.summary.final_text, "finally");
}

#[tokio::test]
async fn retries_run_out_and_the_run_fails_saying_so() {
    let script = Script {
        context_window: None,
        steps: vec![Step {
            reply: http(500, &[]),
            ..Step::default()
        }],
    };
    let h = Harness::new(Wire::OpenAi, script).await;
    let done = h.run("hello").await;
    assert_eq!(done.summary.reason, FinishReason::Failed);
    let error = done.summary.error.unwrap();
    assert_eq!(error.kind, RunErrorKind::Provider);
    assert!(error.message.contains("4 attempts"), "{}", error.message);
    assert_eq!(h.bodies().len(), 4, "1 attempt + max_retries (3)");
    assert_eq!(h.stored(&done.session).await.len(), 1, "only the prompt");
}

#[tokio::test]
async fn permanent_errors_are_not_retried() {
    for status in [400, 401, 403] {
        let script = Script {
            context_window: None,
            steps: vec![Step {
                reply: http(status, &[]),
                ..Step::default()
            }],
        };
        let h = Harness::new(Wire::Anthropic, script).await;
        let done = h.run("hello").await;
        assert_eq!(done.summary.reason, FinishReason::Failed, "{status}");
        assert!(retries(&done.events).is_empty(), "{status}");
        assert_eq!(h.bodies().len(), 1, "{status}");
    }
}

#[tokio::test]
async fn a_stream_cut_before_any_tool_started_is_discarded_and_asked_again() {
    // Anthropic frames: message_start, then the text block (start, delta,
    // stop), then the tool block's start: cut there. The text part was
    // complete and stored; it must be discarded with the rest.
    let first = cut(
        vec![
            text("Hi."),
            one_fragment_call("write", json!({"file_path": "x", "content": "y"})),
        ],
        5,
    );
    let script = Script {
        context_window: None,
        steps: vec![once(first), answer(vec![text("whole answer")])],
    };
    let h = Harness::new(Wire::Anthropic, script).await;
    let done = h.run("hello").await;

    assert_eq!(done.summary.reason, FinishReason::Completed);
    assert_eq!(retries(&done.events).len(), 1);
    let reason = &retries(&done.events)[0].2;
    assert!(reason == "network" || reason == "stream", "{reason}");
    assert!(!h.path("x").exists(), "the cut call never ran");
    let stored = h.stored(&done.session).await;
    assert_eq!(stored.len(), 2, "{stored:?}");
    assert_eq!(stored[1].text(), "whole answer");
    assert_eq!(
        done.session.history.len(),
        2,
        "memory and store agree: {:?}",
        done.session.history
    );
}

#[tokio::test]
async fn a_stream_cut_after_a_tool_started_never_runs_the_tool_twice() {
    // message_start, tool block start, one delta, stop: the call is complete
    // (and started) when the stream breaks.
    let first = cut(
        vec![one_fragment_call(
            "bash",
            json!({"command": "echo ran >> log.txt"}),
        )],
        4,
    );
    let script = Script {
        context_window: None,
        steps: vec![
            Step {
                when: When {
                    turn: Some(0),
                    ..When::default()
                },
                times: Some(1),
                reply: first,
            },
            answer(vec![text("done")]),
        ],
    };
    let h = Harness::new(Wire::Anthropic, script).await;
    let done = h.run("hello").await;

    assert_eq!(done.summary.reason, FinishReason::Completed);
    assert!(retries(&done.events).is_empty(), "not asked again");
    assert_eq!(
        std::fs::read_to_string(h.path("log.txt")).unwrap(),
        "ran\n",
        "the tool ran exactly once"
    );
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        tool_results_in(&bodies[1]).len(),
        1,
        "its result went back to the model"
    );
    let stored = h.stored(&done.session).await;
    let roles: Vec<Role> = stored.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        vec![Role::User, Role::Assistant, Role::User, Role::Assistant]
    );
}

#[tokio::test]
async fn three_turns_in_a_row_ending_in_an_error_stop_the_run() {
    // Every answer is unusable (the provider marks it an error, as Gemini does
    // for a malformed function call): the loop asks again twice, then stops.
    let script = Script {
        context_window: None,
        steps: vec![answer(vec![text("garbled"), Item::Stop("error".into())])],
    };
    let h = Harness::new(Wire::Gemini, script).await;
    let done = h.run("hello").await;
    assert_eq!(done.summary.reason, FinishReason::Failed);
    let error = done.summary.error.unwrap();
    assert!(
        error.message.contains("3 turns in a row"),
        "{}",
        error.message
    );
    assert_eq!(done.summary.num_turns, 3);
    let last = h.bodies().pop().unwrap().to_string();
    assert!(last.contains("could not be used"), "the model was told");
}

#[tokio::test]
async fn an_unusable_answer_is_followed_by_a_good_one() {
    let script = Script {
        context_window: None,
        steps: vec![
            Step {
                when: When {
                    turn: Some(0),
                    ..When::default()
                },
                // An empty answer leaves no model turn in the history.
                times: Some(1),
                ..answer(vec![Item::Stop("error".into())])
            },
            answer(vec![text("fine now")]),
        ],
    };
    let h = Harness::new(Wire::Gemini, script).await;
    let done = h.run("hello").await;
    assert_eq!(done.summary.reason, FinishReason::Completed);
    assert_eq!(done.summary.final_text, "fine now");
    assert_eq!(done.session.state.consecutive_errors, 0);
}

#[tokio::test]
async fn cancelling_during_a_retry_wait_ends_the_run_at_once() {
    let script = Script {
        context_window: None,
        steps: vec![Step {
            reply: http(429, &[("retry-after", "30")]),
            ..Step::default()
        }],
    };
    let h = Harness::with(
        Wire::Anthropic,
        script,
        gyre_tools::Registry::builtin(),
        |c| c.retry.budget = Duration::from_secs(60),
    )
    .await;
    let session = h.session("hello").await;
    let mut run = h.agent.run(session, "hello".into());
    let started = Instant::now();
    while let Some(event) = run.events.next().await {
        if let Event::RetryScheduled { delay_ms, .. } = event {
            assert_eq!(delay_ms, 30_000);
            run.handle.cancel();
        }
        if let Event::RunFinished(summary) = event {
            assert_eq!(summary.reason, FinishReason::Cancelled);
            break;
        }
    }
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_wait_longer_than_the_budget_gives_up_at_once() {
    let script = Script {
        context_window: None,
        steps: vec![Step {
            reply: http(429, &[("retry-after", "3600")]),
            ..Step::default()
        }],
    };
    let h = Harness::new(Wire::Anthropic, script).await;
    let started = Instant::now();
    let done = h.run("hello").await;
    assert_eq!(done.summary.reason, FinishReason::Failed);
    let message = done.summary.error.unwrap().message;
    assert!(message.contains("3600"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn cost_is_reported_per_turn_and_per_run_from_the_prices() {
    let script = Script::linear(vec![
        vec![
            call("ls", json!({})),
            Item::Usage {
                input_tokens: 1_000_000,
                output_tokens: 0,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
            },
        ],
        vec![
            text("done"),
            Item::Usage {
                input_tokens: 0,
                output_tokens: 1_000_000,
                cache_read_tokens: 2_000_000,
                cache_write_tokens: 0,
            },
        ],
    ]);
    let h = Harness::with(
        Wire::Anthropic,
        script,
        gyre_tools::Registry::builtin(),
        |c| {
            c.pricing = Some(Pricing {
                input: 3.0,
                output: 15.0,
                cache_read: 0.3,
                cache_write: 3.75,
            })
        },
    )
    .await;
    let done = h.run("hello").await;
    let costs: Vec<Option<f64>> = done
        .events
        .iter()
        .filter_map(|e| match e {
            Event::TurnCompleted { cost_usd, .. } => Some(*cost_usd),
            _ => None,
        })
        .collect();
    assert_eq!(costs.len(), 2);
    let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert!(near(costs[0].unwrap(), 3.0), "{costs:?}");
    assert!(near(costs[1].unwrap(), 15.6), "{costs:?}");
    assert!(
        near(done.summary.cost_usd, 18.6),
        "{}",
        done.summary.cost_usd
    );
    assert!(done.events.iter().any(|e| matches!(
        e,
        Event::TurnCompleted {
            stop_reason: StopReason::EndTurn,
            ..
        }
    )));
}
