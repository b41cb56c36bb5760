use gyre_mock::{Item, Script};
use serde_json::{Value, json};

use crate::{parse_sse, post_json, rich_answer, start, user_turn};

#[tokio::test]
async fn a_streamed_answer_is_anthropic_sse() {
    let server = start(Script::linear(vec![rich_answer()])).await;
    let request = json!({"model": "claude-x", "stream": true, "max_tokens": 100, "messages": [user_turn("read a and b")]});
    let response = post_json(
        format!("{}/v1/messages", server.anthropic_base_url()),
        &request,
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().expect("ascii"),
        "text/event-stream"
    );
    let events = parse_sse(&response.text().await.expect("whole body"));

    let names: Vec<&str> = events
        .iter()
        .map(|e| e.name.as_deref().expect("named"))
        .collect();
    // Every event's `type` repeats its name.
    for event in &events {
        assert_eq!(event.json()["type"], event.name.as_deref().expect("named"));
    }
    let start = events[0].json();
    assert_eq!(names[0], "message_start");
    assert_eq!(start["message"]["model"], "claude-x");
    assert_eq!(start["message"]["role"], "assistant");
    let expected_input = (serde_json::to_vec(&request).expect("json").len() / 4) as u64;
    assert_eq!(start["message"]["usage"]["input_tokens"], expected_input);
    assert_eq!(names[names.len() - 2..], ["message_delta", "message_stop"]);

    // Group the deltas by block.
    let mut blocks: Vec<(Value, Vec<Value>)> = Vec::new();
    for event in &events[1..events.len() - 2] {
        let data = event.json();
        match event.name.as_deref() {
            Some("content_block_start") => {
                assert_eq!(data["index"], blocks.len());
                blocks.push((data["content_block"].clone(), Vec::new()));
            }
            Some("content_block_delta") => {
                assert_eq!(data["index"], blocks.len() - 1);
                blocks
                    .last_mut()
                    .expect("open block")
                    .1
                    .push(data["delta"].clone());
            }
            Some("content_block_stop") => assert_eq!(data["index"], blocks.len() - 1),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(blocks.len(), 4);

    let (thinking, deltas) = &blocks[0];
    assert_eq!(thinking["type"], "thinking");
    let text: String = deltas
        .iter()
        .filter(|d| d["type"] == "thinking_delta")
        .map(|d| d["thinking"].as_str().expect("text"))
        .collect();
    assert_eq!(text, "I should read both files first.");
    assert_eq!(
        deltas.last().expect("signature"),
        &json!({"type": "signature_delta", "signature": "sig-1"})
    );

    let (text_block, deltas) = &blocks[1];
    assert_eq!(text_block, &json!({"type": "text", "text": ""}));
    assert!(
        deltas
            .iter()
            .all(|d| d["type"] == "text_delta"
                && d["text"].as_str().expect("s").chars().count() <= 16)
    );
    assert_eq!(deltas.len(), 2, "17 characters in two deltas");

    let (call, deltas) = &blocks[2];
    assert_eq!(
        call,
        &json!({"type": "tool_use", "id": "toolu_0_0", "name": "read", "input": {}})
    );
    assert_eq!(deltas.len(), 3);
    let args: String = deltas
        .iter()
        .map(|d| d["partial_json"].as_str().expect("s"))
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&args).expect("json"),
        json!({"file_path": "a.txt"})
    );

    let (call, deltas) = &blocks[3];
    assert_eq!(call["id"], "custom-id");
    assert_eq!(deltas.len(), 2);
    assert!(deltas.iter().all(|d| d["type"] == "input_json_delta"));

    let delta = events[events.len() - 2].json();
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert!(delta["usage"]["output_tokens"].as_u64().expect("n") >= 1);
}

#[tokio::test]
async fn a_non_streaming_request_gets_one_message() {
    let server = start(Script::linear(vec![vec![
        Item::Text("hello".into()),
        Item::Usage {
            input_tokens: 11,
            output_tokens: 22,
            cache_read_tokens: 33,
            cache_write_tokens: 44,
        },
        Item::Stop("max_tokens".into()),
    ]]))
    .await;
    let request = json!({"model": "m", "messages": [user_turn("hi")]});
    let response = post_json(
        format!("{}/v1/messages", server.anthropic_base_url()),
        &request,
    )
    .await;
    assert_eq!(response.status(), 200);
    let message: Value = response.json().await.expect("json");
    assert_eq!(message["type"], "message");
    assert_eq!(
        message["content"],
        json!([{"type": "text", "text": "hello"}])
    );
    assert_eq!(message["stop_reason"], "max_tokens");
    assert_eq!(
        message["usage"],
        json!({"input_tokens": 11, "output_tokens": 22, "cache_read_input_tokens": 33, "cache_creation_input_tokens": 44})
    );
}
