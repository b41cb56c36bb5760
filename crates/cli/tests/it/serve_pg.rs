//! Two `gyre serve` hosts on one PostgreSQL database (a schema of its own):
//! a session made on one is listed and run on the other, and the store's
//! session lock makes their runs take turns.

use gyre_mock::{Item, MockServer, Script};
use serde_json::json;

use crate::common::*;
use crate::serve_client::*;
use crate::sessions_pg::Schema;

async fn host(env: &Env, server: &MockServer, schema: &Schema) -> Served {
    let mut cmd = env.gyre_on(
        server,
        &[
            "serve",
            "--port",
            "0",
            "--permission-mode",
            "bypassPermissions",
        ],
    );
    cmd.env("GYRE_DATABASE_URL", &schema.url);
    Served::spawn(cmd).await
}

fn final_text(frames: &[Frame]) -> String {
    let finished = frames.last().unwrap();
    assert_eq!(finished.event, "run_finished", "{frames:?}");
    finished.data["final_text"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn two_hosts_share_sessions_and_their_runs_take_turns() {
    let schema = Schema::create().await;
    let server = MockServer::start(Script::linear(vec![
        vec![call("bash", json!({"command": "echo started; sleep 1"}))],
        vec![Item::Text("First done.".into())],
        vec![Item::Text("Second done.".into())],
        vec![Item::Text("Third done.".into())],
    ]))
    .await
    .unwrap();
    let (env_a, env_b) = (Env::new(), Env::new());
    let a = host(&env_a, &server, &schema).await;
    let b = host(&env_b, &server, &schema).await;

    let (id, _) = a.create(json!({"prompt": "first"})).await;
    let mut on_a = a.events(&id, 0, Resume::Query).await;
    on_a.until(|f| {
        f.event == "tool_progress" && f.data["output"].as_str().unwrap_or("").contains("started")
    })
    .await;

    // B lists it (not open there, so without a status) and runs a prompt
    // there, which waits for A's run.
    let (_, listed) = b.get("/sessions").await;
    let listed = listed["sessions"].as_array().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], id.as_str());
    assert!(listed[0].get("status").is_none(), "{listed:?}");
    let (status, accepted) = b
        .post(
            &format!("/sessions/{id}/prompt"),
            json!({"prompt": "second"}),
        )
        .await;
    assert_eq!(status, 202, "{accepted}");
    assert_eq!(accepted["run"], 1, "B numbers its own runs");
    let mut on_b = b.events(&id, 0, Resume::Query).await;
    let b_frames = on_b.until_run_finished(1).await;
    assert!(
        b_frames.iter().any(|f| f.event == "session_busy"),
        "B's run waited for A's: {b_frames:?}"
    );
    assert_eq!(final_text(&b_frames), "Second done.");
    assert_eq!(final_text(&on_a.until_run_finished(1).await), "First done.");

    // Back on A, whose open copy is behind the store: the run goes on from
    // what B left.
    let (status, _) = a
        .post(
            &format!("/sessions/{id}/prompt"),
            json!({"prompt": "third"}),
        )
        .await;
    assert_eq!(status, 202);
    assert_eq!(final_text(&on_a.until_run_finished(2).await), "Third done.");
    let last = server.requests().pop().unwrap().body.to_string();
    assert!(last.contains("Second done."), "{last}");

    let (_, shown) = b.get(&format!("/sessions/{id}")).await;
    let texts: Vec<String> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["parts"][0]["text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        texts,
        [
            "first",
            "First done.",
            "second",
            "Second done.",
            "third",
            "Third done."
        ]
    );
    assert_eq!(server.requests().len(), 4);
    drop((a, b));
    schema.drop_now().await;
}
