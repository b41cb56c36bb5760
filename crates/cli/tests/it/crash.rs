//! Crash safety: `gyre run` is killed with SIGKILL at chosen points —
//! while the model streams, while a read-only tool runs, while a mutating
//! tool runs, between turns — and each time `gyre run --resume ID` finishes
//! the task. The mutating tool's side effect happens once; no finished
//! result is lost; every request sent after the resume is valid.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use gyre_mock::{At, Item, MockServer, Reply, Script, Stall, Step, StreamReply, When};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use crate::common::*;

/// Where the first run is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KillPoint {
    Streaming,
    ReadOnlyTool,
    MutatingTool,
    BetweenTurns,
}

fn step(
    when: When,
    times: Option<u32>,
    items: Vec<Item>,
    stall: Option<Stall>,
    headers_ms: u64,
) -> Step {
    Step {
        when,
        times,
        reply: Reply::Stream(StreamReply {
            items,
            stall,
            stall_before_headers_ms: headers_ms,
            ..StreamReply::default()
        }),
    }
}

fn results(n: u32) -> When {
    When {
        tool_results: Some(n),
        ..When::default()
    }
}

/// The task: fetch a page (read-only), append to `effects.txt` (mutating,
/// then slow), say done. Each kill point makes its step slow the first time.
fn script(point: KillPoint, page: &str) -> Script {
    let long = Some(Stall {
        after: At::Events(3),
        ms: 30_000,
    });
    let first_stall = if point == KillPoint::Streaming {
        long
    } else {
        None
    };
    let fetch = vec![
        Item::Text("Fetching the page first, then recording it.".into()),
        call("web_fetch", json!({"url": page})),
    ];
    let pause = if point == KillPoint::MutatingTool {
        20
    } else {
        0
    };
    let append = vec![call(
        "bash",
        json!({"command": format!("echo ran >> effects.txt; sleep {pause}")}),
    )];
    let mut steps = vec![
        // The first answer, slow once when the kill is during streaming.
        step(results(0), Some(1), fetch.clone(), first_stall, 0),
        step(results(0), None, fetch, None, 0),
    ];
    // After the fetch: the mutating call (it sleeps: the kill may hit it).
    steps.push(step(results(1), Some(1), append, None, 0));
    // After the append: the next request stalls once when killing between
    // turns.
    let between = if point == KillPoint::BetweenTurns {
        30_000
    } else {
        0
    };
    steps.push(step(
        results(2),
        Some(1),
        vec![Item::Text("Recorded.".into())],
        None,
        between,
    ));
    steps.push(step(
        When::default(),
        None,
        vec![Item::Text("Recorded.".into())],
        None,
        0,
    ));
    Script::new(steps)
}

/// A page server whose first answer hangs (a read-only tool to kill).
async fn page_server(point: KillPoint) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/page", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                if n == 0 && point == KillPoint::ReadOnlyTool {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
                let body = "the page says hello";
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    (url, hits)
}

/// Runs the task, kills it at `point`, resumes it; returns the mock, the
/// page hits and the environment for the checks.
async fn kill_and_resume(point: KillPoint) -> (MockServer, Arc<AtomicUsize>, Env) {
    let (page, hits) = page_server(point).await;
    let server = MockServer::start(script(point, &page)).await.unwrap();
    let env = Env::new();
    let mut child = env
        .gyre_on(
            &server,
            &[
                "run",
                "record the page",
                "--permission-mode",
                "bypassPermissions",
                "--output-format",
                "stream-json",
                "--include-partial-messages",
            ],
        )
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let effects = env.path("effects.txt");
    let mut session_id = String::new();
    let reached = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let line = tokio::select! {
                line = lines.next_line() => line.unwrap(),
                // Some points show in the workspace, not on stdout.
                _ = tokio::time::sleep(Duration::from_millis(20)) => {
                    let hit = match point {
                        KillPoint::ReadOnlyTool => hits.load(Ordering::SeqCst) > 0,
                        KillPoint::MutatingTool => effects.exists(),
                        // The request after the append's result is in (and
                        // stalls): the turn boundary is behind the run.
                        KillPoint::BetweenTurns => server.requests().len() >= 3,
                        KillPoint::Streaming => false,
                    };
                    if hit { return; }
                    continue;
                }
            };
            let Some(line) = line else {
                panic!("gyre ended before {point:?}")
            };
            let value: Value = serde_json::from_str(&line).unwrap();
            if value["subtype"] == "init" {
                session_id = value["session_id"].as_str().unwrap().to_string();
            }
            let hit = match point {
                KillPoint::Streaming => value["event"]["delta"]["type"] == "text_delta",
                // The append's result is stored and shown: the next request
                // is the one that stalls.
                _ => false,
            };
            if hit {
                return;
            }
        }
    });
    reached
        .await
        .unwrap_or_else(|_| panic!("{point:?} was not reached"));
    child.start_kill().unwrap();
    let status = child.wait().await.unwrap();
    assert!(!status.success(), "{point:?}: killed");
    assert!(!session_id.is_empty());

    let out = output(env.gyre_on(
        &server,
        &[
            "run",
            "continue",
            "--resume",
            &session_id,
            "--permission-mode",
            "bypassPermissions",
            "--output-format",
            "json",
        ],
    ))
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{point:?}: stderr: {}",
        stderr(&out)
    );
    assert_eq!(json_lines(&out)[0]["result"], "Recorded.", "{point:?}");
    (server, hits, env)
}

/// Every tool_use of an Anthropic request is answered once, right after it.
fn assert_valid(body: &Value, point: KillPoint) {
    let messages = body["messages"].as_array().unwrap();
    let mut answered: HashMap<String, usize> = HashMap::new();
    for (i, message) in messages.iter().enumerate() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_use" {
                let id = block["id"].as_str().unwrap();
                let next = &messages[i + 1]["content"];
                let count = next
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|b| b["type"] == "tool_result" && b["tool_use_id"] == id)
                    .count();
                assert_eq!(
                    count, 1,
                    "{point:?}: call {id} answered {count} times in {body}"
                );
                *answered.entry(id.to_string()).or_default() += 1;
            }
        }
    }
    assert!(
        answered.values().all(|n| *n == 1),
        "{point:?}: duplicate call ids"
    );
}

#[tokio::test]
async fn killed_at_any_point_a_resume_finishes_the_task() {
    for round in 0..2 {
        for point in [
            KillPoint::Streaming,
            KillPoint::ReadOnlyTool,
            KillPoint::MutatingTool,
            KillPoint::BetweenTurns,
        ] {
            let (server, hits, env) = kill_and_resume(point).await;
            // The mutating tool's side effect happened exactly once.
            let effects = std::fs::read_to_string(env.path("effects.txt")).unwrap_or_default();
            assert_eq!(effects, "ran\n", "{point:?} (round {round})");
            // The read-only fetch ran again only when it was cut off.
            let fetched = hits.load(Ordering::SeqCst);
            let expected = if point == KillPoint::ReadOnlyTool {
                2
            } else {
                1
            };
            assert_eq!(fetched, expected, "{point:?}: page fetches");
            // Every request after the kill was valid to send.
            let requests = server.requests();
            for request in &requests {
                assert_valid(&request.body, point);
            }
            // No finished result was lost: the last request holds the
            // fetched page.
            let last = requests.last().unwrap().body.to_string();
            assert!(last.contains("the page says hello"), "{point:?}: {last}");
        }
    }
}
