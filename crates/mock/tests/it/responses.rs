use gyre_mock::{Item, Script};
use serde_json::{Value, json};

use crate::{SseEvent, parse_sse, post_json, rich_answer, start};

fn request(stream: bool) -> Value {
    json!({
        "model": "gpt-r",
        "stream": stream,
        "instructions": "be brief",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "read a and b"}]}],
    })
}

async fn stream_events(script: Script) -> Vec<SseEvent> {
    let server = start(script).await;
    let response = post_json(
        format!("{}/responses", server.openai_base_url()),
        &request(true),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().expect("ascii"),
        "text/event-stream"
    );
    let events = parse_sse(&response.text().await.expect("whole body"));
    for (n, event) in events.iter().enumerate() {
        let data = event.json();
        assert_eq!(data["type"], event.name.as_deref().expect("named"));
        assert_eq!(data["sequence_number"], n, "{data}");
    }
    events
}

/// The events of one output item, by its `output_index`.
fn item_events(events: &[SseEvent], index: usize) -> Vec<Value> {
    events
        .iter()
        .map(SseEvent::json)
        .filter(|d| d["output_index"] == index)
        .collect()
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["type"].as_str().expect("type"))
        .collect()
}

fn joined(events: &[Value], kind: &str) -> String {
    events
        .iter()
        .filter(|e| e["type"] == kind)
        .map(|e| e["delta"].as_str().expect("delta"))
        .collect()
}

#[tokio::test]
async fn a_streamed_answer_is_responses_events() {
    let mut items = rich_answer();
    items.push(Item::Usage {
        input_tokens: 10,
        output_tokens: 20,
        cache_read_tokens: 30,
        cache_write_tokens: 0,
    });
    items.push(Item::ReasoningTokens(7));
    let events = stream_events(Script::linear(vec![items])).await;
    let names: Vec<&str> = events
        .iter()
        .map(|e| e.name.as_deref().expect("named"))
        .collect();
    assert_eq!(names[..2], ["response.created", "response.in_progress"]);
    let created = events[0].json();
    assert_eq!(created["response"]["status"], "in_progress");
    assert_eq!(created["response"]["model"], "gpt-r");
    assert_eq!(created["response"]["output"], json!([]));

    // Output 0: the reasoning, as a summary with the signature encrypted.
    let reasoning = item_events(&events, 0);
    assert_eq!(
        kinds(&reasoning),
        [
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
        ]
    );
    assert_eq!(reasoning[0]["item"]["type"], "reasoning");
    assert_eq!(
        joined(&reasoning, "response.reasoning_summary_text.delta"),
        "I should read both files first."
    );
    let done = &reasoning[6]["item"];
    assert_eq!(done["encrypted_content"], "sig-1");
    assert_eq!(
        done["summary"],
        json!([{"type": "summary_text", "text": "I should read both files first."}])
    );

    // Output 1: the message text.
    let message = item_events(&events, 1);
    assert_eq!(message[0]["item"]["type"], "message");
    assert_eq!(message[0]["item"]["role"], "assistant");
    assert_eq!(
        joined(&message, "response.output_text.delta"),
        "Reading them now."
    );
    let text_done = message
        .iter()
        .find(|e| e["type"] == "response.output_text.done")
        .expect("text done");
    assert_eq!(text_done["text"], "Reading them now.");
    assert_eq!(text_done["item_id"], message[0]["item"]["id"]);
    assert_eq!(
        message.last().expect("done")["item"]["content"][0]["text"],
        "Reading them now."
    );

    // Outputs 2 and 3: function calls with argument fragments.
    for (index, call_id, fragments, file) in
        [(2, "call_0_0", 3, "a.txt"), (3, "custom-id", 2, "b.txt")]
    {
        let call = item_events(&events, index);
        let added = &call[0]["item"];
        assert_eq!(added["type"], "function_call");
        assert_eq!(added["call_id"], call_id);
        assert_eq!(added["name"], "read");
        assert_eq!(added["arguments"], "");
        let deltas = call
            .iter()
            .filter(|e| e["type"] == "response.function_call_arguments.delta")
            .count();
        assert_eq!(deltas, fragments);
        let args = joined(&call, "response.function_call_arguments.delta");
        assert_eq!(
            serde_json::from_str::<Value>(&args).expect("json"),
            json!({"file_path": file})
        );
        let args_done = &call[call.len() - 2];
        assert_eq!(args_done["type"], "response.function_call_arguments.done");
        assert_eq!(args_done["arguments"], args);
        let item_done = &call[call.len() - 1];
        assert_eq!(item_done["type"], "response.output_item.done");
        assert_eq!(item_done["item"]["arguments"], args);
        assert_eq!(item_done["item"]["status"], "completed");
    }

    let completed = events.last().expect("last").json();
    assert_eq!(completed["type"], "response.completed");
    let response = &completed["response"];
    assert_eq!(response["status"], "completed");
    assert_eq!(response["output"].as_array().map(Vec::len), Some(4));
    assert_eq!(
        response["usage"],
        json!({
            "input_tokens": 40,
            "input_tokens_details": {"cached_tokens": 30},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 7},
            "total_tokens": 60,
        })
    );
}

#[tokio::test]
async fn stop_words_end_as_incomplete_or_failed_responses() {
    for (stop, kind, reason) in [
        (
            "max_tokens",
            "response.incomplete",
            json!("max_output_tokens"),
        ),
        ("refusal", "response.incomplete", json!("content_filter")),
        (
            "content_filter",
            "response.incomplete",
            json!("content_filter"),
        ),
        ("error", "response.failed", Value::Null),
    ] {
        let script = Script::linear(vec![vec![
            Item::Text("partial".into()),
            Item::Stop(stop.into()),
        ]]);
        let events = stream_events(script).await;
        let last = events.last().expect("last");
        assert_eq!(last.name.as_deref(), Some(kind), "{stop}");
        let response = &last.json()["response"];
        assert_eq!(response["incomplete_details"]["reason"], reason, "{stop}");
        assert_eq!(
            response["status"],
            if kind == "response.failed" {
                "failed"
            } else {
                "incomplete"
            }
        );
        assert!(
            events
                .iter()
                .all(|e| e.name.as_deref() != Some("response.completed"))
        );
    }
}

#[tokio::test]
async fn a_non_streaming_request_gets_the_whole_response() {
    let server = start(Script::linear(vec![rich_answer()])).await;
    let response = post_json(
        format!("{}/responses", server.openai_base_url()),
        &request(false),
    )
    .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    let output = body["output"].as_array().expect("output");
    let types: Vec<&str> = output
        .iter()
        .map(|o| o["type"].as_str().expect("type"))
        .collect();
    assert_eq!(
        types,
        ["reasoning", "message", "function_call", "function_call"]
    );
    assert_eq!(output[3]["call_id"], "custom-id");
    assert_eq!(output[3]["arguments"], r#"{"file_path":"b.txt"}"#);
    // Without scripted usage, input is the request's bytes / 4.
    let expected_input = (serde_json::to_vec(&request(false)).expect("json").len() / 4) as u64;
    assert_eq!(body["usage"]["input_tokens"], expected_input);
}
