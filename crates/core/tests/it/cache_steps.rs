//! Issue 20: under sustained pressure the prompt cache survives pruning and
//! compaction. A 60-turn session, every turn a `bash` that prints ~8 KB, in
//! a 16,000-token window (max output 1,024), on each wire API, against the
//! mock with its prompt cache modelled: most requests are pure appends of
//! the one before, the steps that change the prefix are few, and the cached
//! summary request is served from the cache. The mock caches as Anthropic
//! documents it (entries only at breakpoints, a 20-block lookback), so the
//! breakpoints gyre places are tested too: a turn of many parallel calls,
//! and a prune step that reads up to its change point.

use gyre_core::Tokenizer;
use gyre_mock::Script;
use gyre_protocol::{Event, FinishReason};
use serde_json::Value;

use crate::harness::*;

const WINDOW: u64 = 16_000;
const TURNS: usize = 60;

/// A completed session of `turns` turns, each printing an ~8 KB
/// `log.txt` (140 lines), in `window` (max output 1,024), against the mock
/// with its prompt cache modelled.
async fn printing_session(
    wire: Wire,
    turns: usize,
    window: u64,
    configure: impl FnOnce(&mut gyre_core::AgentConfig),
) -> (Harness, Finished) {
    let script = printing_script("log.txt", turns, window);
    let h = Harness::with(wire, script, gyre_tools::Registry::builtin(), |config| {
        config.max_output_tokens = 1_024;
        config.context.window = Some(window);
        configure(config);
    })
    .await;
    h.server.enable_prompt_cache();
    let line = "0123456789 the quick brown fox jumps over the lazy dog 0123\n";
    std::fs::write(h.path("log.txt"), line.repeat(8_000 / line.len())).unwrap();
    let finished = h.run("print log.txt many times").await;
    assert_eq!(
        finished.summary.reason,
        FinishReason::Completed,
        "{wire:?}: {:?}",
        finished.summary.error
    );
    (h, finished)
}

/// The parts of a request body that make its cached prefix, per wire:
/// (system and tools, messages), without Anthropic's cache markers.
fn prefix_parts(wire: Wire, body: &Value) -> (Value, Vec<Value>) {
    let (fixed, list): (&[&str], &str) = match wire {
        Wire::Anthropic => (&["system", "tools"], "messages"),
        Wire::OpenAi => (&["tools"], "messages"),
        Wire::OpenAiResponses => (&["instructions", "tools"], "input"),
        Wire::Gemini => (&["systemInstruction", "tools"], "contents"),
    };
    let fixed: Value = fixed
        .iter()
        .map(|k| gyre_mock::without_cache_control(&body[*k]))
        .collect();
    let items = body[list]
        .as_array()
        .map(|items| items.iter().map(gyre_mock::without_cache_control).collect())
        .unwrap_or_default();
    (fixed, items)
}

fn is_append(wire: Wire, old: &Value, new: &Value) -> bool {
    let (old_fixed, old) = prefix_parts(wire, old);
    let (new_fixed, new) = prefix_parts(wire, new);
    old_fixed == new_fixed && new.len() > old.len() && new[..old.len()] == old[..]
}

#[tokio::test]
async fn few_deep_steps_keep_most_requests_pure_appends_on_every_wire() {
    for wire in WIRES {
        let (h, finished) = printing_session(wire, TURNS, WINDOW, |config| {
            config.context.tokenizer = Tokenizer::Calibrated;
        })
        .await;
        assert_eq!(finished.summary.num_turns as usize, TURNS, "{wire:?}");
        let requests = h.server.requests();
        assert!(
            requests.iter().all(|r| r.input_tokens <= WINDOW),
            "{wire:?}"
        );
        let is_summary = |r: &gyre_mock::RecordedRequest| r.body.to_string().contains(SUMMARY_MARK);
        let main = requests.iter().filter(|r| !is_summary(r)).count();
        assert_eq!(main, TURNS, "{wire:?}: one request per turn");

        // Which main requests came right after a compaction: the turns
        // whose start follows a compact boundary.
        let mut after_compaction = [false; TURNS];
        let (mut turn, mut compacted, mut steps) = (0usize, false, 0usize);
        for event in &finished.events {
            match event {
                Event::CompactBoundary { .. } => {
                    compacted = true;
                    steps += 1;
                }
                Event::ContextPruned { .. } => steps += 1,
                Event::TurnStarted { .. } => {
                    if turn < TURNS {
                        after_compaction[turn] = compacted;
                    }
                    compacted = false;
                    turn += 1;
                }
                _ => {}
            }
        }
        // Every request (a summary request too) after the first, but those
        // right after a compaction: is it a pure append of the one before?
        let (mut followers, mut appends, mut main_index) = (0usize, 0usize, 0usize);
        for (index, request) in requests.iter().enumerate() {
            let first_after_compaction = !is_summary(request) && after_compaction[main_index];
            if !is_summary(request) {
                main_index += 1;
            }
            if index == 0 || first_after_compaction {
                continue;
            }
            followers += 1;
            if is_append(wire, &requests[index - 1].body, &request.body) {
                appends += 1;
            }
        }
        let share = appends as f64 / followers as f64;
        eprintln!(
            "{wire:?}: {} requests, {steps} steps, {appends} of {followers} followers pure appends ({share:.2})",
            requests.len(),
        );
        assert!(steps > 0, "{wire:?}: the window forces steps");
        assert!(share >= 0.8, "{wire:?}: {appends}/{followers} appends");
        assert!(
            steps * 4 <= requests.len(),
            "{wire:?}: {steps} steps for {} requests",
            requests.len()
        );

        // The cached summary requests were served from the cache.
        let summaries: Vec<_> = requests.iter().filter(|r| is_summary(r)).collect();
        assert!(!summaries.is_empty(), "{wire:?}: compaction is needed here");
        let read: u64 = summaries.iter().map(|r| r.cache_read_tokens).sum();
        let input: u64 = summaries.iter().map(|r| r.input_tokens).sum();
        assert!(
            read * 2 >= input,
            "{wire:?}: summaries read {read} of {input} from the cache"
        );
    }
}

