//! `[web_search]`: the provider's server-side search declared in the
//! model's request by default, left out when the config turns it off, and
//! its searches and cited sources shown in the run's answer (the per-API
//! mapping and decoding are pinned in gyre-llm's own tests).

use gyre_mock::{MockServer, Script};
use serde_json::{Value, json};

use crate::common::*;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/streams/anthropic-web-search-citations.sse"
);

async fn first_request(env: &Env) -> Value {
    first_request_with(env, &[]).await
}

async fn first_request_with(env: &Env, extra: &[&str]) -> Value {
    let server = MockServer::start(always("ok")).await.unwrap();
    let mut args = vec!["run", "news?", "--output-format", "json"];
    args.extend_from_slice(extra);
    let out = output(env.gyre_on(&server, &args)).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(!stderr(&out).contains("names no tool"), "{}", stderr(&out));
    server.requests()[0].body.clone()
}

fn search_tools(body: &Value) -> Vec<Value> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t.get("type").is_some())
        .cloned()
        .collect()
}

#[tokio::test]
async fn the_search_tool_is_declared_by_default_and_configurable() {
    let env = Env::new();
    let plain = first_request(&env).await;
    assert_eq!(
        search_tools(&plain),
        [json!({"type": "web_search_20250305", "name": "web_search"})]
    );

    env.write_user_config("[web_search]\nmax_uses = 2\n");
    let limited = first_request(&env).await;
    assert_eq!(
        search_tools(&limited),
        [json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 2})]
    );

    // Like a tool: a deny rule (Claude Code's name too) or `--tools`
    // without it takes it away.
    for extra in [
        &["--disallowedTools", "WebSearch"][..],
        &["--tools", "read,bash"],
    ] {
        let narrowed = first_request_with(&env, extra).await;
        assert!(search_tools(&narrowed).is_empty(), "{extra:?}: {narrowed}");
    }
    let kept = first_request_with(&env, &["--tools", "read,WebSearch"]).await;
    assert_eq!(search_tools(&kept).len(), 1, "{kept}");

    env.write_user_config("[web_search]\nenabled = false\n");
    let off = first_request(&env).await;
    assert!(search_tools(&off).is_empty(), "{off}");
    assert!(!off.to_string().contains("web_search"), "{off}");
}

/// stream-json's `system/init` lists the search with the tools where the
/// request offers it (the Agent SDKs read the list), and not where it is
/// off or the API has none (OpenAI Chat Completions).
#[tokio::test]
async fn the_init_line_lists_the_search_where_it_is_offered() {
    let env = Env::new();
    let server = MockServer::start(always("ok")).await.unwrap();
    let init_tools = |out: &std::process::Output| -> Vec<String> {
        assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
        let lines = json_lines(out);
        assert_eq!(lines[0]["subtype"], "init");
        serde_json::from_value(lines[0]["tools"].clone()).unwrap()
    };
    let anthropic = output(env.run_on(&server, "news?", &[])).await;
    assert!(init_tools(&anthropic).contains(&"web_search".to_owned()));

    let mut chat = env.run_on(&server, "news?", &["--provider", "openai"]);
    chat.env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", server.openai_base_url());
    let chat = output(chat).await;
    let tools = init_tools(&chat);
    assert!(tools.contains(&"read".to_owned()) && !tools.contains(&"web_search".to_owned()));

    env.write_user_config("[web_search]\nenabled = false\n");
    let off = output(env.run_on(&server, "news?", &[])).await;
    assert!(!init_tools(&off).contains(&"web_search".to_owned()));
}

#[tokio::test]
async fn the_answer_shows_the_searches_and_the_cited_sources() {
    let raw = std::fs::read_to_string(FIXTURE).unwrap();
    let script: Script =
        serde_json::from_value(json!({"steps": [{"reply": {"raw": raw}}]})).unwrap();
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let out = output(env.gyre_on(&server, &["run", "who?", "--output-format", "json"])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let text = result["result"].as_str().unwrap();
    assert!(
        text.contains("Shannon was born on April 30, 1916."),
        "{text}"
    );
    assert!(
        text.contains("Searched the web: \"claude shannon release\""),
        "{text}"
    );
    assert!(
        text.contains("- Claude Shannon - Wikipedia: https://en.wikipedia.org/wiki/Claude_Shannon"),
        "{text}"
    );
    // The search ran on the provider's side: one request, no tool run.
    assert_eq!(server.requests().len(), 1);
    assert_eq!(result["num_turns"], json!(1), "{result}");
}
