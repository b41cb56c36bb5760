//! Connect, first-byte and idle timeouts: each ends a stuck request promptly
//! with a transient error that says which wait ran out.

use std::sync::Arc;
use std::time::{Duration, Instant};

use gyre_llm::{
    AnthropicClient, ClientConfig, ErrorKind, LlmError, ModelClient, ModelEvent, OpenAiChatClient,
};
use gyre_protocol::{Message, Part};

use crate::anthropic::request;
use crate::drain;
use crate::server::{Server, Step, http_chunk, sse_head};

const SHORT: Duration = Duration::from_millis(200);

fn config(url: String) -> ClientConfig {
    let mut config = ClientConfig::new(url, None);
    config.first_byte_timeout = SHORT;
    config.idle_timeout = SHORT;
    config
}

async fn run(client: &dyn ModelClient) -> (Vec<ModelEvent>, LlmError, Duration) {
    let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
    let started = Instant::now();
    let (events, error) = drain(client.stream(&request(&messages, &[]))).await;
    (
        events,
        error.expect("the request should fail"),
        started.elapsed(),
    )
}

/// Loose: the point is "promptly", not a precise time.
fn assert_prompt(elapsed: Duration) {
    assert!(elapsed >= SHORT, "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

#[tokio::test]
async fn no_response_headers_hits_the_first_byte_timeout() {
    let server = Server::start(vec![Step::Stall]).await;
    let client = OpenAiChatClient::new(config(format!("{}/v1", server.url)));
    let (events, error, elapsed) = run(&client).await;
    assert!(events.is_empty());
    assert_eq!(error.kind, ErrorKind::Network);
    assert!(error.kind.is_transient());
    assert_eq!(
        error.message,
        format!(
            "no response from the OpenAI-compatible server within 200 ms; check that the server at {}/v1/chat/completions is working, then try again",
            server.url
        )
    );
    assert_prompt(elapsed);
}

#[tokio::test]
async fn headers_without_a_body_hit_the_idle_timeout() {
    let server = Server::start(vec![sse_head(), Step::Stall]).await;
    let client = AnthropicClient::new(config(server.url.clone()));
    let (events, error, elapsed) = run(&client).await;
    assert!(events.is_empty());
    assert_eq!(error.kind, ErrorKind::Network);
    assert_eq!(
        error.message,
        "the stream stalled: no data for 200 ms; try again"
    );
    assert_prompt(elapsed);
}

#[tokio::test]
async fn a_stream_that_stalls_midway_is_cut() {
    let first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n";
    let server = Server::start(vec![
        sse_head(),
        Step::Write(http_chunk(first.as_bytes())),
        // Half an event, then nothing.
        Step::Write(http_chunk(b"data: {\"choi")),
        Step::Stall,
    ])
    .await;
    let client = OpenAiChatClient::new(config(format!("{}/v1", server.url)));
    let (events, error, elapsed) = run(&client).await;
    // The text before the stall is completed, not lost.
    assert_eq!(
        events,
        [
            ModelEvent::TextDelta("Hi".into()),
            ModelEvent::PartCompleted(Part::Text { text: "Hi".into() })
        ]
    );
    assert_eq!(error.kind, ErrorKind::Network);
    assert!(error.kind.is_transient());
    assert_eq!(
        error.message,
        "the stream stalled: no data for 200 ms; try again"
    );
    assert_prompt(elapsed);
}

#[tokio::test]
async fn a_slow_but_steady_stream_is_not_cut() {
    // Each gap is below the idle timeout though the whole answer takes longer.
    let mut script = vec![sse_head()];
    for _ in 0..4 {
        script.push(Step::Write(http_chunk(b": keep-alive\n\n")));
        script.push(Step::Pause(Duration::from_millis(80)));
    }
    script.push(Step::Write(http_chunk(
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    )));
    script.push(Step::Write(b"0\r\n\r\n".to_vec()));
    let server = Server::start(script).await;
    let client = OpenAiChatClient::new(config(format!("{}/v1", server.url)));
    let messages = vec![Arc::new(Message::user_text("u1", "hi"))];
    let (events, error) = drain(client.stream(&request(&messages, &[]))).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(events.len(), 3);
}

/// A listener whose accept queue is full: the kernel drops further SYNs, so
/// a connect hangs until the client's connect timeout. `None` where the
/// system refuses such connects instead.
async fn unconnectable() -> Option<(String, Vec<tokio::net::TcpStream>, tokio::net::TcpListener)> {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(1).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    // Fill the queue until a connect hangs.
    for _ in 0..16 {
        let connect = tokio::net::TcpStream::connect(addr);
        match tokio::time::timeout(Duration::from_millis(100), connect).await {
            Ok(Ok(stream)) => fillers.push(stream),
            Ok(Err(_)) => return None,
            Err(_hung) => return Some((format!("http://{addr}"), fillers, listener)),
        }
    }
    None
}

#[tokio::test]
async fn a_connect_that_hangs_hits_the_connect_timeout() {
    // Linux drops SYNs to a full accept queue; a system that refuses them
    // instead cannot run this test, and must say so rather than pass.
    let (url, _fillers, _listener) = unconnectable()
        .await
        .expect("connects to a full listener should hang on Linux");
    let mut config = config(url.clone()).with_connect_timeout(SHORT);
    // Long enough that only the connect timeout can fire.
    config.first_byte_timeout = Duration::from_secs(10);
    let client = AnthropicClient::new(config);
    let (_, error, elapsed) = run(&client).await;
    assert_eq!(error.kind, ErrorKind::Unreachable);
    assert_eq!(
        error.message,
        format!(
            "could not connect to {url}/v1/messages within 200 ms; check the base URL, the network and that the server is running"
        )
    );
    assert_prompt(elapsed);
}
