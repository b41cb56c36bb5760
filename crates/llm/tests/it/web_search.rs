//! Provider-side web search (`[web_search]`): the tool each API declares,
//! and a recorded-shape stream with a search and citations decoded. The
//! fixtures follow the shapes the providers document (Anthropic's
//! `server_tool_use` / `web_search_tool_result` / `citations_delta`,
//! OpenAI Responses' `web_search_call` and `url_citation` annotations,
//! Gemini's `groundingMetadata`).

use std::sync::Arc;

use gyre_llm::{ModelEvent, Sampling, WebSearch};
use gyre_protocol::{Message, Part, StopReason, ToolSpec};
use serde_json::{Value, json};

use crate::anthropic::{ls_tool, request};
use crate::clients::{anthropic, chat, gemini, responses};
use crate::drain;
use crate::sampling::Connect;
use crate::server::{Server, response, sse_response};

fn search(max_uses: Option<u32>) -> Sampling {
    Sampling {
        web_search: Some(WebSearch { max_uses }),
        ..Sampling::default()
    }
}

/// The body `connect`'s client sends for `model`.
async fn body(connect: Connect, model: &str, sampling: &Sampling, tools: &[ToolSpec]) -> Value {
    let mut server = Server::start(response("400 Bad Request", &[], "{}")).await;
    let client = connect(server.url.clone());
    let messages = vec![Arc::new(Message::user_text("u1", "what is new?"))];
    let mut request = request(&messages, tools);
    request.model = model;
    request.sampling = sampling;
    let _ = drain(client.stream(&request)).await;
    server.request().await.body
}

/// The events of `transcript` served to `connect`'s client.
async fn decode(connect: Connect, model: &str, transcript: &str) -> Vec<ModelEvent> {
    let server = Server::start(sse_response(transcript)).await;
    let client = connect(server.url.clone());
    let messages = vec![Arc::new(Message::user_text("u1", "what is new?"))];
    let sampling = search(None);
    let mut request = request(&messages, &[]);
    request.model = model;
    request.sampling = &sampling;
    let (events, error) = drain(client.stream(&request)).await;
    assert!(error.is_none(), "{error:?}");
    events
}

/// The completed text parts, and that no tool call was made.
fn texts(events: &[ModelEvent]) -> Vec<String> {
    assert!(
        !events.iter().any(|e| matches!(
            e,
            ModelEvent::ToolCallStarted { .. } | ModelEvent::PartCompleted(Part::ToolCall(_))
        )),
        "a server-side search is no tool call: {events:?}"
    );
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finished(StopReason::EndTurn))
    );
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::PartCompleted(Part::Text { text }) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The deltas add up to the completed parts, so what streams is what stays.
fn assert_deltas_match(events: &[ModelEvent]) {
    let deltas: String = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, texts(events).concat());
}

