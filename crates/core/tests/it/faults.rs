//! The loop over the real HTTP path when the wire misbehaves: rate limits in
//! every form, overload, resets, stalls, truncated and malformed streams.
//! Whatever happens, retries are bounded and take the delay asked for, and
//! the stored transcript is exactly the session's history, with nothing
//! duplicated. (Recorded answers replayed at several chunkings: `replay.rs`,
//! with the helpers here.)

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gyre_core::{Agent, AgentConfig, PermissionMode};
use gyre_llm::{
    AnthropicClient, ClientConfig, GeminiClient, ModelClient, OpenAiChatClient,
    OpenAiResponsesClient,
};
use gyre_mock::{
    At, End, HttpReply, Item, MockServer, Reply, Script, Stall, Step, StreamReply, When,
};
use gyre_protocol::{Event, FinishReason, Message, Role};
use gyre_store_sql::SqliteStore;
use gyre_tools::{Registry, Workspace};
use serde_json::json;
use tempfile::TempDir;

use crate::harness::*;

/// The client's first-byte and idle timeouts in the stall tests.
const SHORT_TIMEOUT: Duration = Duration::from_millis(300);
/// A stall well past [`SHORT_TIMEOUT`].
const STALL_MS: u64 = 3_000;

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Timeouts {
    Default,
    Short,
}

/// A [`Harness`] whose client has the given timeouts.
pub(crate) async fn rig(wire: Wire, script: Script, timeouts: Timeouts) -> Harness {
    let workspace = TempDir::new().unwrap();
    let home = TempDir::new().unwrap();
    let store = Arc::new(
        SqliteStore::open(&home.path().join("sessions.db"))
            .await
            .unwrap(),
    );
    let server = MockServer::start(script).await.unwrap();
    let base_url = match wire {
        Wire::Anthropic => server.anthropic_base_url(),
        Wire::OpenAi | Wire::OpenAiResponses => server.openai_base_url(),
        Wire::Gemini => server.gemini_base_url(),
    };
    let mut client_config = ClientConfig::new(base_url, Some("test-key".into()));
    if timeouts == Timeouts::Short {
        client_config.first_byte_timeout = SHORT_TIMEOUT;
        client_config.idle_timeout = SHORT_TIMEOUT;
    }
    let client: Arc<dyn ModelClient> = match wire {
        Wire::Anthropic => Arc::new(AnthropicClient::new(client_config)),
        Wire::OpenAi => Arc::new(OpenAiChatClient::new(client_config)),
        Wire::OpenAiResponses => Arc::new(OpenAiResponsesClient::new(client_config)),
        Wire::Gemini => Arc::new(GeminiClient::new(client_config)),
    };
    let mut config = AgentConfig::new("mock-model", "You are a test agent.");
    config.permissions.mode = PermissionMode::BypassPermissions;
    config.retry = fast_retries();
    let agent = Agent::new(
        client.clone(),
        store.clone(),
        Registry::builtin(),
        Arc::new(Workspace::new(workspace.path()).unwrap()),
        config,
    );
    Harness {
        workspace,
        _home: home,
        store,
        server,
        agent,
        client,
    }
}

/// `reply` once for the first request, then `then` for every request.
pub(crate) fn first_then(reply: Reply, then: Vec<Item>) -> Script {
    Script {
        context_window: None,
        steps: vec![
            Step {
                when: When {
                    turn: Some(0),
                    ..When::default()
                },
                times: Some(1),
                reply,
            },
            Step {
                reply: Reply::Stream(StreamReply {
                    items: then,
                    ..StreamReply::default()
                }),
                ..Step::default()
            },
        ],
    }
}

fn stream(items: Vec<Item>, tweak: impl FnOnce(&mut StreamReply)) -> Reply {
    let mut reply = StreamReply {
        items,
        ..StreamReply::default()
    };
    tweak(&mut reply);
    Reply::Stream(reply)
}

fn http(status: u16, headers: &[(&str, &str)], body: Option<String>) -> Reply {
    Reply::Http(HttpReply {
        status,
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        body,
        ..HttpReply::default()
    })
}

/// A text long enough to span several events on every wire.
const LONG_TEXT: &str = "The first part of an answer that the network is about to break.";

pub(crate) fn retries(events: &[Event]) -> Vec<(u64, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::RetryScheduled {
                delay_ms, reason, ..
            } => Some((*delay_ms, reason.clone())),
            _ => None,
        })
        .collect()
}

/// The stored transcript is the session's history, message for message,
/// with no message stored twice and no answer's text repeated.
pub(crate) async fn assert_clean_transcript(h: &Harness, done: &Finished, context: &str) {
    let stored = h.stored(&done.session).await;
    let history: Vec<Message> = done.session.history.iter().map(|m| (**m).clone()).collect();
    assert_eq!(
        stored, history,
        "{context}: the store and the history agree"
    );
    let ids: BTreeSet<&str> = stored.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids.len(), stored.len(), "{context}: a message stored twice");
    let answers: Vec<String> = stored
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.text())
        .filter(|t| !t.is_empty())
        .collect();
    let unique: BTreeSet<&String> = answers.iter().collect();
    assert_eq!(
        unique.len(),
        answers.len(),
        "{context}: an answer stored twice: {answers:?}"
    );
    for pair in stored.windows(2) {
        assert_ne!(pair[0].role, pair[1].role, "{context}: {stored:#?}");
    }
}

