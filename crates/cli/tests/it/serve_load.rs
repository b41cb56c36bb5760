//! `gyre serve` under load: the acceptance test (200 sessions at once
//! through the HTTP API against the scripted model, every event stream
//! complete and in order), and a reader that fell too far behind.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gyre_mock::{Item, MockServer, Script};
use serde_json::json;

use crate::common::*;
use crate::serve_client::*;

const SESSIONS: usize = 200;
/// The whole test's bound (it takes a few seconds on 2 cores).
const LIMIT: Duration = Duration::from_secs(180);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_sessions_stream_complete_and_in_order() {
    let env = Env::new();
    write(&env.path("notes.txt"), "milk\n");
    let server = MockServer::start(Script::linear(vec![
        vec![
            Item::Text("Reading the notes.".into()),
            call("read", json!({"file_path": "notes.txt"})),
        ],
        vec![Item::Text("The notes say milk.".into())],
    ]))
    .await
    .unwrap();
    let served =
        Arc::new(Served::start(&env, &server, &["--permission-mode", "bypassPermissions"]).await);
    let started = Instant::now();
    let mut sessions = tokio::task::JoinSet::new();
    for i in 0..SESSIONS {
        let served = served.clone();
        sessions.spawn(async move {
            let (id, run) = served
                .create(json!({"prompt": format!("task {i}: read the notes")}))
                .await;
            assert_eq!(run, Some(1));
            let mut events = served.events(&id, 0, Resume::Query).await;
            let mut frames = events.until_run_finished(1).await;
            frames.extend(events.until(|f| f.event == "status").await);
            (id, frames)
        });
    }
    let mut ids = HashSet::new();
    let mut events = 0;
    let all = tokio::time::timeout(LIMIT, async {
        while let Some(joined) = sessions.join_next().await {
            let (id, frames) = joined.expect("a session's task");
            // Complete: from the first update, numbered without gaps, one
            // whole run in the protocol's order, then idle.
            assert_eq!(frames[0].id, Some(1), "{id}");
            assert_eq!(frames[0].data, json!({"status": "busy"}));
            assert_eq!(check_stream(&frames), vec![1], "{id}");
            let started = frames.iter().find(|f| f.event == "run_started").unwrap();
            assert_eq!(started.data["session_id"], id.as_str());
            let finished = frames.iter().find(|f| f.event == "run_finished").unwrap();
            assert_eq!(finished.data["reason"], "completed", "{id}");
            assert_eq!(finished.data["final_text"], "The notes say milk.");
            assert_eq!(finished.data["num_turns"], 2);
            assert_eq!(frames.last().unwrap().data, json!({"status": "idle"}));
            let results = frames.iter().filter(|f| f.event == "tool_result").count();
            assert_eq!(results, 1, "{id}");
            events += frames.len();
            ids.insert(id);
        }
    })
    .await;
    let took = started.elapsed();
    assert!(
        all.is_ok(),
        "{SESSIONS} sessions did not finish within {LIMIT:?}; {} did; server stderr: {}",
        ids.len(),
        served.stderr()
    );
    assert_eq!(ids.len(), SESSIONS, "distinct sessions");
    assert_eq!(
        server.requests().len(),
        2 * SESSIONS,
        "two model requests each"
    );
    eprintln!("{SESSIONS} sessions, {events} events, in {took:?}");

    let (status, listed) = served.get("/sessions").await;
    assert_eq!(status, 200);
    let listed = listed["sessions"].as_array().unwrap();
    assert_eq!(listed.len(), SESSIONS);
    assert!(listed.iter().all(|s| s["status"] == "idle"), "all idle");
    for id in ids.iter().take(3) {
        let (_, shown) = served.get(&format!("/sessions/{id}")).await;
        assert_eq!(shown["messages"].as_array().unwrap().len(), 4, "{id}");
    }
}

#[tokio::test]
async fn a_reader_too_far_behind_is_told_what_it_lost_then_goes_on() {
    let env = Env::new();
    // About 2,500 text deltas of at most 16 characters: more updates than a
    // live session keeps (2,048).
    let long = "0123456789abcdef".repeat(2500);
    let server = MockServer::start(Script::linear(vec![vec![Item::Text(long.clone())]]))
        .await
        .unwrap();
    let served = Served::start(&env, &server, &[]).await;
    let (id, _) = served.create(json!({"prompt": "talk a lot"})).await;
    let mut live = served.events(&id, 0, Resume::Query).await;
    live.until(|f| f.data == json!({"status": "idle"})).await;
    let (_, shown) = served.get(&format!("/sessions/{id}")).await;
    let last = shown["last_seq"].as_u64().unwrap();
    assert!(last > 2048, "{last} updates");

    let mut late = served.events(&id, 0, Resume::Query).await;
    let lagged = late.next().await.unwrap();
    let oldest = last - 2048 + 1;
    assert_eq!(lagged.event, "lagged");
    assert_eq!(lagged.id, Some(oldest - 1), "a reconnect resumes right");
    assert_eq!(lagged.data["after"], 0);
    assert_eq!(lagged.data["resumes_at"], oldest);
    assert_eq!(lagged.data["missed"], oldest - 1);
    let rest = late.until(|f| f.id == Some(last)).await;
    let ids: Vec<u64> = rest.iter().map(|f| f.id.unwrap()).collect();
    assert_eq!(
        ids,
        (oldest..=last).collect::<Vec<_>>(),
        "then every kept one"
    );
    let text: String = rest
        .iter()
        .filter(|f| f.event == "text_delta")
        .map(|f| f.data["text"].as_str().unwrap())
        .collect();
    assert!(long.ends_with(&text) && !text.is_empty());
}
