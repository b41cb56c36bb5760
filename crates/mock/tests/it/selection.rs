use gyre_mock::{Item, Reply, Script, Step, StreamReply, When};
use serde_json::{Value, json};

use crate::{post_json, start, user_turn};

fn answer(text: &str) -> Reply {
    Reply::Stream(StreamReply {
        items: vec![Item::Text(text.into())],
        ..StreamReply::default()
    })
}

fn step(when: When, times: Option<u32>, text: &str) -> Step {
    Step {
        when,
        times,
        reply: answer(text),
    }
}

/// The text of a non-streaming Anthropic answer, or the error message.
async fn ask_anthropic(url: &str, messages: Value) -> (u16, String) {
    let response = post_json(
        format!("{url}/v1/messages"),
        &json!({"model": "m", "messages": messages}),
    )
    .await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.expect("json");
    let text = if status == 200 {
        body["content"][0]["text"]
            .as_str()
            .expect("text")
            .to_string()
    } else {
        body["error"]["message"]
            .as_str()
            .expect("message")
            .to_string()
    };
    (status, text)
}

fn assistant_called(id: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "read", "input": {}}]})
}

#[tokio::test]
async fn steps_are_chosen_by_turn_tool_results_and_text() {
    let script = Script {
        context_window: None,
        steps: vec![
            step(
                When {
                    last_message_contains: Some("secret word".into()),
                    ..When::default()
                },
                None,
                "by text",
            ),
            step(
                When {
                    turn: Some(1),
                    tool_results: Some(2),
                    ..When::default()
                },
                None,
                "turn 1, two results",
            ),
            step(
                When {
                    turn: Some(1),
                    ..When::default()
                },
                None,
                "turn 1",
            ),
            step(
                When {
                    turn: Some(0),
                    ..When::default()
                },
                None,
                "turn 0",
            ),
        ],
    };
    let server = start(script).await;
    let url = server.anthropic_base_url();

    assert_eq!(
        ask_anthropic(&url, json!([user_turn("hi")])).await,
        (200, "turn 0".into())
    );
    let two_results = json!([
        user_turn("hi"),
        assistant_called("a"),
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "one"},
            {"type": "tool_result", "tool_use_id": "b", "content": "two"}
        ]}
    ]);
    assert_eq!(
        ask_anthropic(&url, two_results).await,
        (200, "turn 1, two results".into())
    );
    let one_result = json!([
        user_turn("hi"),
        assistant_called("a"),
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "the secret word is here"}]}]}
    ]);
    assert_eq!(
        ask_anthropic(&url, one_result).await,
        (200, "by text".into())
    );
    let plain_turn_one = json!([user_turn("hi"), assistant_called("a"), user_turn("go on")]);
    assert_eq!(
        ask_anthropic(&url, plain_turn_one).await,
        (200, "turn 1".into())
    );
}

#[tokio::test]
async fn a_step_with_times_is_used_up() {
    let script = Script {
        context_window: None,
        steps: vec![
            step(When::default(), Some(2), "limited"),
            step(When::default(), Some(1), "then this"),
        ],
    };
    let server = start(script).await;
    let url = server.anthropic_base_url();
    let mut answers = Vec::new();
    for _ in 0..4 {
        answers.push(ask_anthropic(&url, json!([user_turn("hi")])).await);
    }
    assert_eq!(
        answers[..3],
        [
            (200, "limited".into()),
            (200, "limited".into()),
            (200, "then this".into())
        ]
    );
    assert_eq!(answers[3].0, 400);
}

#[tokio::test]
async fn no_matching_step_is_a_400_in_each_api() {
    let server = start(Script::linear(vec![vec![Item::Text("only turn 0".into())]])).await;
    let history = json!([
        user_turn("hi"),
        assistant_called("a"),
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]}
    ]);
    let response = post_json(
        format!("{}/v1/messages", server.anthropic_base_url()),
        &json!({"model": "m", "stream": true, "messages": history}),
    )
    .await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.expect("json");
    assert_eq!(
        body,
        json!({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": "mock: no scripted step matches this request (turn 1, 1 tool results)"
        }})
    );

    let openai_history = json!([
        user_turn("hi"),
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "x"},
        {"role": "assistant", "content": "ok"},
        user_turn("more")
    ]);
    let response = post_json(
        format!("{}/chat/completions", server.openai_base_url()),
        &json!({"model": "m", "messages": openai_history}),
    )
    .await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.expect("json");
    assert_eq!(
        body["error"]["message"],
        "mock: no scripted step matches this request (turn 2, 1 tool results)"
    );
    assert_eq!(body["error"]["type"], "invalid_request_error");
}

