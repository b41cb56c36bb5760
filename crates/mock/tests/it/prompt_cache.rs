//! The modelled prompt cache: a second request that appends to the first
//! reports the first one's prompt as cache reads, each API in the usage
//! fields its documentation names.

use gyre_mock::{Item, Reply, Script, Step, StreamReply};
use serde_json::{Value, json};

use crate::{client, start};

const APIS: [&str; 4] = ["anthropic", "openai_chat", "openai-responses", "gemini"];

/// A request of `turns` big user messages for `api` (non-streaming), with an
/// Anthropic breakpoint on the newest message.
fn request(api: &str, turns: usize) -> (String, Value) {
    let text = |i: usize| format!("{i} {}", "lorem ipsum dolor sit amet ".repeat(300));
    match api {
        "anthropic" => {
            let mut messages: Vec<Value> = (0..turns)
                .map(|i| json!({"role": "user", "content": [{"type": "text", "text": text(i)}]}))
                .collect();
            if let Some(last) = messages.last_mut() {
                last["content"][0]["cache_control"] = json!({"type": "ephemeral"});
            }
            (
                "/v1/messages".into(),
                json!({"model": "m", "max_tokens": 64, "system": "be brief", "messages": messages}),
            )
        }
        "openai_chat" => (
            "/v1/chat/completions".into(),
            json!({"model": "m", "messages": (0..turns)
                .map(|i| json!({"role": "user", "content": text(i)})).collect::<Vec<_>>()}),
        ),
        "openai-responses" => (
            "/v1/responses".into(),
            json!({"model": "m", "instructions": "be brief", "input": (0..turns)
                .map(|i| json!({"role": "user", "content": text(i)})).collect::<Vec<_>>()}),
        ),
        _ => (
            "/v1beta/models/m:generateContent".into(),
            json!({"contents": (0..turns)
                .map(|i| json!({"role": "user", "parts": [{"text": text(i)}]})).collect::<Vec<_>>()}),
        ),
    }
}

/// (uncached input, cache reads, cache writes) from a whole answer's usage.
fn split(api: &str, answer: &Value) -> (u64, u64, u64) {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    match api {
        "anthropic" => {
            let u = &answer["usage"];
            (
                n(&u["input_tokens"]),
                n(&u["cache_read_input_tokens"]),
                n(&u["cache_creation_input_tokens"]),
            )
        }
        "openai_chat" => {
            let u = &answer["usage"];
            let cached = n(&u["prompt_tokens_details"]["cached_tokens"]);
            (n(&u["prompt_tokens"]) - cached, cached, 0)
        }
        "openai-responses" => {
            let u = &answer["usage"];
            let cached = n(&u["input_tokens_details"]["cached_tokens"]);
            (n(&u["input_tokens"]) - cached, cached, 0)
        }
        _ => {
            let u = &answer["usageMetadata"];
            let cached = n(&u["cachedContentTokenCount"]);
            (n(&u["promptTokenCount"]) - cached, cached, 0)
        }
    }
}

#[tokio::test]
async fn an_appended_request_reads_the_earlier_prompt_from_the_cache() {
    let server = start(any_turn()).await;
    server.enable_prompt_cache();
    for api in APIS {
        let mut seen = Vec::new();
        for turns in [1, 2, 2] {
            let (path, body) = request(api, turns);
            let answer: Value = client()
                .post(format!("{}{path}", server.url()))
                .json(&body)
                .send()
                .await
                .expect("sent")
                .json()
                .await
                .expect("json");
            let recorded = server.requests().pop().expect("recorded");
            let (uncached, read, write) = split(api, &answer);
            assert_eq!(
                uncached + read + write,
                recorded.input_tokens,
                "{api}: {answer}"
            );
            assert_eq!(
                (read, write),
                (recorded.cache_read_tokens, recorded.cache_write_tokens)
            );
            seen.push((recorded.input_tokens, uncached, read, write));
        }
        let [
            (first, ..),
            (second, _, read2, write2),
            (_, uncached3, read3, write3),
        ] = seen[..]
        else {
            panic!("{seen:?}");
        };
        // The first request is new: nothing read (Anthropic writes it all).
        assert_eq!(seen[0].2, 0, "{api}: {seen:?}");
        // The second shares the first message: most of the first's count.
        assert!(read2 * 10 >= first * 9 && read2 <= first, "{api}: {seen:?}");
        // The same request again is served whole (OpenAI in 128-token steps).
        assert!(read3 + 128 > second && read3 <= second, "{api}: {seen:?}");
        if api == "anthropic" {
            assert_eq!((write2, uncached3), (second - read2, 0), "{seen:?}");
            assert_eq!(write3, second - read3);
        } else {
            assert_eq!((write2, write3), (0, 0), "{api}: {seen:?}");
        }
    }
}

#[tokio::test]
async fn without_the_cache_nothing_is_read() {
    let server = start(any_turn()).await;
    for _ in 0..2 {
        let (path, body) = request("openai_chat", 2);
        let answer: Value = client()
            .post(format!("{}{path}", server.url()))
            .json(&body)
            .send()
            .await
            .expect("sent")
            .json()
            .await
            .expect("json");
        assert_eq!(split("openai_chat", &answer).1, 0);
    }
}

/// "ok" to any request, any number of times.
fn any_turn() -> Script {
    Script::new(vec![Step {
        reply: Reply::Stream(StreamReply {
            items: vec![Item::Text("ok".into())],
            ..StreamReply::default()
        }),
        ..Step::default()
    }])
}
