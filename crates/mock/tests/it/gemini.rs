use gyre_mock::{Item, Script};
use serde_json::{Value, json};

use crate::{client, parse_sse, post_json, rich_answer, start};

fn request() -> Value {
    json!({
        "contents": [{"role": "user", "parts": [{"text": "read a and b"}]}],
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "generationConfig": {"thinkingConfig": {"includeThoughts": true}},
    })
}

fn url(server: &gyre_mock::MockServer, method: &str) -> String {
    format!(
        "{}/v1beta/models/gemini-test:{method}",
        server.gemini_base_url()
    )
}

/// The chunks of a streamed answer (`alt=sse`).
async fn stream_chunks(script: Script) -> Vec<Value> {
    let server = start(script).await;
    let response = post_json(
        format!("{}?alt=sse", url(&server, "streamGenerateContent")),
        &request(),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().expect("ascii"),
        "text/event-stream"
    );
    let events = parse_sse(&response.text().await.expect("whole body"));
    let recorded = server.requests();
    assert_eq!(
        recorded[0].path,
        "/v1beta/models/gemini-test:streamGenerateContent"
    );
    assert_eq!(
        serde_json::to_value(recorded[0].api).expect("json"),
        "gemini"
    );
    events
        .iter()
        .map(|e| {
            assert!(e.name.is_none());
            e.json()
        })
        .collect()
}

fn parts(chunk: &Value) -> Vec<Value> {
    chunk["candidates"][0]["content"]["parts"]
        .as_array()
        .cloned()
        .expect("parts")
}

#[tokio::test]
async fn a_streamed_answer_is_gemini_chunks() {
    let mut items = rich_answer();
    items.push(Item::Usage {
        input_tokens: 10,
        output_tokens: 20,
        cache_read_tokens: 30,
        cache_write_tokens: 0,
    });
    items.push(Item::ReasoningTokens(7));
    let chunks = stream_chunks(Script::linear(vec![items])).await;
    for chunk in &chunks {
        assert_eq!(chunk["responseId"], "mock-response-0");
        assert_eq!(chunk["modelVersion"], "gemini-test");
        assert_eq!(chunk["candidates"][0]["content"]["role"], "model");
    }
    let all_parts: Vec<Value> = chunks.iter().flat_map(parts).collect();
    let thoughts: Vec<&Value> = all_parts.iter().filter(|p| p["thought"] == true).collect();
    let thought_text: String = thoughts
        .iter()
        .map(|p| p["text"].as_str().expect("text"))
        .collect();
    assert_eq!(thought_text, "I should read both files first.");
    // The signature travels once, on the last thought part.
    let signed = thoughts
        .iter()
        .filter(|p| p.get("thoughtSignature").is_some())
        .count();
    assert_eq!(signed, 1);
    assert_eq!(
        thoughts.last().expect("thought")["thoughtSignature"],
        "sig-1"
    );

    let text: String = all_parts
        .iter()
        .filter(|p| p.get("thought").is_none())
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert_eq!(text, "Reading them now.");

    // Both calls in one chunk, the last, with whole arguments and no ids
    // unless scripted.
    let last = chunks.last().expect("last");
    assert_eq!(
        parts(last),
        vec![
            json!({"functionCall": {"name": "read", "args": {"file_path": "a.txt"}}}),
            json!({"functionCall": {"id": "custom-id", "name": "read", "args": {"file_path": "b.txt"}}}),
        ]
    );
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(
        last["usageMetadata"],
        json!({
            "promptTokenCount": 40,
            "candidatesTokenCount": 13,
            "thoughtsTokenCount": 7,
            "cachedContentTokenCount": 30,
            "totalTokenCount": 60,
        })
    );
    for chunk in &chunks[..chunks.len() - 1] {
        assert!(chunk.get("usageMetadata").is_none());
        assert!(chunk["candidates"][0].get("finishReason").is_none());
    }
}

#[tokio::test]
async fn gyre_stop_names_become_finish_reasons() {
    for (stop, reason) in [
        ("end_turn", "STOP"),
        ("max_tokens", "MAX_TOKENS"),
        ("refusal", "SAFETY"),
        ("error", "MALFORMED_FUNCTION_CALL"),
    ] {
        let script = Script::linear(vec![vec![Item::Text("x".into()), Item::Stop(stop.into())]]);
        let chunks = stream_chunks(script).await;
        let last = chunks.last().expect("last");
        assert_eq!(last["candidates"][0]["finishReason"], reason, "{stop}");
        // Zero thought and cache counts are left out, as the real API does.
        let usage = &last["usageMetadata"];
        assert!(usage.get("thoughtsTokenCount").is_none(), "{usage}");
        assert!(usage.get("cachedContentTokenCount").is_none(), "{usage}");
        assert!(usage["promptTokenCount"].as_u64().expect("n") >= 1);
    }
}

#[tokio::test]
async fn generate_content_and_a_stream_without_sse_are_json() {
    let server = start(Script::linear(vec![rich_answer()])).await;
    let whole: Value = post_json(url(&server, "generateContent"), &request())
        .await
        .json()
        .await
        .expect("json");
    let whole_parts = parts(&whole);
    assert_eq!(whole_parts.len(), 4);
    assert_eq!(
        whole_parts[0],
        json!({"text": "I should read both files first.", "thought": true, "thoughtSignature": "sig-1"})
    );
    assert_eq!(whole_parts[1], json!({"text": "Reading them now."}));
    assert_eq!(whole["candidates"][0]["finishReason"], "STOP");

    let array: Value = post_json(url(&server, "streamGenerateContent"), &request())
        .await
        .json()
        .await
        .expect("a JSON array");
    let chunks = array.as_array().expect("array");
    assert!(chunks.len() > 2);
    assert_eq!(
        chunks.last().expect("last")["candidates"][0]["finishReason"],
        "STOP"
    );

    let unknown = client()
        .post(url(&server, "countTokens"))
        .json(&request())
        .send()
        .await
        .expect("sent");
    assert_eq!(unknown.status(), 404);
    let body: Value = unknown.json().await.expect("json");
    assert_eq!(body["error"]["status"], "NOT_FOUND");
}
