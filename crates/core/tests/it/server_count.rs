//! Issue 19: token counts that match the server. A server whose tokenizer
//! counts 35 % more than gyre's first estimate (the mock at 135 % of bytes
//! / 4, refusing any request over its window by that count): gyre learns
//! the server's count from each answer's usage and compacts before the
//! server refuses; no compaction makes the history larger.

use gyre_core::Tokenizer;
use gyre_mock::{Script, When};
use gyre_protocol::{CompactTrigger, Event, FinishReason};

use crate::harness::*;

const WINDOW: u64 = 12_000;
const TURNS: usize = 24;

fn script() -> Script {
    printing_script("data.txt", TURNS, WINDOW)
}

#[tokio::test]
async fn a_server_counting_more_than_the_estimate_gets_a_compaction_before_it_refuses() {
    for wire in WIRES {
        let h = Harness::with(wire, script(), gyre_tools::Registry::builtin(), |config| {
            config.max_output_tokens = 1_024;
            config.context.window = Some(WINDOW);
            config.context.tokenizer = Tokenizer::Calibrated;
        })
        .await;
        h.server.count_tokens_at(135);
        // ~3 KB of dense text per output: ~1,000 of the server's tokens.
        let line = "0123456789 {\"k\": [1, 2, 3]} fox.dog(lazy);\n";
        std::fs::write(h.path("data.txt"), line.repeat(3_000 / line.len())).unwrap();

        let finished = h.run("print data.txt many times").await;
        assert_eq!(
            finished.summary.reason,
            FinishReason::Completed,
            "{wire:?}: {:?}",
            finished.summary.error
        );
        assert_eq!(finished.summary.num_turns as usize, TURNS, "{wire:?}");
        // The server refused nothing: every request fitted by its count.
        let requests = h.server.requests();
        let largest = requests.iter().map(|r| r.input_tokens).max().unwrap();
        assert!(largest <= WINDOW, "{wire:?}: a request of {largest} tokens");
        let boundaries: Vec<_> = finished
            .events
            .iter()
            .filter_map(|e| match e {
                Event::CompactBoundary { boundary, .. } => Some(boundary.clone()),
                _ => None,
            })
            .collect();
        assert!(!boundaries.is_empty(), "{wire:?}: the window forces a step");
        for boundary in &boundaries {
            assert_eq!(
                boundary.trigger,
                CompactTrigger::Auto,
                "{wire:?}: before a refusal"
            );
            assert!(
                boundary.post_tokens < boundary.pre_tokens,
                "{wire:?}: a compaction grew the history: {boundary:?}"
            );
        }
    }
}

/// A summary longer than what it replaces: the automatic compaction is
/// refused and the history stays as it was; no compaction ever grows it.
#[tokio::test]
async fn a_compaction_that_would_grow_the_history_is_not_made() {
    let mut script = script();
    // The summary step answers with ~24 KB: more than the whole window's
    // worth of what it would replace.
    script.steps[0] = step(
        When {
            body_contains: Some(SUMMARY_MARK.into()),
            ..When::default()
        },
        None,
        vec![text(
            &"Summary: every line of data.txt, again. ".repeat(600),
        )],
    );
    let h = Harness::with(
        Wire::Anthropic,
        script,
        gyre_tools::Registry::builtin(),
        |config| {
            config.max_output_tokens = 1_024;
            config.context.window = Some(WINDOW);
            config.context.tokenizer = Tokenizer::Calibrated;
        },
    )
    .await;
    let line = "0123456789 {\"k\": [1, 2, 3]} fox.dog(lazy);\n";
    std::fs::write(h.path("data.txt"), line.repeat(3_000 / line.len())).unwrap();

    let finished = h.run("print data.txt many times").await;
    let refused = finished.events.iter().any(|e| {
        matches!(e, Event::CompactionFailed { message, .. }
            if message.contains("would not make the conversation smaller"))
    });
    assert!(refused, "{:?}", finished.summary);
    for event in &finished.events {
        if let Event::CompactBoundary { boundary, .. } = event {
            assert!(
                boundary.post_tokens < boundary.pre_tokens,
                "a compaction grew the history: {boundary:?}"
            );
        }
    }
    // What was sent after the refusal still starts with the prompt: the
    // history was not replaced.
    let bodies = h.bodies();
    let first_after = bodies
        .iter()
        .filter(|b| !b.to_string().contains(SUMMARY_MARK))
        .nth(1)
        .unwrap();
    assert!(
        first_after["messages"][0]
            .to_string()
            .contains("print data.txt many times")
    );
}

/// A first prompt whose estimate is over the budget (a window smaller than
/// the system prompt and tools) starts no compaction: there is nothing to
/// summarise yet, so the request goes as it is.
#[tokio::test]
async fn no_compaction_is_started_before_the_first_answer() {
    let h = Harness::with(
        Wire::Anthropic,
        printing_script("data.txt", 2, 100_000),
        gyre_tools::Registry::builtin(),
        |config| {
            config.max_output_tokens = 256;
            config.context.window = Some(1_024);
        },
    )
    .await;
    std::fs::write(h.path("data.txt"), "one line\n").unwrap();
    let finished = h.run("print data.txt").await;
    let requests = h.server.requests();
    assert!(!requests.is_empty(), "{:?}", finished.summary);
    assert!(
        !requests[0].body.to_string().contains(SUMMARY_MARK),
        "a summary was asked for before the first answer"
    );
    assert!(
        requests[0].body.to_string().contains("print data.txt"),
        "the first request is the prompt's"
    );
}
