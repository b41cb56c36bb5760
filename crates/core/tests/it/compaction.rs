//! Compaction after an overflow, a summary request that does not fit, a
//! manual compaction, and answers cut off by the output limit.

use gyre_core::{ManualCompaction, RunRequest, Session};
use gyre_mock::{HttpReply, Item, Reply, Script, Step, StreamReply, When};
use gyre_protocol::{CompactTrigger, Event, FinishReason, Origin, RunErrorKind};
use serde_json::json;

use crate::harness::*;

fn answer(when: When, times: Option<u32>, items: Vec<Item>) -> Step {
    Step {
        when,
        times,
        reply: Reply::Stream(StreamReply {
            items,
            ..StreamReply::default()
        }),
    }
}

fn summary_requests() -> When {
    When {
        body_contains: Some("<transcript>".into()),
        ..When::default()
    }
}

fn summaries(text: &str) -> Step {
    answer(summary_requests(), None, vec![Item::Text(text.into())])
}

fn boundaries(events: &[Event]) -> Vec<gyre_protocol::CompactBoundary> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::CompactBoundary { boundary, .. } => Some(boundary.clone()),
            _ => None,
        })
        .collect()
}

fn is_summary(body: &serde_json::Value) -> bool {
    body.to_string().contains("<transcript>")
}

/// The second request is too large for the mock's window (which gyre does
/// not know): the provider's real overflow error comes back, gyre compacts
/// once (shortening the summary request from the middle, since it holds the
/// same big output) and the turn is asked again, successfully.
#[tokio::test]
async fn an_overflow_compacts_once_and_the_turn_succeeds() {
    for wire in WIRES {
        let script = Script::new(vec![
            summaries("Summary: the file was printed; it holds digits."),
            answer(
                When::default(),
                Some(1),
                vec![
                    text("Printing."),
                    call("bash", json!({"command": "cat big.txt"})),
                ],
            ),
            answer(When::default(), None, vec![text("It holds digits.")]),
        ])
        .with_context_window(6_000);
        let h = Harness::new(wire, script).await;
        std::fs::write(h.path("big.txt"), "0123456789\n".repeat(3_000)).unwrap();
        let finished = h.run("what is in big.txt?").await;
        let summary = &finished.summary;
        assert_eq!(
            summary.reason,
            FinishReason::Completed,
            "{wire:?}: {:?}",
            summary.error
        );
        assert_eq!(summary.final_text, "It holds digits.");
        assert_eq!(
            summary.num_turns, 2,
            "{wire:?}: the retried turn counts once"
        );

        let found = boundaries(&finished.events);
        assert_eq!(found.len(), 1, "{wire:?}: exactly one compaction");
        assert_eq!(found[0].trigger, CompactTrigger::Overflow);
        let requests = h.server.requests();
        let overflowed = requests.iter().filter(|r| r.input_tokens > 6_000).count();
        assert!(overflowed >= 1, "{wire:?}");
        // The summary that fitted left the big output out, from the middle.
        let fitted = requests
            .iter()
            .find(|r| is_summary(&r.body) && r.input_tokens <= 6_000)
            .unwrap();
        assert!(
            fitted.body.to_string().contains("output omitted to fit"),
            "{wire:?}"
        );
        assert!(
            fitted.body.to_string().contains("what is in big.txt?"),
            "{wire:?}"
        );
        // The last request starts from the summary, marked as gyre's.
        let last = requests.last().unwrap().body.to_string();
        assert!(last.contains("Summary: the file was printed"), "{wire:?}");
        assert!(
            last.contains("compacted to fit the context window"),
            "{wire:?}"
        );
        let stored = h.stored(&finished.session).await;
        let summaries = stored
            .iter()
            .filter(|m| m.compact_boundary().is_some())
            .count();
        assert_eq!(summaries, 1);
        // Nothing was lost from the store: the whole output is still there.
        assert!(
            stored
                .iter()
                .flat_map(|m| m.tool_results())
                .any(|r| r.text_content().len() >= 33_000)
        );
    }
}

fn overflow_reply(wire: Wire) -> Reply {
    let body = match wire {
        Wire::Anthropic => json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "prompt is too long: 250000 tokens > 200000 maximum"}}),
        _ => {
            json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 250000 tokens.",
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
        }
    };
    Reply::Http(HttpReply {
        status: 400,
        body: Some(body.to_string()),
        ..HttpReply::default()
    })
}

