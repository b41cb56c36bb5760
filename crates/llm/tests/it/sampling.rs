//! Temperature, top_p and provider options, as each wire sends them: the body
//! with them is the body without them plus exactly the expected fields.

use std::sync::Arc;

use gyre_llm::{
    AnthropicClient, ClientConfig, GeminiClient, ModelClient, OpenAiChatClient,
    OpenAiResponsesClient, Sampling,
};
use gyre_protocol::Message;
use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};

use crate::anthropic::{ls_tool, request};
use crate::drain;
use crate::server::{Server, response};

pub(crate) type Connect = fn(String) -> Box<dyn ModelClient>;

/// The bodies `client` sends for `model` without sampling, with
/// temperature 0.7 and top_p 0.9, and with those plus `options`.
pub(crate) async fn bodies(connect: Connect, model: &str, options: Value) -> [Value; 3] {
    let Value::Object(options) = options else {
        panic!("provider options are an object");
    };
    let sampled = Sampling {
        temperature: Some(0.7),
        top_p: Some(0.9),
        ..Sampling::default()
    };
    let with_options = Sampling {
        provider_options: Some(options),
        ..sampled.clone()
    };
    let mut out = Vec::new();
    for sampling in [&Sampling::NONE, &sampled, &with_options] {
        // The answer does not matter, only what was sent.
        let mut server = Server::start(response("400 Bad Request", &[], "{}")).await;
        let client = connect(server.url.clone());
        let messages = vec![Arc::new(Message::user_text("u1", "list the files"))];
        let tools = ls_tool();
        let mut request = request(&messages, &tools);
        request.model = model;
        request.sampling = sampling;
        let _ = drain(client.stream(&request)).await;
        out.push(server.request().await.body);
    }
    out.try_into().unwrap()
}

/// `base` with `fields` set at the top level or, for Gemini, in
/// `generationConfig`.
fn with(base: &Value, fields: &[(&str, Value)], in_generation_config: bool) -> Value {
    let mut value = base.clone();
    let target: &mut Map<String, Value> = if in_generation_config {
        value["generationConfig"].as_object_mut().unwrap()
    } else {
        value.as_object_mut().unwrap()
    };
    for (key, field) in fields {
        target.insert((*key).to_owned(), field.clone());
    }
    value
}

pub(crate) fn assert_lacks(body: &Value, keys: &[&str]) {
    for key in keys {
        assert!(body.get(key).is_none(), "{key} in {body}");
    }
}

#[tokio::test]
async fn anthropic_sends_them_top_level() {
    let connect: Connect = |url| {
        Box::new(AnthropicClient::new(ClientConfig::new(
            url,
            Some("k".into()),
        )))
    };
    let thinking = json!({"type": "enabled", "budget_tokens": 2048});
    let [plain, sampled, full] = bodies(
        connect,
        "claude-x",
        json!({"thinking": thinking, "max_tokens": 4096}),
    )
    .await;
    assert_lacks(&plain, &["temperature", "top_p", "thinking"]);
    assert_eq!(plain["max_tokens"], json!(1000));
    let sampling = [("temperature", json!(0.7)), ("top_p", json!(0.9))];
    assert_eq!(sampled, with(&plain, &sampling, false));
    let options = [("thinking", thinking), ("max_tokens", json!(4096))];
    assert_eq!(full, with(&sampled, &options, false));
}

#[tokio::test]
async fn openai_chat_sends_them_top_level() {
    let connect: Connect = |url| {
        Box::new(OpenAiChatClient::new(ClientConfig::new(
            url,
            Some("k".into()),
        )))
    };
    let [plain, sampled, full] = bodies(
        connect,
        "gpt-x",
        // A nested object merges into the body's own.
        json!({"reasoning_effort": "high", "stream_options": {"include_obfuscation": false}}),
    )
    .await;
    assert_lacks(&plain, &["temperature", "top_p", "reasoning_effort"]);
    assert_eq!(plain["stream_options"], json!({"include_usage": true}));
    let sampling = [("temperature", json!(0.7)), ("top_p", json!(0.9))];
    assert_eq!(sampled, with(&plain, &sampling, false));
    let options = [
        ("reasoning_effort", json!("high")),
        (
            "stream_options",
            json!({"include_usage": true, "include_obfuscation": false}),
        ),
    ];
    assert_eq!(full, with(&sampled, &options, false));
}

#[tokio::test]
async fn openai_responses_sends_them_top_level() {
    let connect: Connect = |url| {
        Box::new(OpenAiResponsesClient::new(ClientConfig::new(
            url,
            Some("k".into()),
        )))
    };
    let [plain, sampled, full] = bodies(
        connect,
        "gpt-5",
        // Options win, also over temperature.
        json!({"reasoning": {"effort": "high"}, "text": {"verbosity": "low"}, "temperature": 1}),
    )
    .await;
    assert_lacks(&plain, &["temperature", "top_p", "text"]);
    assert_eq!(plain["reasoning"], json!({"summary": "auto"}));
    // A reasoning model refuses sampling parameters: they are not sent.
    assert_eq!(sampled, plain);
    let [plain_41, sampled_41, _] = bodies(connect, "gpt-4.1", json!({})).await;
    let sampling = [("temperature", json!(0.7)), ("top_p", json!(0.9))];
    assert_eq!(sampled_41, with(&plain_41, &sampling, false));
    let options = [
        ("reasoning", json!({"summary": "auto", "effort": "high"})),
        ("text", json!({"verbosity": "low"})),
        ("temperature", json!(1)),
    ];
    assert_eq!(full, with(&sampled, &options, false));
}

#[tokio::test]
async fn gemini_sends_them_in_generation_config() {
    let connect: Connect =
        |url| Box::new(GeminiClient::new(ClientConfig::new(url, Some("k".into()))));
    let [plain, sampled, full] = bodies(
        connect,
        "gemini-2.5-pro",
        json!({
            "generationConfig": {"thinkingConfig": {"thinkingBudget": 1024}, "topK": 40},
            "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        }),
    )
    .await;
    assert_lacks(&plain, &["temperature", "top_p", "topP", "safetySettings"]);
    assert_eq!(
        plain["generationConfig"],
        json!({"maxOutputTokens": 1000, "thinkingConfig": {"includeThoughts": true}})
    );
    let sampling = [("temperature", json!(0.7)), ("topP", json!(0.9))];
    assert_eq!(sampled, with(&plain, &sampling, true));
    // generationConfig went through a merge: 0.7 must still be 0.7.
    let merged = [
        (
            "thinkingConfig",
            json!({"includeThoughts": true, "thinkingBudget": 1024}),
        ),
        ("topK", json!(40)),
    ];
    let mut expected = with(&sampled, &merged, true);
    expected["safetySettings"] =
        json!([{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]);
    assert_eq!(full, expected);
}
