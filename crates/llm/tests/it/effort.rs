//! `--effort` and `--json-schema` as each wire API sends them: the request
//! body carries the API's own fields (Anthropic thinking with its budget and
//! no temperature, OpenAI `reasoning_effort` / `reasoning.effort`, Gemini
//! `thinkingConfig`; OpenAI's `response_format` / `text.format`, Gemini's
//! `responseJsonSchema` without tools).

use std::sync::Arc;

use gyre_llm::{Effort, Sampling};
use gyre_protocol::{Message, ToolSpec};
use serde_json::{Value, json};

use crate::anthropic::{ls_tool, request};
use crate::clients::{anthropic, chat, gemini, responses};
use crate::drain;
use crate::sampling::{Connect, assert_lacks};
use crate::server::{Server, response};

/// The body `connect`'s client sends for `model` with `sampling`.
async fn body(
    connect: Connect,
    model: &str,
    sampling: &Sampling,
    max_output_tokens: u32,
    tools: &[ToolSpec],
) -> Value {
    let mut server = Server::start(response("400 Bad Request", &[], "{}")).await;
    let client = connect(server.url.clone());
    let messages = vec![Arc::new(Message::user_text("u1", "think hard"))];
    let mut request = request(&messages, tools);
    request.model = model;
    request.sampling = sampling;
    request.max_output_tokens = max_output_tokens;
    let _ = drain(client.stream(&request)).await;
    server.request().await.body
}

fn effort(effort: Effort) -> Sampling {
    Sampling {
        temperature: Some(0.2),
        effort: Some(effort),
        ..Sampling::default()
    }
}

fn schema() -> Sampling {
    Sampling {
        output_schema: Some(Arc::new(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        )),
        ..Sampling::default()
    }
}

#[tokio::test]
async fn anthropic_thinks_with_a_budget_and_no_temperature() {
    let tools = ls_tool();
    let high = body(
        anthropic,
        "claude-sonnet-4-5",
        &effort(Effort::High),
        64_000,
        &tools,
    )
    .await;
    assert_eq!(
        high["thinking"],
        json!({"type": "enabled", "budget_tokens": 20000})
    );
    assert_lacks(&high, &["temperature", "top_p"]);
    // The budget stays under the output limit.
    let max = body(
        anthropic,
        "claude-sonnet-4-5",
        &effort(Effort::Max),
        8_192,
        &tools,
    )
    .await;
    assert_eq!(max["thinking"]["budget_tokens"], json!(4096));
    // No room to think: no thinking, and the temperature stays.
    let none = body(
        anthropic,
        "claude-sonnet-4-5",
        &effort(Effort::Low),
        1_000,
        &tools,
    )
    .await;
    assert_lacks(&none, &["thinking"]);
    assert_eq!(none["temperature"], json!(0.2));
    // No native structured output: the loop's instruction and check do it.
    let schema = body(anthropic, "claude-sonnet-4-5", &schema(), 8_192, &tools).await;
    assert_lacks(&schema, &["thinking", "output_format", "response_format"]);
}

#[tokio::test]
async fn openai_chat_sends_reasoning_effort_and_response_format() {
    let tools = ls_tool();
    let low = body(chat, "o4-mini", &effort(Effort::Low), 8_000, &tools).await;
    assert_eq!(low["reasoning_effort"], json!("low"));
    // A reasoning model refuses temperature.
    assert_lacks(&low, &["temperature"]);
    let max = body(chat, "gpt-5", &effort(Effort::Max), 8_000, &tools).await;
    assert_eq!(max["reasoning_effort"], json!("high"));
    let plain = body(chat, "gpt-4.1", &Sampling::default(), 8_000, &tools).await;
    assert_lacks(&plain, &["reasoning_effort", "response_format"]);

    let structured = body(chat, "gpt-4.1", &schema(), 8_000, &tools).await;
    assert_eq!(
        structured["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "final_answer", "strict": false,
            "schema": {"type": "object", "properties": {"n": {"type": "integer"}}}}})
    );
}

#[tokio::test]
async fn openai_responses_sends_reasoning_effort_and_text_format() {
    let tools = ls_tool();
    let medium = body(responses, "gpt-5", &effort(Effort::Medium), 8_000, &tools).await;
    assert_eq!(
        medium["reasoning"],
        json!({"effort": "medium", "summary": "auto"})
    );
    assert_lacks(&medium, &["temperature"]);
    let structured = body(responses, "gpt-5", &schema(), 8_000, &tools).await;
    assert_eq!(
        structured["text"],
        json!({"format": {"type": "json_schema", "name": "final_answer", "strict": false,
            "schema": {"type": "object", "properties": {"n": {"type": "integer"}}}}})
    );
}

#[tokio::test]
async fn gemini_sends_a_thinking_budget_or_level() {
    let tools = ls_tool();
    let high = body(
        gemini,
        "gemini-2.5-pro",
        &effort(Effort::High),
        8_000,
        &tools,
    )
    .await;
    assert_eq!(
        high["generationConfig"]["thinkingConfig"],
        json!({"includeThoughts": true, "thinkingBudget": 16384})
    );
    // Gemini keeps its temperature with thinking.
    assert_eq!(high["generationConfig"]["temperature"], json!(0.2));
    let three = body(
        gemini,
        "gemini-3-pro-preview",
        &effort(Effort::Low),
        8_000,
        &tools,
    )
    .await;
    assert_eq!(
        three["generationConfig"]["thinkingConfig"],
        json!({"includeThoughts": true, "thinkingLevel": "low"})
    );
    // A response schema only without tools.
    let with_tools = body(gemini, "gemini-2.5-pro", &schema(), 8_000, &tools).await;
    assert!(
        with_tools["generationConfig"]
            .get("responseJsonSchema")
            .is_none()
    );
    let bare = body(gemini, "gemini-2.5-pro", &schema(), 8_000, &[]).await;
    assert_eq!(
        bare["generationConfig"]["responseMimeType"],
        json!("application/json")
    );
    assert_eq!(
        bare["generationConfig"]["responseJsonSchema"]["properties"]["n"],
        json!({"type": "integer"})
    );
}
