use gyre_mock::{Item, Script};
use serde_json::{Value, json};

use crate::{SseEvent, parse_sse, post_json, rich_answer, start, user_turn};

fn delta(event: &SseEvent) -> Value {
    event.json()["choices"][0]["delta"].clone()
}

#[tokio::test]
async fn a_streamed_answer_is_openai_chunks() {
    let server = start(Script::linear(vec![rich_answer()])).await;
    let request = json!({
        "model": "gpt-x",
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "system", "content": "sys"}, user_turn("read a and b")],
    });
    let response = post_json(
        format!("{}/chat/completions", server.openai_base_url()),
        &request,
    )
    .await;
    assert_eq!(response.status(), 200);
    let events = parse_sse(&response.text().await.expect("whole body"));
    assert!(events.iter().all(|e| e.name.is_none()));
    assert_eq!(events.last().expect("done").data, "[DONE]");
    let chunks = &events[..events.len() - 1];
    for chunk in chunks {
        let data = chunk.json();
        assert_eq!(data["object"], "chat.completion.chunk");
        assert_eq!(data["model"], "gpt-x");
    }

    assert_eq!(
        delta(&chunks[0]),
        json!({"role": "assistant", "content": ""})
    );
    let reasoning: String = chunks
        .iter()
        .filter_map(|c| delta(c)["reasoning_content"].as_str().map(str::to_string))
        .collect();
    assert_eq!(reasoning, "I should read both files first.");
    let content: String = chunks
        .iter()
        .filter_map(|c| delta(c)["content"].as_str().map(str::to_string))
        .collect();
    assert_eq!(content, "Reading them now.");

    let calls: Vec<Value> = chunks
        .iter()
        .filter_map(|c| delta(c)["tool_calls"].as_array().cloned())
        .map(|calls| {
            assert_eq!(calls.len(), 1);
            calls[0].clone()
        })
        .collect();
    // Call 0: a header, then three argument fragments; call 1: a header, then two.
    assert_eq!(calls.len(), 1 + 3 + 1 + 2);
    assert_eq!(
        calls[0],
        json!({"index": 0, "id": "call_0_0", "type": "function", "function": {"name": "read", "arguments": ""}})
    );
    assert_eq!(calls[4]["id"], "custom-id");
    assert_eq!(calls[4]["index"], 1);
    for index in [0, 1] {
        let args: String = calls
            .iter()
            .filter(|c| c["index"] == index)
            .map(|c| c["function"]["arguments"].as_str().expect("s"))
            .collect();
        let file = if index == 0 { "a.txt" } else { "b.txt" };
        assert_eq!(
            serde_json::from_str::<Value>(&args).expect("json"),
            json!({"file_path": file})
        );
    }

    let finish = chunks[chunks.len() - 2].json();
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    let usage = chunks[chunks.len() - 1].json();
    assert_eq!(usage["choices"], json!([]));
    assert!(usage["usage"]["prompt_tokens"].as_u64().expect("n") >= 1);
    assert!(usage["usage"]["completion_tokens"].as_u64().expect("n") >= 1);
    assert_eq!(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
}

#[tokio::test]
async fn without_include_usage_there_is_no_usage_chunk() {
    let server = start(Script::linear(vec![vec![Item::Text("hi".into())]])).await;
    let request = json!({"model": "m", "stream": true, "messages": [user_turn("hi")]});
    let response = post_json(
        format!("{}/chat/completions", server.openai_base_url()),
        &request,
    )
    .await;
    let events = parse_sse(&response.text().await.expect("body"));
    let finish = events[events.len() - 2].json();
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    assert!(events.iter().all(|e| !e.data.contains("\"usage\"")));
}

#[tokio::test]
async fn a_non_streaming_request_gets_one_completion() {
    let server = start(Script::linear(vec![rich_answer()])).await;
    let request = json!({"model": "m", "messages": [user_turn("hi")]});
    let response = post_json(
        format!("{}/chat/completions", server.openai_base_url()),
        &request,
    )
    .await;
    assert_eq!(response.status(), 200);
    let completion: Value = response.json().await.expect("json");
    assert_eq!(completion["object"], "chat.completion");
    let choice = &completion["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "Reading them now.");
    assert_eq!(
        choice["message"]["reasoning_content"],
        "I should read both files first."
    );
    assert_eq!(
        choice["message"]["tool_calls"][1],
        json!({"id": "custom-id", "type": "function", "function": {"name": "read", "arguments": "{\"file_path\":\"b.txt\"}"}})
    );
    assert!(completion["usage"]["total_tokens"].as_u64().expect("n") >= 2);
}
