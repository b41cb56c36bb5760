//! The script's `context_window`: requests over it get each provider's real
//! overflow error before any step is chosen, and the one token count (body
//! bytes / 4) is what is recorded, checked and reported as default usage.

use gyre_mock::{Item, MockServer, Script, Step};
use serde_json::{Value, json};

use crate::{client, start, user_turn};

/// The API's recorded name, its URL for a whole (non-streaming) answer, and a
/// request body whose user text is `text`.
fn whole_request(server: &MockServer, api: &str, text: &str) -> (String, Value) {
    match api {
        "anthropic" => (
            format!("{}/v1/messages", server.anthropic_base_url()),
            json!({"model": "m", "max_tokens": 64, "messages": [user_turn(text)]}),
        ),
        "openai_chat" => (
            format!("{}/chat/completions", server.openai_base_url()),
            json!({"model": "m", "messages": [user_turn(text)]}),
        ),
        "openai-responses" => (
            format!("{}/responses", server.openai_base_url()),
            json!({"model": "m", "input": text}),
        ),
        "gemini" => (
            format!(
                "{}/v1beta/models/m:generateContent",
                server.gemini_base_url()
            ),
            json!({"contents": [{"role": "user", "parts": [{"text": text}]}]}),
        ),
        other => panic!("unknown api {other}"),
    }
}

const APIS: [&str; 4] = ["anthropic", "openai_chat", "openai-responses", "gemini"];

/// The bytes sent for `body`, so the test knows the exact size.
fn bytes_of(body: &Value) -> Vec<u8> {
    serde_json::to_vec(body).expect("serialises")
}

async fn post_bytes(url: &str, body: Vec<u8>) -> reqwest::Response {
    client()
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("request sent")
}

/// The provider's overflow body, written out from its documentation.
fn expected_overflow(api: &str, n: u64, window: u64) -> String {
    match api {
        "anthropic" => format!(
            r#"{{"type":"error","error":{{"type":"invalid_request_error","message":"prompt is too long: {n} tokens > {window} maximum"}}}}"#
        ),
        "gemini" => format!(
            r#"{{"error":{{"code":400,"message":"The input token count ({n}) exceeds the maximum number of tokens allowed ({window}).","status":"INVALID_ARGUMENT"}}}}"#
        ),
        _ => format!(
            r#"{{"error":{{"message":"This model's maximum context length is {window} tokens. However, your messages resulted in {n} tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}}}"#
        ),
    }
}

/// The input tokens an answer reports.
fn reported_input<'a>(api: &str, answer: &'a Value) -> &'a Value {
    match api {
        "anthropic" | "openai-responses" => &answer["usage"]["input_tokens"],
        "openai_chat" => &answer["usage"]["prompt_tokens"],
        _ => &answer["usageMetadata"]["promptTokenCount"],
    }
}

fn once(text: &str) -> Step {
    Step {
        times: Some(1),
        ..Step::on_turn(0, vec![Item::Text(text.into())])
    }
}

#[tokio::test]
async fn a_request_over_the_window_gets_the_providers_overflow_error_and_uses_no_step() {
    for api in APIS {
        let server = start(Script::default()).await;
        let (url, small) = whole_request(&server, api, "hi");
        let small = bytes_of(&small);
        let (_, big) = whole_request(&server, api, &"lorem ipsum ".repeat(100));
        let big = bytes_of(&big);
        // The small request fits exactly: a count equal to the window is allowed.
        let window = small.len() as u64 / 4;
        let over = big.len() as u64 / 4;
        assert!(over > window, "{api}");
        server.set_script(Script::new(vec![once("small answer")]).with_context_window(window));

        let response = post_bytes(&url, big.clone()).await;
        assert_eq!(response.status(), 400, "{api}");
        assert_eq!(
            response.headers()["content-type"],
            "application/json",
            "{api}"
        );
        assert_eq!(
            response.text().await.expect("body"),
            expected_overflow(api, over, window),
            "{api}"
        );

        // The overflow used up nothing: the one-time step still answers.
        let response = post_bytes(&url, small.clone()).await;
        assert_eq!(response.status(), 200, "{api}");
        let answer: Value = response.json().await.expect("json");
        assert!(
            answer.to_string().contains("small answer"),
            "{api}: {answer}"
        );
        assert_eq!(reported_input(api, &answer), window, "{api}: {answer}");
        // ... and now it is used up.
        let response = post_bytes(&url, small.clone()).await;
        assert_eq!(response.status(), 400, "{api}");
        let refusal = response.text().await.expect("body");
        assert!(refusal.contains("no scripted step"), "{api}: {refusal}");

        let recorded = server.requests();
        let counts: Vec<u64> = recorded.iter().map(|r| r.input_tokens).collect();
        assert_eq!(counts, vec![over, window, window], "{api}");
        for request in &recorded {
            assert_eq!(serde_json::to_value(request.api).expect("name"), api);
        }
    }
}

