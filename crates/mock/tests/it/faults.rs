use std::time::{Duration, Instant};

use futures::StreamExt;
use gyre_mock::{At, End, HttpReply, Item, Reply, Script, Stall, Step, StreamReply};
use serde_json::{Value, json};

use crate::{parse_sse, post_json, read_body, start, streaming_endpoints, user_turn};

fn script_of(reply: Reply) -> Script {
    Script {
        context_window: None,
        steps: vec![Step {
            reply,
            ..Step::default()
        }],
    }
}

fn streamed(faults: StreamReply) -> Script {
    script_of(Reply::Stream(StreamReply {
        items: vec![Item::Text("one two three four five six seven".into())],
        ..faults
    }))
}

fn streaming_request() -> Value {
    json!({"model": "m", "stream": true, "messages": [user_turn("hi")]})
}

#[tokio::test]
async fn a_429_carries_retry_after_and_the_provider_error() {
    let server = start(script_of(Reply::Http(HttpReply {
        status: 429,
        headers: [("retry-after".to_string(), "2".to_string())].into(),
        body: None,
        ..HttpReply::default()
    })))
    .await;

    let response = post_json(
        format!("{}/v1/messages", server.anthropic_base_url()),
        &streaming_request(),
    )
    .await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "2");
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "rate_limit_error");

    let response = post_json(
        format!("{}/chat/completions", server.openai_base_url()),
        &streaming_request(),
    )
    .await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "2");
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    assert!(body["error"]["message"].as_str().is_some());
}

#[tokio::test]
async fn a_scripted_body_is_sent_verbatim() {
    let server = start(script_of(Reply::Http(HttpReply {
        status: 529,
        headers: Default::default(),
        body: Some("upstream exploded".into()),
        ..HttpReply::default()
    })))
    .await;
    let response = post_json(
        format!("{}/v1/messages", server.anthropic_base_url()),
        &streaming_request(),
    )
    .await;
    assert_eq!(response.status(), 529);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .expect("ascii")
            .starts_with("text/plain")
    );
    assert_eq!(response.text().await.expect("body"), "upstream exploded");
}

