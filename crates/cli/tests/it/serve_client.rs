//! A real `gyre serve --port 0` process and a small client for it: JSON
//! requests, and an SSE reader that checks every frame as it parses it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use gyre_mock::MockServer;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common::*;

/// How long any one wait in these tests may take.
pub const WAIT: Duration = Duration::from_secs(60);

/// A running `gyre serve`; killed on drop.
pub struct Served {
    pub child: Child,
    pub base: String,
    pub http: reqwest::Client,
    /// What it printed on stderr after the listening line.
    pub stderr: Arc<Mutex<String>>,
    token: Option<String>,
}

impl Served {
    /// `gyre serve --port 0 EXTRA` in `env` against `server`.
    pub async fn start(env: &Env, server: &MockServer, extra: &[&str]) -> Served {
        let mut args = vec!["serve", "--port", "0"];
        args.extend_from_slice(extra);
        Served::spawn(env.gyre_on(server, &args)).await
    }

    /// Runs `cmd` (a `gyre serve …`) and waits for its listening line.
    pub async fn spawn(mut cmd: Command) -> Served {
        let mut child = cmd.spawn().expect("gyre serve starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut said = Vec::new();
        let base = tokio::time::timeout(WAIT, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(url) = line.strip_prefix("gyre serve listening on ") {
                    return url.to_string();
                }
                said.push(line);
            }
            panic!("gyre serve ended before listening: {said:?}");
        })
        .await
        .expect("gyre serve listened within 60 s");
        let stderr = Arc::new(Mutex::new(said.join("\n")));
        let keep = stderr.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let mut kept = keep.lock().unwrap();
                kept.push_str(&line);
                kept.push('\n');
            }
        });
        Served {
            child,
            base,
            http: {
                gyre_tools::tls::install_crypto_provider();
                reqwest::Client::new()
            },
            stderr,
            token: None,
        }
    }

    /// Sends `Authorization: Bearer TOKEN` from now on.
    pub fn with_token(mut self, token: &str) -> Served {
        self.token = Some(token.to_string());
        self
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn authorised(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// A request's status and JSON body (`Null` when the body is not JSON).
    pub async fn send(&self, request: reqwest::RequestBuilder) -> (u16, Value) {
        let response = tokio::time::timeout(WAIT, self.authorised(request).send())
            .await
            .expect("answered within 60 s")
            .expect("the request went through");
        let status = response.status().as_u16();
        let body = response.bytes().await.unwrap();
        (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.send(self.http.get(self.url(path))).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(self.http.post(self.url(path)).json(&body)).await
    }

    /// Posts a raw body as `application/json`.
    pub async fn post_raw(&self, path: &str, body: &'static str) -> (u16, Value) {
        let request = self.http.post(self.url(path)).body(body);
        self.send(request.header("content-type", "application/json"))
            .await
    }

    /// `POST /sessions` with `body`; the new session's id and its run (if a
    /// prompt was given).
    pub async fn create(&self, body: Value) -> (String, Option<u64>) {
        let (status, answer) = self.post("/sessions", body).await;
        assert_eq!(status, 201, "{answer}");
        let id = answer["session"]["id"].as_str().unwrap().to_string();
        (id, answer["run"]["run"].as_u64())
    }

    /// `GET /sessions/ID/events`, after `after` (as `Last-Event-ID:
    /// EPOCH-after` or `?after=after`).
    pub async fn events(&self, id: &str, after: u64, how: Resume) -> Events {
        let path = format!("/sessions/{id}/events");
        match how {
            Resume::Header(epoch) => {
                self.events_from(id, Some(&format!("{epoch:x}-{after}")))
                    .await
            }
            Resume::Query => {
                self.open_events(&format!("{path}?after={after}"), None)
                    .await
            }
        }
    }

    /// `GET /sessions/ID/events` with this `Last-Event-ID`, if any.
    pub async fn events_from(&self, id: &str, last_event_id: Option<&str>) -> Events {
        self.open_events(&format!("/sessions/{id}/events"), last_event_id)
            .await
    }

    async fn open_events(&self, path: &str, last_event_id: Option<&str>) -> Events {
        let mut request = self.http.get(self.url(path));
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        let response = tokio::time::timeout(WAIT, self.authorised(request).send())
            .await
            .expect("the stream opened within 60 s")
            .expect("the request went through");
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Events {
            body: Box::pin(response.bytes_stream()),
            buffer: String::new(),
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id().unwrap() as i32
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

/// How a reader says where to start.
#[derive(Debug, Clone, Copy)]
pub enum Resume {
    /// `Last-Event-ID: EPOCH-SEQ`, with this epoch.
    Header(u64),
    /// `?after=SEQ`.
    Query,
}

/// One SSE event.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The epoch of its id (`EPOCH-SEQ`).
    pub epoch: Option<u64>,
    /// The sequence number of its id.
    pub id: Option<u64>,
    pub event: String,
    pub data: Value,
}

impl Frame {
    /// The run of a run event.
    pub fn run(&self) -> Option<u64> {
        self.data["run"].as_u64()
    }

    pub fn is_run_finished(&self, run: u64) -> bool {
        self.event == "run_finished" && self.run() == Some(run)
    }
}

type Body = std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>;

/// An event stream being read.
pub struct Events {
    body: Body,
    buffer: String,
}

impl Events {
    /// The next event (comments skipped); `None` when the stream ends.
    pub async fn next(&mut self) -> Option<Frame> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if let Some(frame) = parse_frame(&block) {
                    return Some(frame);
                }
                continue;
            }
            let chunk = self.body.next().await?.expect("the stream reads");
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    /// Reads until run `run`'s `run_finished` (within [`WAIT`]); every
    /// frame read, that one included.
    pub async fn until_run_finished(&mut self, run: u64) -> Vec<Frame> {
        self.until(|frame| frame.is_run_finished(run)).await
    }

    /// Reads until `last` holds for a frame (within [`WAIT`]).
    pub async fn until(&mut self, last: impl Fn(&Frame) -> bool) -> Vec<Frame> {
        let mut frames = Vec::new();
        tokio::time::timeout(WAIT, async {
            while let Some(frame) = self.next().await {
                let done = last(&frame);
                frames.push(frame);
                if done {
                    return;
                }
            }
            panic!("the stream ended early: {frames:?}");
        })
        .await
        .unwrap_or_else(|_| panic!("not within 60 s; read so far: {frames:#?}"));
        frames
    }
}

/// One SSE block; `None` for a comment-only block.
pub fn parse_frame(block: &str) -> Option<Frame> {
    let (mut epoch, mut id, mut event, mut data) = (None, None, None, String::new());
    for line in block.lines() {
        if line.starts_with(':') || line.is_empty() {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => {
                let (e, seq) = value.split_once('-').expect("ids are EPOCH-SEQ");
                epoch = Some(u64::from_str_radix(e, 16).expect("a hex epoch"));
                id = Some(seq.parse::<u64>().expect("a numeric seq"));
            }
            "event" => event = Some(value.to_string()),
            "data" => data.push_str(value),
            other => panic!("unexpected SSE field {other:?} in {block:?}"),
        }
    }
    let event = event?;
    let data =
        serde_json::from_str(&data).unwrap_or_else(|e| panic!("data not JSON ({e}): {block}"));
    Some(Frame {
        epoch,
        id,
        event,
        data,
    })
}

/// Checks `frames` (one stream, read from its start) are numbered without
/// gaps and hold complete runs in the protocol's order: each run starts
/// with `run_started`, ends with `run_finished`, runs do not interleave,
/// every tool call is started, then ready, then has its result, and the
/// session is `busy` while a run goes on. Returns the runs seen, in order.
pub fn check_stream(frames: &[Frame]) -> Vec<u64> {
    for pair in frames.windows(2) {
        let (a, b) = (pair[0].id.unwrap(), pair[1].id.unwrap());
        assert_eq!(b, a + 1, "no gap or reordering: {pair:?}");
        assert_eq!(pair[0].epoch, pair[1].epoch, "one numbering: {pair:?}");
    }
    let mut runs = Vec::new();
    let mut current: Option<u64> = None;
    let mut status = "idle".to_string();
    let mut calls: std::collections::HashMap<String, u8> = Default::default();
    for frame in frames {
        if frame.event == "status" {
            status = frame.data["status"].as_str().unwrap().to_string();
            continue;
        }
        let run = frame
            .run()
            .unwrap_or_else(|| panic!("a run event: {frame:?}"));
        match (&frame.event[..], current) {
            ("run_started", None) => {
                assert!(!runs.contains(&run), "run {run} started twice");
                current = Some(run);
                runs.push(run);
            }
            ("run_started", Some(other)) => panic!("run {run} started inside run {other}"),
            (_, None) => panic!("{frame:?} outside a run"),
            (_, Some(now)) => assert_eq!(run, now, "runs do not interleave: {frame:?}"),
        }
        assert_ne!(status, "idle", "a run event while idle: {frame:?}");
        let step = |calls: &mut std::collections::HashMap<String, u8>, id: &str, from: u8| {
            let at = calls.entry(id.to_string()).or_insert(0);
            assert_eq!(*at, from, "call {id} out of order at {frame:?}");
            *at = from + 1;
        };
        match &frame.event[..] {
            "tool_call_started" => step(&mut calls, frame.data["call_id"].as_str().unwrap(), 0),
            "tool_call_ready" => step(&mut calls, frame.data["call"]["id"].as_str().unwrap(), 1),
            "tool_result" => step(
                &mut calls,
                frame.data["result"]["call_id"].as_str().unwrap(),
                2,
            ),
            "run_finished" => current = None,
            _ => {}
        }
    }
    assert_eq!(current, None, "the last run finished");
    runs
}
