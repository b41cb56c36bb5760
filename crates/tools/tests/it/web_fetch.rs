use std::convert::Infallible;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{Html, Redirect};
use axum::routing::get;
use gyre_tools::{Tool, ToolError, ToolKind, Typed, WebFetchTool};
use serde_json::json;

use crate::Fixture;

const PAGE: &str = "<!doctype html><html><head><title>T</title>\
<script>steal()</script><style>p{}</style></head><body>\
<h1>Hello</h1><p>Some <b>bold</b> text and a <a href=\"https://example.com/\">link</a>.</p>\
<ul><li>one</li><li>two</li></ul></body></html>";

/// A local server; returns its base URL.
async fn serve() -> String {
    let app = Router::new()
        .route("/page", get(|| async { Html(PAGE) }))
        .route("/moved", get(|| async { Redirect::to("/page") }))
        .route(
            "/json",
            get(|| async { ([(CONTENT_TYPE, "application/json")], "{\"a\": 1}") }),
        )
        .route(
            "/endless",
            get(|| async {
                let chunks = futures::stream::repeat_with(|| {
                    Ok::<_, Infallible>(Bytes::from(vec![b'a'; 8192]))
                });
                ([(CONTENT_TYPE, "text/plain")], Body::from_stream(chunks))
            }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "late"
            }),
        )
        .route(
            "/missing",
            get(|| async { (StatusCode::NOT_FOUND, Html("<p>No such page</p>")) }),
        )
        .route(
            "/image",
            get(|| async {
                (
                    [(CONTENT_TYPE, "image/png")],
                    vec![0x89u8, b'P', b'N', b'G', 0, 0],
                )
            }),
        )
        .route(
            "/latin1",
            get(|| async {
                (
                    [(CONTENT_TYPE, "text/plain; charset=iso-8859-1")],
                    vec![b'c', b'a', b'f', 0xe9],
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

#[tokio::test]
async fn html_becomes_markdown() {
    let (fx, base) = (Fixture::new(), serve().await);
    let out = fx
        .call("web_fetch", json!({"url": format!("{base}/page")}))
        .await
        .unwrap();
    let text = crate::text(&out);
    assert!(crate::is_success(&out));
    assert!(
        text.starts_with(&format!(
            "URL: {base}/page\nStatus: 200 OK\nContent-Type: text/html; charset=utf-8\n\n"
        )),
        "{text}"
    );
    assert!(text.contains("# Hello"), "{text}");
    assert!(
        text.contains("Some **bold** text and a [link](https://example.com/)."),
        "{text}"
    );
    assert!(text.contains("*   one") || text.contains("- one"), "{text}");
    assert!(!text.contains("steal") && !text.contains("p{}"), "{text}");
    assert!(
        out.title.starts_with("web_fetch 127.0.0.1/page (200, "),
        "{}",
        out.title
    );
}

#[tokio::test]
async fn redirects_are_followed_and_json_passes_through() {
    let (fx, base) = (Fixture::new(), serve().await);
    let text = fx
        .ok("web_fetch", json!({"url": format!("{base}/moved")}))
        .await;
    assert!(text.starts_with(&format!("URL: {base}/page\n")), "{text}");
    let text = fx
        .ok("web_fetch", json!({"url": format!("{base}/json")}))
        .await;
    assert!(text.ends_with("\n\n{\"a\": 1}\n"), "{text}");
    let text = fx
        .ok("web_fetch", json!({"url": format!("{base}/latin1")}))
        .await;
    assert!(text.ends_with("\n\ncafé\n"), "{text}");
}

#[tokio::test]
async fn an_endless_body_is_cut_at_max_bytes() {
    let (fx, base) = (Fixture::new(), serve().await);
    let text = fx
        .ok(
            "web_fetch",
            json!({"url": format!("{base}/endless"), "max_bytes": 20_000}),
        )
        .await;
    let body = text.split("\n\n").nth(1).unwrap();
    let (body, _marker) = body.split_once("\n[... ").unwrap();
    assert_eq!(body.len(), 20_000);
    assert!(
        text.ends_with(
            "[... the download stopped at 20000 bytes (max_bytes); the rest was not fetched ...]\n"
        ),
        "{}",
        &text[text.len() - 200..]
    );
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let (fx, base) = (Fixture::new(), serve().await);
    let tool = Typed::new(WebFetchTool::new().with_timeout(Duration::from_millis(300)));
    let started = Instant::now();
    let err = tool
        .run(json!({"url": format!("{base}/slow")}), &fx.ctx)
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    let message = err.to_string();
    assert!(
        message.starts_with(&format!("fetching {base}/slow timed out after 300 ms")),
        "{message}"
    );
}

#[tokio::test]
async fn a_cancelled_fetch_stops_at_once() {
    let (fx, base) = (Fixture::new(), serve().await);
    fx.ctx.cancel.cancel();
    let err = fx
        .err("web_fetch", json!({"url": format!("{base}/slow")}))
        .await;
    assert!(matches!(err, ToolError::Cancelled { .. }), "{err}");
}

#[tokio::test]
async fn an_error_status_is_reported_with_the_body() {
    let (fx, base) = (Fixture::new(), serve().await);
    let out = fx
        .call("web_fetch", json!({"url": format!("{base}/missing")}))
        .await
        .unwrap();
    assert!(!crate::is_success(&out));
    let text = crate::text(&out);
    assert!(text.contains("Status: 404 Not Found\n"), "{text}");
    assert!(text.ends_with("No such page\n"), "{text}");
}

#[tokio::test]
async fn binary_content_and_other_schemes_are_refused() {
    let (fx, base) = (Fixture::new(), serve().await);
    let err = fx
        .err("web_fetch", json!({"url": format!("{base}/image")}))
        .await
        .to_string();
    assert!(err.contains("binary content (image/png)"), "{err}");
    for url in ["file:///etc/passwd", "ftp://example.com/x"] {
        let err = fx.err("web_fetch", json!({"url": url})).await;
        assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
        assert!(
            err.to_string().contains("only http and https URLs"),
            "{err}"
        );
    }
    let err = fx
        .err("web_fetch", json!({"url": "http://127.0.0.1:1/"}))
        .await
        .to_string();
    assert!(
        err.starts_with("could not fetch http://127.0.0.1:1/"),
        "{err}"
    );
    let kind = fx.registry.get("web_fetch").unwrap().kind(&json!({}));
    assert_eq!(kind, ToolKind::ReadOnly);
}
