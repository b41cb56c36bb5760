use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gyre_mock::{HttpReply, Reply, Script, Step};
use serde_json::{Value, json};

use crate::{post_json, start, streaming_endpoints};

fn http(status: u16, headers: &[(&str, &str)], body: Option<&str>) -> Script {
    Script {
        context_window: None,
        steps: vec![Step {
            reply: Reply::Http(HttpReply {
                status,
                headers: headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>(),
                body: body.map(str::to_string),
                ..HttpReply::default()
            }),
            ..Step::default()
        }],
    }
}

#[tokio::test]
async fn each_retry_after_form_reaches_every_api() {
    for headers in [
        [("retry-after-ms", "1500")],
        [("retry-after", "2")],
        [("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")],
    ] {
        let server = start(http(429, &headers, None)).await;
        for (api, url, body) in streaming_endpoints(&server) {
            let response = post_json(url, &body).await;
            assert_eq!(response.status(), 429, "{api}");
            let (name, value) = headers[0];
            assert_eq!(response.headers()[name], value, "{api}");
            let error: Value = response.json().await.expect("json");
            let kind = match api {
                "anthropic" => &error["error"]["type"],
                "gemini" => &error["error"]["status"],
                _ => &error["error"]["code"],
            };
            let expected = match api {
                "anthropic" => "rate_limit_error",
                "gemini" => "RESOURCE_EXHAUSTED",
                _ => "rate_limit_exceeded",
            };
            assert_eq!(kind, expected, "{api}: {error}");
        }
    }
}

#[tokio::test]
async fn a_gemini_retry_info_body_is_sent_verbatim() {
    let retry_info = json!({"error": {
        "code": 429,
        "message": "Resource has been exhausted (e.g. check quota).",
        "status": "RESOURCE_EXHAUSTED",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"}]
    }})
    .to_string();
    let server = start(http(429, &[], Some(&retry_info))).await;
    let (_, url, body) = streaming_endpoints(&server).remove(3);
    let response = post_json(url, &body).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(response.text().await.expect("body"), retry_info);
}

#[tokio::test]
async fn overloaded_and_server_errors_use_each_providers_words() {
    for (status, anthropic, openai, gemini) in [
        (529, "overloaded_error", "server_error", "UNAVAILABLE"),
        (500, "api_error", "server_error", "INTERNAL"),
        (503, "overloaded_error", "server_error", "UNAVAILABLE"),
    ] {
        let server = start(http(status, &[], None)).await;
        for (api, url, body) in streaming_endpoints(&server) {
            let response = post_json(url, &body).await;
            assert_eq!(response.status(), status, "{api}");
            let error: Value = response.json().await.expect("json");
            let (got, expected) = match api {
                "anthropic" => (&error["error"]["type"], anthropic),
                "gemini" => (&error["error"]["status"], gemini),
                _ => (&error["error"]["type"], openai),
            };
            assert_eq!(got, expected, "{api} {status}: {error}");
        }
    }
}

#[tokio::test]
async fn an_error_can_stall_before_its_headers() {
    let server = start(Script {
        context_window: None,
        steps: vec![Step {
            reply: Reply::Http(HttpReply {
                status: 500,
                stall_before_headers_ms: 200,
                ..HttpReply::default()
            }),
            ..Step::default()
        }],
    })
    .await;
    let (_, url, body) = streaming_endpoints(&server).remove(0);
    let started = Instant::now();
    let response = post_json(url, &body).await;
    assert_eq!(response.status(), 500);
    assert!(started.elapsed() >= Duration::from_millis(200));
}