#[tokio::test]
async fn each_api_declares_its_own_search_tool() {
    let on = search(Some(3));
    let body_of = body(anthropic, "claude-sonnet-4-5", &on, &ls_tool()).await;
    let tools = body_of["tools"].as_array().unwrap();
    assert_eq!(
        tools[0],
        json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 3})
    );
    // The cache breakpoint stays on the last function tool.
    assert_eq!(tools[1]["name"], "ls");
    assert_eq!(tools[1]["cache_control"], json!({"type": "ephemeral"}));

    let body_of = body(responses, "gpt-5", &on, &ls_tool()).await;
    let tools = body_of["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["name"], "ls");
    assert_eq!(tools[1], json!({"type": "web_search"}));

    // Gemini 3 combines Google Search with function calling.
    let body_of = body(gemini, "gemini-3-pro-preview", &on, &ls_tool()).await;
    let tools = body_of["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["functionDeclarations"][0]["name"], "ls");
    assert_eq!(tools[1], json!({"google_search": {}}));
    // Gemini 2.5 refuses the combination: search only without functions.
    let body_of = body(gemini, "gemini-2.5-flash", &on, &ls_tool()).await;
    assert_eq!(body_of["tools"].as_array().unwrap().len(), 1);
    let body_of = body(gemini, "gemini-2.5-flash", &on, &[]).await;
    assert_eq!(body_of["tools"], json!([{"google_search": {}}]));

    // Chat Completions has no server-side search: not offered.
    let body_of = body(chat, "gpt-4.1", &on, &ls_tool()).await;
    let tools = body_of["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["function"]["name"], "ls");
}

#[tokio::test]
async fn search_off_sends_the_body_unchanged() {
    for connect in [anthropic as Connect, responses, gemini] {
        let off = body(connect, "gemini-3-pro-preview", &Sampling::NONE, &ls_tool()).await;
        let text = off.to_string();
        assert!(
            !text.contains("web_search") && !text.contains("google_search"),
            "{text}"
        );
    }
}

const ANTHROPIC: &str = concat!(
    "event: message_start\n",
    r#"data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":2679,"output_tokens":3}}}"#,
    "\n\n",
    "event: content_block_start\n",
    r#"data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"I'll check."}}"#,
    "\n\n",
    "event: content_block_stop\n",
    r#"data: {"type":"content_block_stop","index":0}"#,
    "\n\n",
    "event: content_block_start\n",
    r#"data: {"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_014hJH82Qum7Td6UV8gDXThB","name":"web_search","input":{}}}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"claude shan"}}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"non release\"}"}}"#,
    "\n\n",
    "event: content_block_stop\n",
    r#"data: {"type":"content_block_stop","index":1}"#,
    "\n\n",
    "event: content_block_start\n",
    r#"data: {"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_014hJH82Qum7Td6UV8gDXThB","content":[{"type":"web_search_result","title":"Claude Shannon - Wikipedia","url":"https://en.wikipedia.org/wiki/Claude_Shannon","encrypted_content":"EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5","page_age":"April 30, 2025"}]}}"#,
    "\n\n",
    "event: content_block_stop\n",
    r#"data: {"type":"content_block_stop","index":2}"#,
    "\n\n",
    "event: content_block_start\n",
    r#"data: {"type":"content_block_start","index":3,"content_block":{"type":"text","text":"","citations":[]}}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":3,"delta":{"type":"citations_delta","citation":{"type":"web_search_result_location","cited_text":"Claude Elwood Shannon (April 30, 1916 – February 24, 2001) was an American mathematician","url":"https://en.wikipedia.org/wiki/Claude_Shannon","title":"Claude Shannon - Wikipedia","encrypted_index":"Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm"}}}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"Shannon was born on April 30, 1916."}}"#,
    "\n\n",
    "event: content_block_stop\n",
    r#"data: {"type":"content_block_stop","index":3}"#,
    "\n\n",
    "event: message_delta\n",
    r#"data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":10682,"output_tokens":510,"server_tool_use":{"web_search_requests":1}}}"#,
    "\n\n",
    "event: message_stop\n",
    r#"data: {"type":"message_stop"}"#,
    "\n\n",
);

const FOUND: &str = "\n\nSearched the web: \"claude shannon release\"\nSources:\n- Claude Shannon - Wikipedia: https://en.wikipedia.org/wiki/Claude_Shannon\n";

#[tokio::test]
async fn anthropic_search_and_citations_are_shown_after_the_answer() {
    let events = decode(anthropic, "claude-sonnet-4-5", ANTHROPIC).await;
    assert_eq!(
        texts(&events),
        ["I'll check.", "Shannon was born on April 30, 1916.", FOUND]
    );
    assert_deltas_match(&events);
}

const RESPONSES: &str = concat!(
    "event: response.created\n",
    r#"data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}"#,
    "\n\n",
    "event: response.output_item.added\n",
    r#"data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"web_search_call","id":"ws_1","status":"in_progress"}}"#,
    "\n\n",
    "event: response.web_search_call.in_progress\n",
    r#"data: {"type":"response.web_search_call.in_progress","sequence_number":2,"output_index":0,"item_id":"ws_1"}"#,
    "\n\n",
    "event: response.web_search_call.searching\n",
    r#"data: {"type":"response.web_search_call.searching","sequence_number":3,"output_index":0,"item_id":"ws_1"}"#,
    "\n\n",
    "event: response.web_search_call.completed\n",
    r#"data: {"type":"response.web_search_call.completed","sequence_number":4,"output_index":0,"item_id":"ws_1"}"#,
    "\n\n",
    "event: response.output_item.done\n",
    r#"data: {"type":"response.output_item.done","sequence_number":5,"output_index":0,"item":{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"positive news story today"}}}"#,
    "\n\n",
    "event: response.output_item.added\n",
    r#"data: {"type":"response.output_item.added","sequence_number":6,"output_index":1,"item":{"type":"message","id":"msg_1","status":"in_progress","role":"assistant","content":[]}}"#,
    "\n\n",
    "event: response.output_text.delta\n",
    r#"data: {"type":"response.output_text.delta","sequence_number":7,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"Otters returned to the river."}"#,
    "\n\n",
    "event: response.output_text.annotation.added\n",
    r#"data: {"type":"response.output_text.annotation.added","sequence_number":8,"item_id":"msg_1","output_index":1,"content_index":0,"annotation_index":0,"annotation":{"type":"url_citation","start_index":0,"end_index":29,"url":"https://news.example.org/otters?utm_source=openai","title":"Otters are back"}}"#,
    "\n\n",
    "event: response.output_item.done\n",
    r#"data: {"type":"response.output_item.done","sequence_number":9,"output_index":1,"item":{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Otters returned to the river.","annotations":[{"type":"url_citation","start_index":0,"end_index":29,"url":"https://news.example.org/otters?utm_source=openai","title":"Otters are back"}]}]}}"#,
    "\n\n",
    "event: response.completed\n",
    r#"data: {"type":"response.completed","sequence_number":10,"response":{"id":"resp_1","object":"response","status":"completed","usage":{"input_tokens":320,"output_tokens":40,"total_tokens":360}}}"#,
    "\n\n",
);

#[tokio::test]
async fn responses_search_and_citations_are_shown_after_the_answer() {
    let events = decode(responses, "gpt-5", RESPONSES).await;
    assert_eq!(
        texts(&events),
        [
            "Otters returned to the river.",
            "\n\nSearched the web: \"positive news story today\"\nSources:\n- Otters are back: https://news.example.org/otters?utm_source=openai\n"
        ]
    );
    assert_deltas_match(&events);
}

const GEMINI: &str = concat!(
    "data: ",
    r#"{"candidates":[{"content":{"parts":[{"text":"Spain won Euro 2024"}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"r1"}"#,
    "\r\n\r\n",
    "data: ",
    r#"{"candidates":[{"content":{"parts":[{"text":", beating England 2-1."}],"role":"model"},"finishReason":"STOP","index":0,"groundingMetadata":{"webSearchQueries":["UEFA Euro 2024 winner","who won euro 2024"],"searchEntryPoint":{"renderedContent":"<!-- HTML and CSS -->"},"groundingChunks":[{"web":{"uri":"https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbC1","title":"aljazeera.com"}},{"web":{"uri":"https://vertexaisearch.cloud.google.com/grounding-api-redirect/DeF2","title":"uefa.com"}}],"groundingSupports":[{"segment":{"startIndex":0,"endIndex":41,"text":"Spain won Euro 2024, beating England 2-1."},"groundingChunkIndices":[0,1]}]}}],"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":11,"totalTokenCount":23},"modelVersion":"gemini-2.5-flash","responseId":"r1"}"#,
    "\r\n\r\n",
);

#[tokio::test]
async fn gemini_grounding_is_shown_after_the_answer() {
    let events = decode(gemini, "gemini-2.5-flash", GEMINI).await;
    assert_eq!(
        texts(&events),
        [
            "Spain won Euro 2024, beating England 2-1.",
            "\n\nSearched the web: \"UEFA Euro 2024 winner\", \"who won euro 2024\"\nSources:\n- aljazeera.com: https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbC1\n- uefa.com: https://vertexaisearch.cloud.google.com/grounding-api-redirect/DeF2\n"
        ]
    );
    assert_deltas_match(&events);
}
