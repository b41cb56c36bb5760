//! `gyre serve` as a client meets it: the real binary on a free port, the
//! scripted model, real HTTP and SSE, the stored transcript.

use std::time::{Duration, Instant};

use gyre_mock::{MockServer, Script};
use gyre_protocol::Role;
use gyre_store::SessionStore;
use gyre_store_sql::SqliteStore;
use serde_json::{Value, json};

use crate::common::*;
use crate::serve_client::*;

fn read_then_answer() -> Script {
    Script::linear(vec![
        vec![
            gyre_mock::Item::Text("Reading.".into()),
            call("read", json!({"file_path": "notes.txt"})),
        ],
        vec![gyre_mock::Item::Text("All done.".into())],
    ])
}

#[tokio::test]
async fn a_session_created_with_a_prompt_streams_its_run_and_is_stored() {
    let env = Env::new();
    write(&env.path("notes.txt"), "milk\n");
    let server = MockServer::start(read_then_answer()).await.unwrap();
    let served = Served::start(&env, &server, &["--permission-mode", "bypassPermissions"]).await;

    let (status, created) = served
        .post("/sessions", json!({"prompt": "read the notes"}))
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["run"], json!({"run": 1, "ahead": 0}));
    assert_eq!(created["session"]["title"], "read the notes");
    let id = created["session"]["id"].as_str().unwrap().to_string();

    let mut events = served.events(&id, 0, Resume::Query).await;
    let mut frames = events.until_run_finished(1).await;
    frames.extend(events.until(|f| f.event == "status").await);
    assert_eq!(frames[0].id, Some(1));
    assert_eq!(frames[0].event, "status");
    assert_eq!(frames[0].data, json!({"status": "busy"}));
    assert_eq!(frames.last().unwrap().data, json!({"status": "idle"}));
    assert_eq!(check_stream(&frames), vec![1]);
    let names: Vec<&str> = frames.iter().map(|f| f.event.as_str()).collect();
    for expected in ["run_started", "turn_started", "text_delta", "tool_result"] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    let finished = frames.iter().find(|f| f.event == "run_finished").unwrap();
    assert_eq!(finished.data["final_text"], "All done.");
    assert_eq!(finished.data["reason"], "completed");
    let result = frames.iter().find(|f| f.event == "tool_result").unwrap();
    assert!(
        result.data["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("milk")
    );

    let (status, shown) = served.get(&format!("/sessions/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(shown["session"]["status"], "idle");
    assert_eq!(shown["last_seq"], frames.last().unwrap().id.unwrap());
    assert_eq!(shown["queued"], json!([]));
    let messages = shown["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        4,
        "prompt, call, result, answer: {messages:?}"
    );
    assert_eq!(messages[0]["parts"][0]["text"], "read the notes");
    assert_eq!(messages[3]["parts"][0]["text"], "All done.");

    let (_, listed) = served.get("/sessions").await;
    assert_eq!(listed["sessions"][0]["id"], id.as_str());
    assert_eq!(listed["sessions"][0]["status"], "idle");

    // The same transcript is in the store every command reads.
    let store = SqliteStore::open(&env.database()).await.unwrap();
    let stored = store.load_messages(&id).await.unwrap();
    assert_eq!(stored.len(), 4);
    assert_eq!(stored[3].role, Role::Assistant);
    assert_eq!(stored[3].text(), "All done.");
}

#[tokio::test]
async fn a_prompt_posted_while_busy_is_queued_and_runs_next() {
    let env = Env::new();
    let server = MockServer::start(Script::linear(vec![
        vec![call("bash", json!({"command": "sleep 0.5; echo first"}))],
        vec![gyre_mock::Item::Text("First done.".into())],
        vec![gyre_mock::Item::Text("Second done.".into())],
    ]))
    .await
    .unwrap();
    let served = Served::start(&env, &server, &["--permission-mode", "bypassPermissions"]).await;
    let (id, run) = served.create(json!({"prompt": "first"})).await;
    assert_eq!(run, Some(1));

    let (status, queued) = served
        .post(
            &format!("/sessions/{id}/prompt"),
            json!({"prompt": "second"}),
        )
        .await;
    assert_eq!(status, 202, "{queued}");
    assert_eq!(queued, json!({"session_id": id, "run": 2, "ahead": 1}));
    let (_, shown) = served.get(&format!("/sessions/{id}")).await;
    assert_eq!(shown["queued"], json!(["second"]));
    assert_eq!(shown["session"]["status"], "busy");

    let mut events = served.events(&id, 0, Resume::Query).await;
    let frames = events.until_run_finished(2).await;
    assert_eq!(check_stream(&frames), vec![1, 2], "run 2 after run 1");
    let finals: Vec<&Value> = frames
        .iter()
        .filter(|f| f.event == "run_finished")
        .map(|f| &f.data["final_text"])
        .collect();
    assert_eq!(finals, [&json!("First done."), &json!("Second done.")]);
}

#[tokio::test]
async fn a_write_waits_for_permission_and_the_answer_lets_it_through() {
    let env = Env::new();
    let server = MockServer::start(Script::linear(vec![
        vec![call(
            "write",
            json!({"file_path": "approved.txt", "content": "yes"}),
        )],
        vec![gyre_mock::Item::Text("Written.".into())],
    ]))
    .await
    .unwrap();
    // The default permission mode asks before a write.
    let served = Served::start(&env, &server, &[]).await;
    let (id, _) = served.create(json!({"prompt": "write it"})).await;
    let mut events = served.events(&id, 0, Resume::Query).await;
    let frames = events.until(|f| f.event == "permission_requested").await;
    let waiting = &frames[frames.len() - 2];
    assert_eq!(waiting.event, "status");
    assert_eq!(waiting.data["status"], "waiting_for_permission");
    let request = frames.last().unwrap();
    assert_eq!(request.data["call"]["name"], "write");
    let request_id = request.data["request_id"].as_str().unwrap();

    let (_, shown) = served.get(&format!("/sessions/{id}")).await;
    assert_eq!(shown["session"]["status"], "waiting_for_permission");
    let path = format!("/sessions/{id}/permissions/{request_id}");
    let (status, body) = served.post(&path, json!({"answer": "maybe"})).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = served
        .post(
            &format!("/sessions/{id}/permissions/no-such-request"),
            json!({"answer": "allow"}),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    assert!(!env.path("approved.txt").exists(), "nothing written yet");

    let (status, body) = served.post(&path, json!({"answer": "allow"})).await;
    assert_eq!(status, 200, "{body}");
    let rest = events.until_run_finished(1).await;
    let busy = rest
        .iter()
        .position(|f| f.data == json!({"status": "busy"}))
        .expect("busy again");
    let result = rest.iter().position(|f| f.event == "tool_result").unwrap();
    assert!(busy < result, "busy again before the write's result");
    assert_eq!(rest.last().unwrap().data["final_text"], "Written.");
    assert_eq!(
        std::fs::read_to_string(env.path("approved.txt")).unwrap(),
        "yes"
    );
    let (status, _) = served.post(&path, json!({"answer": "allow"})).await;
    assert_eq!(status, 404, "answered already");
}

#[tokio::test]
async fn abort_cancels_a_long_command_and_drops_the_queue() {
    let env = Env::new();
    let marker = "31.4159";
    let server = MockServer::start(Script::linear(vec![
        vec![call(
            "bash",
            json!({"command": format!("echo started; sleep {marker}")}),
        )],
        vec![gyre_mock::Item::Text("never".into())],
    ]))
    .await
    .unwrap();
    let served = Served::start(&env, &server, &["--permission-mode", "bypassPermissions"]).await;
    let (id, _) = served.create(json!({"prompt": "sleep"})).await;
    served
        .post(&format!("/sessions/{id}/prompt"), json!({"prompt": "next"}))
        .await;
    let mut events = served.events(&id, 0, Resume::Query).await;
    events
        .until(|f| {
            f.event == "tool_progress"
                && f.data["output"].as_str().unwrap_or("").contains("started")
        })
        .await;
    let asked = Instant::now();
    let (status, aborted) = served
        .post(&format!("/sessions/{id}/abort"), json!({}))
        .await;
    assert_eq!(status, 200, "{aborted}");
    assert_eq!(aborted, json!({"aborted": true, "dropped": ["next"]}));
    let frames = events.until_run_finished(1).await;
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(frames.last().unwrap().data["reason"], "cancelled");
    let idle = events.until(|f| f.event == "status").await;
    assert_eq!(
        idle.last().unwrap().data["status"],
        "idle",
        "run 2 never ran"
    );
    assert_eq!(server.requests().len(), 1);

    let (_, shown) = served.get(&format!("/sessions/{id}")).await;
    let messages = shown["messages"].as_array().unwrap();
    let last = &messages.last().unwrap()["parts"][0];
    assert_eq!(last["type"], "tool_result");
    assert_eq!(last["is_error"], true, "the interrupted result is stored");
    let (status, again) = served
        .post(&format!("/sessions/{id}/abort"), json!({}))
        .await;
    assert_eq!(
        (status, again),
        (200, json!({"aborted": false, "dropped": []}))
    );
}

#[tokio::test]
async fn last_event_id_resumes_with_exactly_the_missing_events() {
    let env = Env::new();
    write(&env.path("notes.txt"), "milk\n");
    let server = MockServer::start(Script::linear(vec![
        vec![
            gyre_mock::Item::Text("Reading.".into()),
            call("read", json!({"file_path": "notes.txt"})),
        ],
        vec![gyre_mock::Item::Text("All done.".into())],
        vec![gyre_mock::Item::Text("Again.".into())],
    ]))
    .await
    .unwrap();
    let served = Served::start(&env, &server, &["--permission-mode", "bypassPermissions"]).await;
    let (id, _) = served.create(json!({"prompt": "go"})).await;
    let mut events = served.events(&id, 0, Resume::Query).await;
    let mut all = events.until_run_finished(1).await;
    all.extend(events.until(|f| f.event == "status").await);
    drop(events);
    assert!(all.len() > 10, "{all:?}");

    // A reader that saw up to the middle gets exactly the rest, both ways.
    let epoch = all[0].epoch.unwrap();
    let cut = all.len() / 2;
    let seen = all[cut - 1].id.unwrap();
    for how in [Resume::Header(epoch), Resume::Query] {
        let mut resumed = served.events(&id, seen, how).await;
        let rest = resumed.until(|f| f.id == all.last().unwrap().id).await;
        assert_eq!(rest, all[cut..], "{how:?}");
    }

    // From the newest id on: only what comes next.
    let newest = all.last().unwrap().id.unwrap();
    let mut next = served.events(&id, newest, Resume::Header(epoch)).await;
    served
        .post(
            &format!("/sessions/{id}/prompt"),
            json!({"prompt": "again"}),
        )
        .await;
    let frames = next.until_run_finished(2).await;
    assert_eq!(frames[0].id, Some(newest + 1));
    assert_eq!(frames[0].data, json!({"status": "busy"}));
    assert_eq!(frames.last().unwrap().data["final_text"], "Again.");

    // An id of another opening of the session (another epoch, or the bare
    // number of the form before epochs), or beyond the newest update: said,
    // then every update kept.
    for (last_event_id, reason) in [
        (format!("{:x}-3", epoch ^ 1), "other_epoch"),
        ("3".to_string(), "other_epoch"),
        (format!("{epoch:x}-1000000"), "beyond_newest"),
    ] {
        let mut stale = served.events_from(&id, Some(&last_event_id)).await;
        let reset = stale.next().await.unwrap();
        assert_eq!((reset.event.as_str(), reset.id), ("reset", None));
        assert_eq!(reset.data["reason"], reason, "{last_event_id}");
        let first = stale.next().await.unwrap();
        assert_eq!((first.epoch, first.id), (Some(epoch), Some(1)));
    }
}

#[tokio::test]
async fn bad_input_is_told_with_the_right_status() {
    let env = Env::new();
    let server = MockServer::start(always("ok")).await.unwrap();
    let served = Served::start(&env, &server, &[]).await;
    let nobody = "00000000-0000-0000-0000-000000000000";
    let error = |body: &Value| body["error"].as_str().unwrap_or_default().to_string();

    for (status, body) in [
        served.get(&format!("/sessions/{nobody}")).await,
        served
            .post(
                &format!("/sessions/{nobody}/prompt"),
                json!({"prompt": "hi"}),
            )
            .await,
        served.get(&format!("/sessions/{nobody}/events")).await,
        served
            .post(&format!("/sessions/{nobody}/abort"), json!({}))
            .await,
        served
            .post(
                &format!("/sessions/{nobody}/permissions/x"),
                json!({"answer": "allow"}),
            )
            .await,
    ] {
        assert_eq!(status, 404, "{body}");
        assert!(error(&body).contains(nobody), "{body}");
    }

    let (id, _) = served.create(json!({})).await;
    let prompt = format!("/sessions/{id}/prompt");
    for (status, body) in [
        served.post_raw(&prompt, "{\"prompt\": ").await,
        served.post_raw(&prompt, "not json").await,
        served.post(&prompt, json!({"prompt": "  "})).await,
        served.post(&prompt, json!({})).await,
        served
            .post(&prompt, json!({"prompt": "hi", "extra": 1}))
            .await,
        served.post("/sessions", json!({"prompt": ""})).await,
        served
            .post("/sessions", json!({"cwd": "relative/dir"}))
            .await,
        served
            .post("/sessions", json!({"cwd": "/no/such/dir/anywhere"}))
            .await,
        served
            .post("/sessions", json!({"agent": "no-such-agent"}))
            .await,
        served.post("/sessions", json!({"promt": "typo"})).await,
        served.get("/sessions?all=maybe").await,
        served
            .send(
                served
                    .http
                    .get(served.url(&format!("/sessions/{id}/events")))
                    .header("Last-Event-ID", "abc"),
            )
            .await,
    ] {
        assert_eq!(status, 400, "{body}");
        let said = error(&body);
        assert!(
            !said.is_empty() && !said.contains('\n'),
            "one sentence: {body}"
        );
    }
    // A body not sent as JSON (what `curl -d` and a web form send).
    for kind in ["text/plain", "application/x-www-form-urlencoded"] {
        let request = served
            .http
            .post(served.url(&prompt))
            .header("content-type", kind);
        let (status, body) = served.send(request.body(r#"{"prompt": "hi"}"#)).await;
        assert_eq!(status, 415, "{kind}: {body}");
        assert!(error(&body).contains("application/json"), "{body}");
    }
    let (status, body) = served.post(&prompt, json!({"prompt": "  "})).await;
    assert_eq!(status, 400);
    assert!(error(&body).contains("empty"), "{body}");

    let (status, body) = served.get("/no/such/thing").await;
    assert_eq!(status, 404);
    assert!(error(&body).contains("/openapi.json"), "{body}");
    let (status, body) = served
        .send(served.http.delete(served.url("/sessions")))
        .await;
    assert_eq!(status, 405, "{body}");
    assert!(!error(&body).is_empty());
    // Nothing of this ran anything.
    assert_eq!(server.requests().len(), 0);
}

#[tokio::test]
async fn a_token_is_required_off_loopback_and_checked_when_set() {
    let env = Env::new();
    let server = MockServer::start(always("ok")).await.unwrap();
    let mut refused = env.gyre_on(&server, &["serve", "--port", "0", "--host", "0.0.0.0"]);
    refused.env_remove("GYRE_SERVER_TOKEN");
    assert_usage_error(&output(refused).await, "GYRE_SERVER_TOKEN");
    let unset = env.gyre_on(
        &server,
        &[
            "serve",
            "--port",
            "0",
            "--token-env",
            "GYRE_TEST_NO_SUCH_VAR",
        ],
    );
    assert_usage_error(&output(unset).await, "GYRE_TEST_NO_SUCH_VAR");

    let mut cmd = env.gyre_on(&server, &["serve", "--port", "0"]);
    cmd.env("GYRE_SERVER_TOKEN", "s3cret-token");
    let served = Served::spawn(cmd).await;
    for request in [
        served.http.get(served.url("/sessions")),
        served.http.get(served.url("/openapi.json")),
        served
            .http
            .get(served.url("/sessions"))
            .bearer_auth("wrong"),
        served
            .http
            .get(served.url("/sessions"))
            .bearer_auth("s3cret-toke"),
        served
            .http
            .get(served.url("/sessions"))
            .basic_auth("user", Some("s3cret-token")),
    ] {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401);
        assert!(response.headers().contains_key("www-authenticate"));
        let body: Value = response.json().await.unwrap();
        assert!(body["error"].is_string(), "{body}");
    }
    let served = served.with_token("s3cret-token");
    let (status, body) = served.get("/sessions").await;
    assert_eq!(status, 200, "{body}");
    assert!(
        !served.stderr().contains("s3cret"),
        "the token is never printed"
    );
}

#[tokio::test]
async fn every_route_of_the_openapi_document_answers() {
    let env = Env::new();
    let server = MockServer::start(always("ok")).await.unwrap();
    let served = Served::start(&env, &server, &[]).await;
    let (id, _) = served.create(json!({"title": "for the document"})).await;
    let (status, document) = served.get("/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(document["openapi"], "3.1.0");
    let paths = document["paths"].as_object().unwrap();
    assert_eq!(paths.len(), 7, "{:?}", paths.keys());
    let mut checked = 0;
    for (path, item) in paths {
        let url = path
            .replace("{id}", &id)
            .replace("{request_id}", "not-waiting");
        for method in item.as_object().unwrap().keys() {
            let request = match method.as_str() {
                "get" => served.http.get(served.url(&url)),
                "post" => {
                    let body = match path.as_str() {
                        "/sessions/{id}/prompt" => json!({"prompt": "hi"}),
                        p if p.contains("permissions") => json!({"answer": "deny"}),
                        _ => json!({}),
                    };
                    served.http.post(served.url(&url)).json(&body)
                }
                other => panic!("unexpected method {other}"),
            };
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            assert_ne!(status, 405, "{method} {path}");
            if path.ends_with("/events") {
                assert_eq!(status, 200);
                checked += 1;
                continue; // the stream stays open
            }
            let body: Value = response.json().await.unwrap();
            let routed = body["error"]
                .as_str()
                .is_none_or(|e| !e.starts_with("there is no endpoint"));
            assert!(routed, "{method} {path}: {body}");
            assert!(status < 500, "{method} {path}: {status} {body}");
            let documented = &item[method]["responses"][status.to_string()];
            assert!(documented.is_object(), "{method} {path} documents {status}");
            checked += 1;
        }
    }
    assert_eq!(checked, 8);
}

#[tokio::test]
async fn sigterm_cancels_the_runs_records_them_and_exits() {
    let env = Env::new();
    let marker = "32.7182";
    let server = MockServer::start(Script::linear(vec![vec![call(
        "bash",
        json!({"command": format!("echo started; sleep {marker}")}),
    )]]))
    .await
    .unwrap();
    let mut served =
        Served::start(&env, &server, &["--permission-mode", "bypassPermissions"]).await;
    let (id, _) = served.create(json!({"prompt": "sleep"})).await;
    let mut events = served.events(&id, 0, Resume::Query).await;
    events
        .until(|f| {
            f.event == "tool_progress"
                && f.data["output"].as_str().unwrap_or("").contains("started")
        })
        .await;
    #[allow(unsafe_code)]
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our child's.
    let sent = unsafe { libc::kill(served.pid(), libc::SIGTERM) };
    assert_eq!(sent, 0);
    let frames = events.until_run_finished(1).await;
    assert_eq!(frames.last().unwrap().data["reason"], "cancelled");
    let status = tokio::time::timeout(Duration::from_secs(15), served.child.wait())
        .await
        .expect("gyre serve exited")
        .unwrap();
    assert_eq!(status.code(), Some(0), "{}", served.stderr());
    assert!(events.next().await.is_none_or(|f| f.event == "status"));

    let store = SqliteStore::open(&env.database()).await.unwrap();
    let messages = store.load_messages(&id).await.unwrap();
    assert_eq!(messages.len(), 3, "prompt, call, interrupted result");
    assert!(messages[2].tool_results().next().unwrap().is_error);
    let state = store.load_state(&id).await.unwrap().unwrap();
    assert_eq!(state["transition"], json!({"finished": "cancelled"}));
}

#[tokio::test]
async fn what_is_read_back_from_the_store_is_redacted() {
    let env = Env::new();
    env.write_user_config(&format!(
        "{FAST_RETRIES}[redact]\npatterns = [\"tok_[A-Z0-9]{{10}}\"]\n"
    ));
    let server = MockServer::start(always("noted")).await.unwrap();
    let served = Served::start(&env, &server, &[]).await;
    let (id, _) = served
        .create(json!({"prompt": "remember tok_A1B2C3D4E5 for me"}))
        .await;
    let mut events = served.events(&id, 0, Resume::Query).await;
    events.until_run_finished(1).await;
    let (_, listed) = served.get("/sessions").await;
    let (_, shown) = served.get(&format!("/sessions/{id}")).await;
    for text in [listed.to_string(), shown.to_string()] {
        assert!(!text.contains("tok_A1B2C3D4E5"), "{text}");
        assert!(text.contains("[REDACTED]"), "{text}");
    }
}