/// A transient fault on the first request: retried once for `reason`, then
/// the second answer is the only one stored.
async fn assert_recovered(wire: Wire, reply: Reply, timeouts: Timeouts, reasons: &[&str]) {
    let h = rig(wire, first_then(reply, vec![text("recovered")]), timeouts).await;
    let done = h.run("hello").await;
    let context = format!("{wire:?}");
    assert_eq!(done.summary.reason, FinishReason::Completed, "{context}");
    assert_eq!(done.summary.final_text, "recovered", "{context}");
    let seen = retries(&done.events);
    assert_eq!(seen.len(), 1, "{context}: {seen:?}");
    assert!(reasons.contains(&seen[0].1.as_str()), "{context}: {seen:?}");
    assert_eq!(h.bodies().len(), 2, "{context}");
    let stored = h.stored(&done.session).await;
    assert_eq!(
        stored.len(),
        2,
        "{context}: one assistant message: {stored:#?}"
    );
    assert_eq!(stored[1].text(), "recovered", "{context}");
    assert_clean_transcript(&h, &done, &context).await;
}

// ---------------------------------------------------------------------------
// Recorded responses at several chunkings.

#[tokio::test]
async fn retry_after_ms_is_honoured_to_the_millisecond() {
    for wire in WIRES {
        let reply = http(429, &[("retry-after-ms", "50")], None);
        let h = rig(wire, first_then(reply, vec![text("ok")]), Timeouts::Default).await;
        let done = h.run("hello").await;
        assert_eq!(done.summary.reason, FinishReason::Completed, "{wire:?}");
        assert_eq!(
            retries(&done.events),
            vec![(50, "rate_limit".to_owned())],
            "{wire:?}"
        );
        assert_clean_transcript(&h, &done, &format!("{wire:?}")).await;
    }
}

/// An HTTP date (RFC 9110 IMF-fixdate) for a time.
fn http_date(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).unwrap().as_secs();
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

#[test]
fn http_dates_are_formatted_as_rfc_9110_says() {
    let time = UNIX_EPOCH + Duration::from_secs(784_111_777);
    assert_eq!(http_date(time), "Sun, 06 Nov 1994 08:49:37 GMT");
    let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
    assert_eq!(http_date(leap), "Tue, 29 Feb 2000 00:00:00 GMT");
}

#[tokio::test]
async fn retry_after_as_an_http_date_waits_until_then() {
    let date = http_date(SystemTime::now() + Duration::from_secs(2));
    let reply = http(429, &[("retry-after", date.as_str())], None);
    let h = rig(
        Wire::Anthropic,
        first_then(reply, vec![text("ok")]),
        Timeouts::Default,
    )
    .await;
    let started = Instant::now();
    let done = h.run("hello").await;
    assert_eq!(done.summary.reason, FinishReason::Completed);
    let seen = retries(&done.events);
    assert_eq!(seen.len(), 1, "{seen:?}");
    let (delay, reason) = &seen[0];
    assert_eq!(reason, "rate_limit");
    // Two seconds ahead, to the second: the wait is up to 3 s, less the
    // time the request took on a busy machine; far above the backoff's
    // 40 ms ceiling either way, so the date was honoured.
    assert!(
        (200..=3_000).contains(delay),
        "asked 2 s ({date}), waited {delay} ms"
    );
    assert!(started.elapsed() >= Duration::from_millis(*delay));
    assert_clean_transcript(&h, &done, "http date").await;
}

#[tokio::test]
async fn gemini_retry_info_sets_the_delay() {
    let body = json!([{"error": {
        "code": 429,
        "message": "Resource has been exhausted (e.g. check quota).",
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.Help", "links": []},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"},
        ],
    }}]);
    let reply = http(429, &[], Some(body.to_string()));
    let h = rig(
        Wire::Gemini,
        first_then(reply, vec![text("ok")]),
        Timeouts::Default,
    )
    .await;
    let done = h.run("hello").await;
    assert_eq!(done.summary.reason, FinishReason::Completed);
    assert_eq!(
        retries(&done.events),
        vec![(1_000, "rate_limit".to_owned())]
    );
    assert_clean_transcript(&h, &done, "RetryInfo").await;
}

#[tokio::test]
async fn an_overloaded_anthropic_is_retried_as_overloaded() {
    let body =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let reply = http(529, &[], Some(body.to_string()));
    assert_recovered(Wire::Anthropic, reply, Timeouts::Default, &["overloaded"]).await;
}