/// The provider says the request overflows, and says it of every summary
/// request too: gyre shortens the summary request from the middle a bounded
/// number of times, then ends the run with a clear error. The session is
/// unchanged and a later run in it works.
#[tokio::test]
async fn an_overflowing_summary_request_fails_clearly_and_the_session_survives() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let script = Script::new(vec![
            Step {
                when: summary_requests(),
                times: None,
                reply: overflow_reply(wire),
            },
            answer(
                When::default(),
                Some(2),
                vec![call("bash", json!({"command": "seq 1 2000"}))],
            ),
            Step {
                when: When::default(),
                times: Some(1),
                reply: overflow_reply(wire),
            },
        ]);
        let h = Harness::new(wire, script).await;
        let finished = h.run("count").await;
        let summary = &finished.summary;
        assert_eq!(summary.reason, FinishReason::Failed, "{wire:?}");
        let error = summary.error.as_ref().unwrap();
        assert_eq!(error.kind, RunErrorKind::ContextOverflow);
        assert!(error.message.contains("did not fit"), "{}", error.message);
        assert!(
            error.message.contains("start a new session"),
            "{}",
            error.message
        );
        let failed = finished
            .events
            .iter()
            .filter(|e| matches!(e, Event::CompactionFailed { .. }))
            .count();
        assert_eq!(failed, 1);
        assert!(boundaries(&finished.events).is_empty());

        // Shortened from the middle, each try smaller than the one before.
        let sizes: Vec<usize> = h
            .bodies()
            .iter()
            .filter(|b| is_summary(b))
            .map(|b| b.to_string().len())
            .collect();
        assert!((2..=4).contains(&sizes.len()), "{wire:?}: {sizes:?}");
        assert!(sizes.windows(2).all(|w| w[1] < w[0]), "{sizes:?}");
        let last_try = h.bodies().into_iter().rfind(is_summary).unwrap();
        assert!(
            last_try
                .to_string()
                .contains("omitted to fit the summary request")
        );

        // The session is usable: the history is as it was, and goes on.
        let stored = h.stored(&finished.session).await;
        assert!(stored.iter().all(|m| m.compact_boundary().is_none()));
        h.server.set_script(Script::new(vec![answer(
            When::default(),
            None,
            vec![text("back")],
        )]));
        let again = h
            .continue_with(finished.session, RunRequest::prompt("go on"))
            .await;
        assert_eq!(again.summary.reason, FinishReason::Completed, "{wire:?}");
        assert_eq!(again.summary.final_text, "back");
    }
}

/// `/compact` (a run that only compacts) and `--compact-first`.
#[tokio::test]
async fn manual_compaction_keeps_recent_turns_and_takes_instructions() {
    let script = Script::new(vec![
        summaries("Summary: two files were listed."),
        answer(When::default(), Some(2), vec![call("ls", json!({}))]),
        answer(When::default(), None, vec![text("ok")]),
    ]);
    let h = Harness::new(Wire::Anthropic, script).await;
    std::fs::write(h.path("a.txt"), "a").unwrap();
    let first = h.run("list the files").await;
    assert_eq!(first.summary.reason, FinishReason::Completed);
    let before = h.server.requests().len();

    let only = RunRequest {
        prompt: None,
        images: Vec::new(),
        compact: Some(ManualCompaction {
            instructions: Some("stress the file names".into()),
        }),
    };
    let compacted = h.continue_with(first.session, only).await;
    assert_eq!(compacted.summary.reason, FinishReason::Completed);
    assert_eq!(
        compacted.summary.num_turns, 0,
        "no model turn, only the summary"
    );
    let found = boundaries(&compacted.events);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].trigger, CompactTrigger::Manual);
    let requests = h.server.requests();
    assert_eq!(requests.len(), before + 1);
    let asked = requests.last().unwrap().body.to_string();
    assert!(asked.contains("The user adds: stress the file names"));
    assert!(
        !asked.contains("\"tools\""),
        "no tools are offered to the summariser"
    );

    // The visible history is the summary, then the recent turns verbatim;
    // loading the session from the store gives the same.
    let history = &compacted.session.history;
    assert!(matches!(history[0].origin, Origin::Summary(_)));
    assert!(
        history[0]
            .text()
            .contains("Summary: two files were listed.")
    );
    let loaded = Session::load(h.store.as_ref(), compacted.session.id())
        .await
        .unwrap();
    assert_eq!(&loaded.history, history);

    // The next prompt goes after it.
    let next = h.continue_with(loaded, RunRequest::prompt("thanks")).await;
    assert_eq!(next.summary.final_text, "ok");
    let last = h.bodies().pop().unwrap();
    insta::with_settings!({filters => vec![
        (r"/tmp/[.A-Za-z0-9_/-]+", "[TMP]"),
        (r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", "[ID]"),
        (r"toolu_[0-9a-z_]+", "[CALL]"),
    ]}, {
        insta::assert_json_snapshot!("first_request_after_a_compaction", last);
    });
}

