use std::time::Duration;

use gyre_mock::{Api, Item, MockServer, Script};
use serde_json::{Value, json};

use crate::{client, post_json, start, user_turn};

#[tokio::test]
async fn requests_are_recorded_in_order_and_served_as_json() {
    let server = start(Script {
        context_window: None,
        steps: vec![gyre_mock::Step::default()],
    })
    .await;
    for n in 0..3 {
        let response = client()
            .post(format!("{}/v1/messages", server.anthropic_base_url()))
            .header("X-Api-Key", "k-123")
            .json(&json!({"model": "m", "messages": [user_turn(&format!("message {n}"))]}))
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), 200);
    }
    post_json(
        format!("{}/chat/completions", server.openai_base_url()),
        &json!({"model": "m", "messages": [user_turn("openai")]}),
    )
    .await;
    let bad = client()
        .post(format!("{}/v1/messages", server.anthropic_base_url()))
        .body("not json")
        .send()
        .await
        .expect("sent");
    assert_eq!(bad.status(), 400);

    let recorded = server.requests();
    assert_eq!(recorded.len(), 5);
    for (n, request) in recorded[..3].iter().enumerate() {
        assert_eq!(request.api, Api::Anthropic);
        assert_eq!(request.path, "/v1/messages");
        assert_eq!(request.headers["x-api-key"], "k-123");
        assert_eq!(
            request.body["messages"][0]["content"],
            format!("message {n}")
        );
    }
    assert_eq!(recorded[3].api, Api::OpenAiChat);
    assert_eq!(recorded[3].path, "/v1/chat/completions");
    assert_eq!(recorded[4].body, json!("not json"));

    let over_http: Value = client()
        .get(format!("{}/__mock/requests", server.url()))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert_eq!(over_http, serde_json::to_value(&recorded).expect("json"));
    assert_eq!(over_http[3]["api"], "openai_chat");
}

#[tokio::test]
async fn twenty_concurrent_streams_are_all_answered() {
    let server = start(Script::linear(vec![vec![Item::Text(
        "a reply long enough to take several deltas".into(),
    )]]))
    .await;
    let url = format!("{}/v1/messages", server.anthropic_base_url());
    // One client with room for twenty connections: each stream gets its own.
    let http = client();
    let tasks: Vec<_> = (0..20)
        .map(|n| {
            let (url, http) = (url.clone(), http.clone());
            tokio::spawn(async move {
                let body = json!({"model": "m", "stream": true, "messages": [user_turn(&format!("n{n}"))]});
                let response = http.post(url).json(&body).send().await.expect("sent");
                assert_eq!(response.status(), 200);
                response.text().await.expect("whole body")
            })
        })
        .collect();
    for task in tasks {
        let body = task.await.expect("task");
        assert!(body.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
    }
    assert_eq!(server.requests().len(), 20);
}

#[tokio::test]
async fn a_script_file_drives_a_server_and_shutdown_frees_the_port() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("script.json");
    std::fs::write(
        &path,
        r#"{"steps": [{"when": {"turn": 0}, "reply": {"items": [{"text": "from a file"}]}}]}"#,
    )
    .expect("write");
    let script = Script::from_file(&path).await.expect("loads");
    let server = MockServer::start(script).await.expect("starts");
    assert!(server.url().starts_with("http://127.0.0.1:"));
    let response = post_json(
        format!("{}/chat/completions", server.openai_base_url()),
        &json!({"model": "m", "messages": [user_turn("hi")]}),
    )
    .await;
    let completion: Value = response.json().await.expect("json");
    assert_eq!(
        completion["choices"][0]["message"]["content"],
        "from a file"
    );

    let addr = server.addr();
    tokio::time::timeout(Duration::from_secs(6), server.shutdown())
        .await
        .expect("shutdown is bounded");
    let after = client()
        .post(format!("http://{addr}/v1/messages"))
        .json(&json!({}))
        .send()
        .await;
    assert!(after.is_err(), "nothing listens after shutdown: {after:?}");
}

#[tokio::test]
async fn a_dropped_server_stops_listening() {
    let server = start(Script::default()).await;
    let addr = server.addr();
    drop(server);
    // The listener closes once the serve task sees the stop; bounded retries.
    let mut refused = false;
    for _ in 0..50 {
        if tokio::net::TcpStream::connect(addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(refused, "still listening on {addr}");
}