#[tokio::test]
async fn without_a_window_any_size_is_answered_and_counted() {
    let server = start(Script::linear(vec![vec![Item::Text("ok".into())]])).await;
    let (url, body) = whole_request(&server, "openai_chat", &"x".repeat(40_000));
    let body = bytes_of(&body);
    let n = body.len() as u64 / 4;
    let response = post_bytes(&url, body).await;
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.expect("json");
    assert_eq!(answer["usage"]["prompt_tokens"], n);
    assert_eq!(server.requests()[0].input_tokens, n);
}

#[tokio::test]
async fn a_scripted_usage_still_wins_under_a_window() {
    let script = Script::linear(vec![vec![
        Item::Text("ok".into()),
        Item::Usage {
            input_tokens: 7,
            output_tokens: 3,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        },
    ]])
    .with_context_window(1_000);
    let server = start(script).await;
    let (url, body) = whole_request(&server, "anthropic", "hello there");
    let response = post_bytes(&url, bytes_of(&body)).await;
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.expect("json");
    assert_eq!(answer["usage"]["input_tokens"], 7);
}

#[tokio::test]
async fn a_script_json_with_a_window_parses_and_applies() {
    let json = r#"{"context_window": 20, "steps": [{"reply": {"items": [{"text": "fits"}]}}]}"#;
    let script = Script::from_json_str(json).expect("parses");
    assert_eq!(script.context_window, Some(20));
    let server = start(Script::default()).await;
    server.set_script(script);
    let (url, small) = whole_request(&server, "gemini", "");
    let (_, big) = whole_request(&server, "gemini", &"y".repeat(200));
    let (small, big) = (bytes_of(&small), bytes_of(&big));
    assert!(small.len() / 4 <= 20 && big.len() / 4 > 20);
    let response = post_bytes(&url, big.clone()).await;
    assert_eq!(response.status(), 400);
    assert_eq!(
        response.text().await.expect("body"),
        expected_overflow("gemini", big.len() as u64 / 4, 20)
    );
    assert_eq!(post_bytes(&url, small).await.status(), 200);

    // Over HTTP too: a wider window lets the big request through.
    let wider =
        r#"{"context_window": 100000, "steps": [{"reply": {"items": [{"text": "fits"}]}}]}"#;
    let replaced = client()
        .post(format!("{}/__mock/script", server.url()))
        .header("content-type", "application/json")
        .body(wider)
        .send()
        .await
        .expect("script sent");
    assert_eq!(replaced.status(), 204);
    assert_eq!(post_bytes(&url, big.clone()).await.status(), 200);

    // The recorded count travels in the request log's JSON.
    let log: Value = client()
        .get(format!("{}/__mock/requests", server.url()))
        .send()
        .await
        .expect("log fetched")
        .json()
        .await
        .expect("json");
    let counts: Vec<&Value> = log
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| &r["input_tokens"])
        .collect();
    let big_count = big.len() as u64 / 4;
    assert_eq!(counts.len(), 3);
    assert_eq!(counts[0], big_count);
    assert_eq!(counts[2], big_count);
}