/// An answer cut off by the output limit in the middle of a tool call's
/// arguments is continued: the cut call is dropped, the model is asked to
/// go on, sends the call whole, and it runs.
#[tokio::test]
async fn max_tokens_in_a_tool_call_is_continued_and_the_call_completes() {
    for wire in WIRES {
        // Chat Completions says `length`; the mock maps `max_tokens` to the
        // other APIs' own words.
        let cut_off = if wire == Wire::OpenAi {
            "length"
        } else {
            "max_tokens"
        };
        let cut = Item::ToolCall {
            id: None,
            name: "write".into(),
            arguments: json!("{\"file_path\": \"out.txt\", \"content\": \"hel"),
            fragments: Some(2),
        };
        let script = Script::new(vec![
            answer(
                When {
                    last_message_contains: Some("cut off at the output token limit".into()),
                    ..When::default()
                },
                Some(1),
                vec![call(
                    "write",
                    json!({"file_path": "out.txt", "content": "hello"}),
                )],
            ),
            answer(
                When::default(),
                Some(1),
                vec![text("Writing it."), cut, Item::Stop(cut_off.into())],
            ),
            answer(When::default(), None, vec![text("written")]),
        ]);
        let h = Harness::new(wire, script).await;
        let finished = h.run("write hello to out.txt").await;
        assert_eq!(
            finished.summary.reason,
            FinishReason::Completed,
            "{wire:?}: {:?}",
            finished.summary.error
        );
        assert_eq!(
            std::fs::read_to_string(h.path("out.txt")).unwrap(),
            "hello",
            "{wire:?}"
        );
        assert_eq!(finished.summary.num_turns, 3);
        let stored = h.stored(&finished.session).await;
        let notices = stored
            .iter()
            .filter(|m| m.text().contains("cut off at the output token limit"))
            .count();
        assert_eq!(notices, 1, "{wire:?}");
        if wire == Wire::Gemini {
            // Gemini sends calls whole, never cut: the mock's half call
            // arrives as a call with bad arguments, refused, and the notice
            // goes with its result.
            continue;
        }
        // The cut call never ran and never reached the store; the notice is
        // a message of gyre's own.
        assert_eq!(
            stored.iter().flat_map(|m| m.tool_calls()).count(),
            1,
            "{wire:?}"
        );
        assert_eq!(
            stored.iter().filter(|m| m.origin == Origin::Gyre).count(),
            1
        );
    }
}

/// Cut off again and again: continued three times, then the run says why.
#[tokio::test]
async fn max_tokens_recovery_is_bounded() {
    let script = Script::new(vec![answer(
        When::default(),
        None,
        vec![text("A very long"), Item::Stop("max_tokens".into())],
    )]);
    let h = Harness::new(Wire::Anthropic, script).await;
    let finished = h.run("write an essay").await;
    assert_eq!(finished.summary.reason, FinishReason::Failed);
    assert_eq!(finished.summary.num_turns, 4);
    let message = &finished.summary.error.as_ref().unwrap().message;
    assert!(
        message.contains("output limit") && message.contains("4 times"),
        "{message}"
    );
}

/// A stop because the window had no room left for the answer (Anthropic's
/// `model_context_window_exceeded`): compact first, then ask to go on.
#[tokio::test]
async fn an_answer_cut_by_a_full_window_compacts_then_continues() {
    let script = Script::new(vec![
        summaries("Summary: the listing was long."),
        answer(When::default(), Some(1), vec![call("ls", json!({}))]),
        answer(
            When::default(),
            Some(1),
            vec![
                text("The files are"),
                Item::Stop("model_context_window_exceeded".into()),
            ],
        ),
        answer(When::default(), None, vec![text("a.txt only.")]),
    ]);
    let h = Harness::new(Wire::Anthropic, script).await;
    std::fs::write(h.path("a.txt"), "a").unwrap();
    let finished = h.run("list the files").await;
    assert_eq!(
        finished.summary.reason,
        FinishReason::Completed,
        "{:?}",
        finished.summary.error
    );
    assert_eq!(finished.summary.final_text, "a.txt only.");
    let found = boundaries(&finished.events);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].trigger, CompactTrigger::Overflow);
    // The request after the compaction starts with the summary and ends
    // with the request to go on.
    let last = h.bodies().pop().unwrap();
    let messages = last["messages"].as_array().unwrap();
    assert!(
        messages[0]
            .to_string()
            .contains("Summary: the listing was long.")
    );
    assert!(
        messages
            .last()
            .unwrap()
            .to_string()
            .contains("cut off at the output token limit")
    );
}
