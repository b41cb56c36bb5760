//! The status line: model, context, tokens, cost, the retry countdown,
//! queued prompts; and what it leaves out when narrow.

use gyre_protocol::{Event, FinishReason};
use gyre_tui::transcript::Transcript;

use crate::support::*;

fn last_line(screen: &str) -> &str {
    screen.lines().last().unwrap()
}

fn busy() -> Transcript {
    let mut t = Transcript::new();
    t.status_mut().agent = "build".into();
    t.status_mut().permission_mode = "ask".into();
    apply_all(
        &mut t,
        &[
            run_started(),
            Event::ContextUsage {
                used_tokens: 84_000,
                usable_tokens: 168_000,
                window: 200_000,
            },
            turn_completed(12_345, 678, 0.0421),
        ],
        0,
        10,
    );
    t
}

#[test]
fn the_retry_countdown_counts_down() {
    let mut t = busy();
    t.apply(
        &Event::RetryScheduled {
            attempt: 2,
            delay_ms: 3000,
            reason: "overloaded (529)".into(),
            message: String::new(),
        },
        at(1000),
    );
    assert!(t.is_animating());
    let screen = screen_text(&t, 80, 24, at(1000));
    insta::assert_snapshot!("status_retry", screen);
    assert!(last_line(&screen).contains("Retrying in 3 s (attempt 2)"));
    assert!(last_line(&screen_text(&t, 80, 24, at(2500))).contains("Retrying in 2 s"));
    assert!(last_line(&screen_text(&t, 80, 24, at(4000))).contains("Retrying now"));
    // The answer arriving ends the countdown.
    t.apply(&text("Hello"), at(4200));
    assert!(!last_line(&screen_text(&t, 80, 24, at(4300))).contains("Retrying"));
}

/// Retries of one outage are one notice, updated in place, naming what
/// failed (the URL, when nothing answered there).
#[test]
fn retries_update_one_notice_that_names_the_url() {
    let mut t = busy();
    let cells = t.len();
    let message = "could not connect to http://127.0.0.1:9/v1/messages (Connection refused); check the base URL and that the server is running";
    for attempt in 1..=3 {
        t.apply(
            &Event::RetryScheduled {
                attempt,
                delay_ms: 250 * u64::from(attempt),
                reason: "unreachable".into(),
                message: message.into(),
            },
            at(1000 * u64::from(attempt)),
        );
    }
    assert_eq!(t.len(), cells + 1, "one notice for the three waits");
    let screen = screen_text(&t, 200, 24, at(3000));
    assert!(
        screen.contains("Request failed: could not connect to http://127.0.0.1:9/v1/messages")
            && screen.contains("Retry 3 in 750 ms."),
        "{screen}"
    );
    assert!(!screen.contains("Retry 1 in"), "{screen}");
}

/// A checkpoint that could not be taken is a warning the user sees.
#[test]
fn a_failed_checkpoint_is_a_warning_notice() {
    let mut t = busy();
    let cells = t.len();
    t.apply(
        &Event::CheckpointFailed {
            call_id: "c1".into(),
            message: "no checkpoint before this change (git failed); a files-rewind cannot restore what it changes".into(),
        },
        at(1000),
    );
    assert_eq!(t.len(), cells + 1);
    let screen = screen_text(&t, 200, 24, at(1000));
    assert!(
        screen.contains("Checkpoint failed: no checkpoint before this change (git failed)"),
        "{screen}"
    );
}

#[test]
fn the_status_shows_model_context_tokens_cost_and_queue() {
    let mut t = busy();
    t.status_mut().queued = 2;
    let line = last_line(&screen_text(&t, 100, 5, at(3000))).to_string();
    insta::assert_snapshot!("status_busy", line);
    t.apply(&run_finished(FinishReason::Completed), at(3100));
    let line = last_line(&screen_text(&t, 100, 5, at(3200))).to_string();
    assert!(line.starts_with(" ● ready"), "{line}");
    // Narrow: the least important parts go first (a `…` says so), the
    // state and the permission mode stay.
    let narrow = last_line(&screen_text(&t, 36, 5, at(3200))).to_string();
    assert_eq!(narrow, " ● ready · … · ask");
    assert_eq!(
        last_line(&screen_text(&t, 44, 5, at(3200))),
        " ● ready · claude-sonnet-4-5 · … · ask"
    );
}

#[test]
fn subagent_turns_count_in_tokens_and_cost_but_not_in_context() {
    let mut t = busy();
    t.apply(
        &Event::Subagent {
            call_id: "t".into(),
            task_id: "k".into(),
            agent: "explore".into(),
            inner: Box::new(Event::ContextUsage {
                used_tokens: 1,
                usable_tokens: 100,
                window: 100,
            }),
        },
        at(50),
    );
    t.apply(
        &Event::Subagent {
            call_id: "t".into(),
            task_id: "k".into(),
            agent: "explore".into(),
            inner: Box::new(turn_completed(1000, 100, 0.01)),
        },
        at(60),
    );
    let status = t.status();
    assert_eq!(status.context.unwrap().percent(), 50);
    assert_eq!(status.usage.input_tokens, 13_345);
    assert!((status.cost_usd - 0.0521).abs() < 1e-9);
}
