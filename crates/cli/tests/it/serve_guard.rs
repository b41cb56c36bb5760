//! `gyre serve` against what a web page could send it, its event ids
//! across a restart, and the flags it refuses.

use gyre_mock::MockServer;
use serde_json::json;

use crate::common::*;
use crate::serve_client::*;

/// The `PORT` of `http://127.0.0.1:PORT`.
fn port(served: &Served) -> &str {
    served.base.rsplit(':').next().unwrap()
}

#[tokio::test]
async fn a_web_page_cannot_use_a_server_without_a_token() {
    let env = Env::new();
    let server = MockServer::start(always("ok")).await.unwrap();
    let served = Served::start(&env, &server, &[]).await;
    let port = port(&served).to_string();
    let prompt = json!({"prompt": "run something"});
    let sessions = served.url("/sessions");

    // Another page's origin, reading or posting (what fetch() sends).
    for request in [
        served.http.get(&sessions),
        served.http.post(&sessions).json(&prompt),
        served.http.get(served.url("/openapi.json")),
    ] {
        let request = request.header("origin", "http://evil.example");
        let (status, body) = served.send(request).await;
        assert_eq!(status, 403, "{body}");
        assert!(body["error"].is_string(), "{body}");
    }
    // A name rebound to 127.0.0.1 arrives with the page's host name.
    let rebound = served
        .http
        .get(&sessions)
        .header("host", format!("evil.example:{port}"));
    let (status, body) = served.send(rebound).await;
    assert_eq!(status, 403, "{body}");
    assert!(body["error"].as_str().unwrap().contains("Host"), "{body}");
    // A "simple request" (no preflight): text/plain, or a form.
    for kind in [
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
    ] {
        let simple = served
            .http
            .post(&sessions)
            .header("content-type", kind)
            .body(prompt.to_string());
        let (status, body) = served.send(simple).await;
        assert_eq!(status, 415, "{kind}: {body}");
    }
    let (_, listed) = served.get("/sessions").await;
    assert_eq!(listed["sessions"], json!([]), "nothing was created");
    assert_eq!(server.requests().len(), 0, "nothing ran");

    // The server's own names and origins pass.
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let request = served
            .http
            .get(&sessions)
            .header("host", &host)
            .header("origin", format!("http://{host}"));
        let (status, body) = served.send(request).await;
        assert_eq!(status, 200, "{host}: {body}");
    }
    let (status, body) = served.post("/sessions", json!({"title": "mine"})).await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test]
async fn with_a_token_other_names_pass_and_bodies_are_still_json() {
    let env = Env::new();
    let server = MockServer::start(always("ok")).await.unwrap();
    let mut cmd = env.gyre_on(&server, &["serve", "--port", "0"]);
    cmd.env("GYRE_SERVER_TOKEN", "s3cret-token");
    let served = Served::spawn(cmd).await;
    let port = port(&served).to_string();
    let named = served
        .http
        .get(served.url("/sessions"))
        .header("host", format!("gyre.internal:{port}"));
    let (status, body) = served.send(named).await;
    assert_eq!(status, 401, "the token first: {body}");
    let served = served.with_token("s3cret-token");
    let named = served
        .http
        .get(served.url("/sessions"))
        .header("host", format!("gyre.internal:{port}"));
    let (status, body) = served.send(named).await;
    assert_eq!(status, 200, "{body}");
    let text = served
        .http
        .post(served.url("/sessions"))
        .header("content-type", "text/plain")
        .body("{}");
    let (status, body) = served.send(text).await;
    assert_eq!(status, 415, "{body}");
}

#[tokio::test]
async fn a_restarted_server_numbers_anew_and_resets_an_old_event_id() {
    let env = Env::new();
    let server = MockServer::start(always("ok")).await.unwrap();
    let mut first = Served::start(&env, &server, &[]).await;
    let (id, _) = first.create(json!({"prompt": "one"})).await;
    let mut events = first.events(&id, 0, Resume::Query).await;
    let frames = events.until_run_finished(1).await;
    let last = frames.last().unwrap();
    let (old_epoch, old_seq) = (last.epoch.unwrap(), last.id.unwrap());
    drop(events);
    first.child.kill().await.unwrap();

    let second = Served::start(&env, &server, &[]).await;
    let old_id = format!("{old_epoch:x}-{old_seq}");
    let mut events = second.events_from(&id, Some(&old_id)).await;
    let reset = events.next().await.unwrap();
    assert_eq!(reset.event, "reset");
    assert_eq!(reset.data["reason"], "other_epoch");
    assert_eq!(reset.data["last_seq"], 0);
    let (status, body) = second
        .post(&format!("/sessions/{id}/prompt"), json!({"prompt": "two"}))
        .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["run"], 1, "runs are numbered per opening too");
    let frames = events.until_run_finished(1).await;
    assert_eq!(frames[0].id, Some(1), "numbered anew");
    assert_ne!(frames[0].epoch, Some(old_epoch), "in a new epoch");
    assert_eq!(check_stream(&frames), vec![1]);
}

#[tokio::test]
async fn the_flags_of_one_run_are_refused() {
    let env = Env::new();
    let server = MockServer::start(always("ok")).await.unwrap();
    // `--at` needs `--fork`; either way it never starts a server.
    let out = output(env.gyre_on(&server, &["serve", "--port", "0", "--at", "x"])).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    for (flags, named) in [
        (&["--fork", "--at", "x"][..], "--fork"),
        (&["--continue"][..], "--continue"),
        (&["--output-format", "json"][..], "--output-format"),
        (
            &["--permission-prompt-tool", "ask"][..],
            "--permission-prompt-tool",
        ),
    ] {
        let mut args = vec!["serve", "--port", "0"];
        args.extend_from_slice(flags);
        let out = output(env.gyre_on(&server, &args)).await;
        assert_usage_error(&out, named);
        assert!(stderr(&out).contains("is for `gyre run`"), "{flags:?}");
    }
}
