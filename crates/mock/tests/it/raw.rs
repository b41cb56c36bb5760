use std::time::Duration;

use futures::StreamExt;
use gyre_mock::{At, Chunking, End, Item, RawReply, Reply, Script, Step};
use serde_json::json;

use crate::{client, parse_sse, post_json, read_body, start, streaming_endpoints};

/// A captured-looking stream with CRLF framing, multi-byte characters and a
/// malformed event.
const RAW: &str = "event: message_start\r\ndata: {\"type\":\"message_start\"}\r\n\r\n\
data: {\"text\":\"héllo wörld — ünïcode ✓\"}\n\n\
data: {oops this is not json\n\n\
: a comment line\n\n\
data: [DONE]\n\n";

fn raw_script(raw: RawReply) -> Script {
    Script {
        context_window: None,
        steps: vec![Step {
            reply: Reply::from(raw),
            ..Step::default()
        }],
    }
}

#[tokio::test]
async fn a_raw_reply_arrives_byte_identical_at_every_chunking() {
    for chunking in [
        Chunking::Whole,
        Chunking::Every(1),
        Chunking::Every(7),
        Chunking::Seeded { seed: 1, max: 5 },
        Chunking::Seeded { seed: 99, max: 64 },
    ] {
        let server = start(raw_script(RawReply {
            body: RAW.into(),
            chunking,
            ..RawReply::default()
        }))
        .await;
        // Any endpoint replays the same bytes.
        for (api, url, body) in streaming_endpoints(&server) {
            let response = post_json(url, &body).await;
            assert_eq!(response.status(), 200);
            assert_eq!(
                response.headers()["content-type"].to_str().expect("ascii"),
                "text/event-stream"
            );
            let (received, error) = read_body(response).await;
            assert!(error.is_none(), "{api} {chunking:?}: {error:?}");
            assert_eq!(received, RAW.as_bytes(), "{api} {chunking:?}");
        }
    }
}

#[tokio::test]
async fn raw_chunks_go_out_separately() {
    // With a pause between chunks the client sees them one at a time, split
    // inside a UTF-8 character ("é" is two bytes; the first 7 end inside it).
    let body = "data: é\n\n";
    let server = start(raw_script(RawReply {
        body: body.into(),
        chunking: Chunking::Every(7),
        delay_between_ms: 50,
        ..RawReply::default()
    }))
    .await;
    let response = post_json(format!("{}/v1/messages", server.url()), &json!({})).await;
    let mut pieces = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        pieces.push(chunk.expect("bytes"));
    }
    assert!(pieces.len() >= 2, "{pieces:?}");
    assert_eq!(pieces[0].as_ref(), b"data: \xC3");
    assert_eq!(pieces.concat(), body.as_bytes());
}

#[tokio::test]
async fn a_raw_reply_takes_its_status_headers_and_faults_from_json() {
    let script = Script::from_json_str(
        r#"{"steps": [{"reply": {
            "raw": "{\"error\": \"busy\"}",
            "status": 503,
            "headers": {"content-type": "application/json", "retry-after-ms": "1500"},
            "chunking": {"every": 4}
        }}]}"#,
    )
    .expect("parses");
    let server = start(script).await;
    let response = post_json(
        format!("{}/responses", server.openai_base_url()),
        &json!({}),
    )
    .await;
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after-ms"], "1500");
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(response.text().await.expect("body"), r#"{"error": "busy"}"#);

    // A raw reply can be reset like any other.
    server.set_script(raw_script(RawReply {
        body: RAW.into(),
        chunking: Chunking::Every(10),
        end: End::ResetAfter(At::Events(2)),
        ..RawReply::default()
    }));
    let response = post_json(format!("{}/v1/messages", server.url()), &json!({})).await;
    let (received, error) = read_body(response).await;
    assert!(error.is_some(), "the body broke");
    assert_eq!(received, &RAW.as_bytes()[..20]);
}

#[tokio::test]
async fn a_raw_event_sits_in_a_rendered_stream() {
    let server = start(Script::linear(vec![vec![
        Item::Text("before".into()),
        Item::RawEvent("event: content_block_delta\ndata: {broken\n\n".into()),
        Item::Text("after".into()),
    ]]))
    .await;
    let response = client()
        .post(format!("{}/v1/messages", server.anthropic_base_url()))
        .json(&json!({"model": "m", "stream": true, "messages": []}))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .expect("sent");
    let events = parse_sse(&response.text().await.expect("body"));
    let broken = events
        .iter()
        .position(|e| e.data == "{broken")
        .expect("the raw event is there");
    // It comes after the first text block's stop, and the blocks around it
    // keep consecutive indexes.
    assert_eq!(
        events[broken - 1].name.as_deref(),
        Some("content_block_stop")
    );
    assert_eq!(events[broken - 1].json()["index"], 0);
    assert_eq!(events[broken + 1].json()["index"], 1);
}