// ---------------------------------------------------------------------------
// Broken and stalled streams.

#[tokio::test]
async fn a_connection_reset_mid_stream_is_retried_and_stored_once() {
    for wire in WIRES {
        let reply = stream(vec![text(LONG_TEXT)], |r| {
            r.end = End::ResetAfter(At::Events(3));
        });
        assert_recovered(wire, reply, Timeouts::Default, &["network"]).await;
    }
}

#[tokio::test]
async fn a_stall_before_the_headers_times_out_and_is_retried() {
    for wire in WIRES {
        let reply = stream(vec![text(LONG_TEXT)], |r| {
            r.stall_before_headers_ms = STALL_MS;
        });
        let started = Instant::now();
        assert_recovered(wire, reply, Timeouts::Short, &["network"]).await;
        assert!(
            started.elapsed() < Duration::from_millis(STALL_MS),
            "{wire:?}: gave up before the stall ended"
        );
    }
}

#[tokio::test]
async fn a_stall_mid_stream_times_out_and_is_retried() {
    for wire in WIRES {
        let reply = stream(vec![text(LONG_TEXT)], |r| {
            r.stall = Some(Stall {
                after: At::Events(2),
                ms: STALL_MS,
            });
        });
        let started = Instant::now();
        assert_recovered(wire, reply, Timeouts::Short, &["network"]).await;
        assert!(
            started.elapsed() < Duration::from_millis(STALL_MS),
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn a_truncated_stream_is_incomplete_and_retried() {
    for wire in WIRES {
        let reply = stream(vec![text(LONG_TEXT)], |r| {
            r.end = End::TruncateAfter(At::Events(3));
        });
        assert_recovered(wire, reply, Timeouts::Default, &["stream"]).await;
    }
}

#[tokio::test]
async fn a_malformed_event_is_a_stream_error_where_the_decoder_reads_it() {
    let malformed = |frame: &str| {
        stream(
            vec![
                text("Hello there, "),
                Item::RawEvent(frame.to_owned()),
                text("and goodbye."),
            ],
            |_| {},
        )
    };
    // Chat Completions and Gemini read every `data:` line as a chunk: broken
    // JSON breaks the stream, which is asked for again.
    for wire in [Wire::OpenAi, Wire::Gemini] {
        assert_recovered(
            wire,
            malformed("data: {oops\n\n"),
            Timeouts::Default,
            &["stream"],
        )
        .await;
    }
    // So does a named event Anthropic knows.
    let named = malformed("event: content_block_delta\ndata: {oops\n\n");
    assert_recovered(Wire::Anthropic, named, Timeouts::Default, &["stream"]).await;

    // Anthropic and Responses name their events: an unnamed one with
    // unreadable data is not theirs, and is skipped.
    for wire in [Wire::Anthropic, Wire::OpenAiResponses] {
        let h = rig(
            wire,
            first_then(malformed("data: {oops\n\n"), vec![text("second")]),
            Timeouts::Default,
        )
        .await;
        let done = h.run("hello").await;
        assert_eq!(done.summary.reason, FinishReason::Completed, "{wire:?}");
        assert!(retries(&done.events).is_empty(), "{wire:?}");
        assert_eq!(
            done.summary.final_text, "Hello there, and goodbye.",
            "{wire:?}"
        );
        assert_clean_transcript(&h, &done, &format!("{wire:?}")).await;
    }
}

#[tokio::test]
async fn when_retries_run_out_the_run_fails_after_max_retries_plus_one_requests() {
    let always = |reply: Reply| Script {
        context_window: None,
        steps: vec![Step {
            reply,
            ..Step::default()
        }],
    };
    let faults = [
        (
            Wire::Gemini,
            stream(vec![text(LONG_TEXT)], |r| {
                r.end = End::ResetAfter(At::Events(2));
            }),
        ),
        (
            Wire::OpenAiResponses,
            stream(vec![text(LONG_TEXT)], |r| {
                r.end = End::TruncateAfter(At::Events(2));
            }),
        ),
        (
            Wire::Anthropic,
            stream(vec![text(LONG_TEXT)], |r| {
                r.stall_before_headers_ms = STALL_MS
            }),
        ),
    ];
    for (wire, reply) in faults {
        let h = rig(wire, always(reply), Timeouts::Short).await;
        let done = h.run("hello").await;
        assert_eq!(done.summary.reason, FinishReason::Failed, "{wire:?}");
        let policy = fast_retries();
        assert_eq!(
            h.bodies().len(),
            policy.max_retries as usize + 1,
            "{wire:?}"
        );
        assert_eq!(
            retries(&done.events).len(),
            policy.max_retries as usize,
            "{wire:?}"
        );
        let stored = h.stored(&done.session).await;
        assert_eq!(stored.len(), 1, "{wire:?}: only the prompt: {stored:#?}");
        assert_clean_transcript(&h, &done, &format!("{wire:?}")).await;
    }
}