#[tokio::test]
async fn the_script_can_be_replaced_while_running() {
    let server = start(Script::linear(vec![vec![Item::Text("first".into())]])).await;
    let url = server.anthropic_base_url();
    assert_eq!(
        ask_anthropic(&url, json!([user_turn("hi")])).await.1,
        "first"
    );
    server.set_script(Script::linear(vec![vec![Item::Text("second".into())]]));
    assert_eq!(
        ask_anthropic(&url, json!([user_turn("hi")])).await.1,
        "second"
    );

    // The same over HTTP, for people driving `gyre mock-server`.
    let replaced = crate::client()
        .post(format!("{}/__mock/script", server.url()))
        .json(&json!({"steps": [{"reply": {"items": [{"text": "third"}]}}]}))
        .send()
        .await
        .expect("sent");
    assert_eq!(replaced.status(), 204);
    assert_eq!(
        ask_anthropic(&url, json!([user_turn("hi")])).await.1,
        "third"
    );
}

/// The text of a non-streaming answer of any API (by the shape of its JSON).
async fn ask(url: String, body: Value) -> (u16, String) {
    let response = post_json(url, &body).await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.expect("json");
    let text = [
        "/output/0/content/0/text",
        "/candidates/0/content/parts/0/text",
        "/error/message",
    ]
    .iter()
    .find_map(|pointer| body.pointer(pointer).and_then(Value::as_str))
    .unwrap_or_else(|| panic!("no text in {body}"));
    (status, text.to_string())
}

fn by_turn_and_results(turn: u32, tool_results: u32, text: &str) -> Step {
    step(
        When {
            turn: Some(turn),
            tool_results: Some(tool_results),
            ..When::default()
        },
        None,
        text,
    )
}

#[tokio::test]
async fn responses_requests_match_by_turn_and_tool_results() {
    let server = start(Script {
        context_window: None,
        steps: vec![
            by_turn_and_results(0, 0, "first answer"),
            by_turn_and_results(1, 2, "after two results"),
            step(
                When {
                    last_message_contains: Some("needle".into()),
                    ..When::default()
                },
                None,
                "found the needle",
            ),
        ],
    })
    .await;
    let url = format!("{}/responses", server.openai_base_url());
    assert_eq!(
        ask(url.clone(), json!({"model": "m", "input": "hi"})).await,
        (200, "first answer".into())
    );
    // One earlier answer: reasoning, text and two calls are one turn.
    let history = json!([
        {"role": "user", "content": "hi"},
        {"type": "reasoning", "id": "rs", "summary": [], "encrypted_content": "e"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "one"},
        {"type": "function_call_output", "call_id": "c2", "output": "the needle"}
    ]);
    assert_eq!(
        ask(url.clone(), json!({"model": "m", "input": history})).await,
        (200, "after two results".into())
    );
    let one_result = json!([
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "the needle"}
    ]);
    assert_eq!(
        ask(url.clone(), json!({"model": "m", "input": one_result})).await,
        (200, "found the needle".into())
    );
    let unmatched = json!([
        {"role": "user", "content": "hi"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]},
        {"role": "user", "content": "again"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "b"}]},
        {"role": "user", "content": "and again"}
    ]);
    let (status, message) = ask(url, json!({"model": "m", "input": unmatched})).await;
    assert_eq!(status, 400);
    assert_eq!(
        message,
        "mock: no scripted step matches this request (turn 2, 0 tool results)"
    );
    let apis: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| serde_json::to_value(r.api).expect("json"))
        .collect();
    assert!(apis.iter().all(|api| api == "openai-responses"), "{apis:?}");
}

#[tokio::test]
async fn gemini_requests_match_by_turn_tool_results_and_body() {
    let server = start(Script {
        context_window: None,
        steps: vec![
            step(
                When {
                    body_contains: Some("\"temperature\":0.25".into()),
                    ..When::default()
                },
                None,
                "by body",
            ),
            by_turn_and_results(0, 0, "first answer"),
            by_turn_and_results(1, 2, "after two results"),
        ],
    })
    .await;
    let url = format!(
        "{}/v1beta/models/gemini-x:generateContent",
        server.gemini_base_url()
    );
    let user = |text: &str| json!({"role": "user", "parts": [{"text": text}]});
    assert_eq!(
        ask(url.clone(), json!({"contents": [user("hi")]})).await,
        (200, "first answer".into())
    );
    let history = json!([
        user("hi"),
        {"role": "model", "parts": [
            {"functionCall": {"name": "read", "args": {"file_path": "a"}}},
            {"functionCall": {"name": "read", "args": {"file_path": "b"}}}
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "read", "response": {"output": "A"}}},
            {"functionResponse": {"name": "read", "response": {"output": "B"}}}
        ]}
    ]);
    assert_eq!(
        ask(url.clone(), json!({"contents": history})).await,
        (200, "after two results".into())
    );
    assert_eq!(
        ask(
            url.clone(),
            json!({"contents": [user("hi")], "generationConfig": {"temperature": 0.25}})
        )
        .await,
        (200, "by body".into())
    );
    let (status, message) = ask(
        url,
        json!({"contents": [user("hi"), {"role": "model", "parts": [{"text": "x"}]}, user("y")]}),
    )
    .await;
    assert_eq!(status, 400);
    assert!(message.contains("turn 1, 0 tool results"), "{message}");
}