/// A turn that adds more blocks than Anthropic looks back for an entry (an
/// answer of 12 parallel calls and their 12 results) still reads the
/// previous request's prompt from the cache: the message that request ended
/// with gets its breakpoint back.
#[tokio::test]
async fn a_turn_of_many_parallel_calls_still_reads_the_cached_prompt() {
    let calls = |turn: usize| -> Vec<gyre_mock::Item> {
        std::iter::once(text("Reading them all at once."))
            .chain((0..12).map(|i| {
                call(
                    "read",
                    serde_json::json!({"file_path": format!("note{turn}-{i}.txt")}),
                )
            }))
            .collect()
    };
    let script = Script::linear(vec![calls(0), calls(1), vec![text("done")]]);
    let h = Harness::new(Wire::Anthropic, script).await;
    h.server.enable_prompt_cache();
    for turn in 0..2 {
        for i in 0..12 {
            std::fs::write(h.path(&format!("note{turn}-{i}.txt")), "a short note\n").unwrap();
        }
    }
    let prompt = format!("read the 24 notes. {}", "Context. ".repeat(500));
    let finished = h.run(&prompt).await;
    assert_eq!(finished.summary.reason, FinishReason::Completed);
    let requests = h.server.requests();
    assert_eq!(requests.len(), 3);
    for pair in requests.windows(2) {
        assert!(
            pair[1].cache_read_tokens + 16 >= pair[0].input_tokens,
            "read {} of the previous request's {}",
            pair[1].cache_read_tokens,
            pair[0].input_tokens
        );
    }
}

/// A prune step on Anthropic reads everything before its change point:
/// the requests before it carried a breakpoint there (`cache_point`), and
/// Anthropic reads only entries a breakpoint wrote. With pruning alone (no
/// compaction) in a 24k window, every request after a prune reads more than
/// the system prompt and the tools.
#[tokio::test]
async fn a_prune_step_reads_the_prompt_up_to_its_change_point() {
    const TURNS: usize = 30;
    let (h, finished) = printing_session(Wire::Anthropic, TURNS, 24_000, |config| {
        config.context.compaction = gyre_core::Compaction::Off;
    })
    .await;
    // Which requests followed a prune step.
    let (mut request, mut pruned_before) = (0usize, Vec::new());
    for event in &finished.events {
        match event {
            Event::ContextPruned { .. } => pruned_before.push(request),
            Event::TurnStarted { .. } => request += 1,
            _ => {}
        }
    }
    let requests = h.server.requests();
    assert!(pruned_before.len() >= 3, "steps: {pruned_before:?}");
    // The first step changes the first output: it reads the system prompt,
    // the tools and the user's prompt. Each later one reads those and the
    // markers of the steps before (without the breakpoint at the change
    // point it read the same ~2.6k every time).
    let reads: Vec<u64> = pruned_before
        .iter()
        .map(|&i| requests[i].cache_read_tokens)
        .collect();
    assert!(reads[0] + 64 >= requests[0].input_tokens, "{reads:?}");
    for pair in reads.windows(2) {
        assert!(
            pair[1] >= pair[0] + 400,
            "reads after each prune: {reads:?}"
        );
    }
}