#[tokio::test]
async fn a_stall_before_headers_holds_them_back() {
    let server = start(streamed(StreamReply {
        stall_before_headers_ms: 300,
        ..StreamReply::default()
    }))
    .await;
    let started = Instant::now();
    let response = post_json(
        format!("{}/v1/messages", server.anthropic_base_url()),
        &streaming_request(),
    )
    .await;
    let elapsed = started.elapsed();
    assert_eq!(response.status(), 200);
    assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

#[tokio::test]
async fn delay_between_ms_paces_the_events() {
    let server = start(streamed(StreamReply {
        delay_between_ms: 20,
        ..StreamReply::default()
    }))
    .await;
    let started = Instant::now();
    let response = post_json(
        format!("{}/chat/completions", server.openai_base_url()),
        &streaming_request(),
    )
    .await;
    let events = parse_sse(&response.text().await.expect("body"));
    let elapsed = started.elapsed();
    let gaps = events.len() as u32 - 1;
    assert!(
        elapsed >= Duration::from_millis(20) * gaps,
        "{elapsed:?} for {gaps} gaps"
    );
}

#[tokio::test]
async fn cut_after_events_breaks_the_body() {
    let server = start(streamed(StreamReply {
        cut_after_events: Some(3),
        ..StreamReply::default()
    }))
    .await;
    for url in [
        format!("{}/v1/messages", server.anthropic_base_url()),
        format!("{}/chat/completions", server.openai_base_url()),
    ] {
        let response = post_json(url, &streaming_request()).await;
        assert_eq!(response.status(), 200);
        let mut received = Vec::new();
        let mut stream = response.bytes_stream();
        let error = loop {
            match stream.next().await {
                Some(Ok(bytes)) => received.extend_from_slice(&bytes),
                Some(Err(error)) => break error,
                None => panic!("the body ended cleanly"),
            }
        };
        assert!(error.is_body() || error.is_decode(), "{error:?}");
        let text = String::from_utf8(received).expect("utf-8");
        assert_eq!(
            text.matches("\n\n").count(),
            3,
            "three whole events: {text:?}"
        );
        assert!(!text.ends_with("\n\n"), "then half of the fourth: {text:?}");
    }
    // The whole-body helper reports the same failure.
    let whole = post_json(
        format!("{}/v1/messages", server.anthropic_base_url()),
        &streaming_request(),
    )
    .await
    .text()
    .await;
    assert!(whole.is_err());
}

#[tokio::test]
async fn a_stall_keeps_the_stream_open_until_shutdown() {
    let server = start(streamed(StreamReply {
        hold_open_ms: u64::MAX,
        ..StreamReply::default()
    }))
    .await;
    let response = post_json(
        format!("{}/v1/messages", server.anthropic_base_url()),
        &streaming_request(),
    )
    .await;
    let mut stream = response.bytes_stream();
    let mut received = String::new();
    while !received.contains("event: message_stop") {
        let chunk = stream.next().await.expect("more events").expect("bytes");
        received.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
    }
    // Every event is out, yet the body does not end: absence can only be
    // observed over a bounded wait.
    let next = tokio::time::timeout(Duration::from_millis(300), stream.next()).await;
    assert!(next.is_err(), "the body should stall, got {next:?}");

    let stopping = Instant::now();
    server.shutdown().await;
    assert!(stopping.elapsed() < Duration::from_secs(4));
    let end = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("the stream ends once the server stops");
    assert!(!matches!(end, Some(Ok(_))), "{end:?}");
}

/// A script whose only step answers with `faults` over a short text answer.
fn faulty(faults: StreamReply) -> Script {
    streamed(faults)
}

#[tokio::test]
async fn a_reset_is_a_broken_body_in_every_api() {
    for end in [
        End::ResetAfter(At::Events(2)),
        End::ResetAfter(At::Bytes(50)),
    ] {
        let server = start(faulty(StreamReply {
            end,
            ..StreamReply::default()
        }))
        .await;
        let whole = start(faulty(StreamReply::default())).await;
        for ((api, url, body), (_, whole_url, _)) in streaming_endpoints(&server)
            .into_iter()
            .zip(streaming_endpoints(&whole))
        {
            let response = post_json(url, &body).await;
            assert_eq!(response.status(), 200);
            let (received, error) = read_body(response).await;
            let error = error.unwrap_or_else(|| panic!("{api} {end:?}: the body ended cleanly"));
            assert!(error.is_body() || error.is_decode(), "{api}: {error:?}");
            // What arrived is the start of the whole answer (numbers zeroed:
            // OpenAI's events carry the clock time).
            let (complete, _) = read_body(post_json(whole_url, &body).await).await;
            let zeroed = |bytes: &[u8]| -> Vec<u8> {
                bytes
                    .iter()
                    .map(|b| if b.is_ascii_digit() { b'0' } else { *b })
                    .collect()
            };
            assert!(
                zeroed(&complete).starts_with(&zeroed(&received)),
                "{api} {end:?}"
            );
            let text = String::from_utf8(received).expect("utf-8");
            match end {
                End::ResetAfter(At::Events(n)) => {
                    assert_eq!(text.matches("\n\n").count(), n, "{api}: {text:?}");
                    assert!(text.ends_with("\n\n"), "{api}: {text:?}");
                }
                _ => assert_eq!(text.len(), 50, "{api}: {text:?}"),
            }
        }
    }
}

#[tokio::test]
async fn a_truncated_stream_ends_cleanly_without_its_last_event() {
    let server = start(faulty(StreamReply {
        end: End::TruncateAfter(At::Events(2)),
        ..StreamReply::default()
    }))
    .await;
    for (api, url, body) in streaming_endpoints(&server) {
        let response = post_json(url, &body).await;
        let text = response.text().await.expect("a clean end");
        let events = parse_sse(&text);
        assert_eq!(events.len(), 2, "{api}");
        for terminal in [
            "message_stop",
            "[DONE]",
            "response.completed",
            "finishReason",
        ] {
            assert!(!text.contains(terminal), "{api}: {text}");
        }
    }
}

#[tokio::test]
async fn a_stall_before_the_headers_lasts_until_the_client_gives_up() {
    let server = start(streamed(StreamReply {
        stall_before_headers_ms: u64::MAX,
        ..StreamReply::default()
    }))
    .await;
    let impatient = crate::tls_client_builder()
        .no_proxy()
        .timeout(Duration::from_millis(300))
        .build()
        .expect("client");
    let (_, url, body) = streaming_endpoints(&server).remove(3);
    let error = impatient
        .post(url)
        .json(&body)
        .send()
        .await
        .expect_err("no headers ever come");
    assert!(error.is_timeout(), "{error:?}");
    // The stalled request does not hold up shutdown.
    tokio::time::timeout(Duration::from_secs(4), server.shutdown())
        .await
        .expect("shutdown is prompt");
}

#[tokio::test]
async fn a_stall_mid_stream_pauses_after_its_position() {
    let server = start(streamed(StreamReply {
        stall: Some(Stall {
            after: At::Events(2),
            ms: u64::MAX,
        }),
        ..StreamReply::default()
    }))
    .await;
    let (_, url, body) = streaming_endpoints(&server).remove(2);
    let response = post_json(url, &body).await;
    let mut stream = response.bytes_stream();
    let mut received = String::new();
    while received.matches("\n\n").count() < 2 {
        let chunk = stream.next().await.expect("more").expect("bytes");
        received.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
    }
    assert_eq!(received.matches("\n\n").count(), 2, "{received}");
    // Absence can only be observed over a bounded wait.
    let next = tokio::time::timeout(Duration::from_millis(300), stream.next()).await;
    assert!(next.is_err(), "the stream should stall, got {next:?}");

    // A bounded stall delays the stream but changes nothing in it.
    server.set_script(streamed(StreamReply {
        stall: Some(Stall {
            after: At::Bytes(10),
            ms: 50,
        }),
        ..StreamReply::default()
    }));
    // (Anthropic: its events carry no clock time.)
    let (_, url, body) = streaming_endpoints(&server).remove(0);
    let stalled = post_json(url.clone(), &body)
        .await
        .text()
        .await
        .expect("body");
    server.set_script(streamed(StreamReply::default()));
    let plain = post_json(url, &body).await.text().await.expect("body");
    assert_eq!(stalled, plain);
}
