//! `gyre acp` driven by a real ACP client (the `agent-client-protocol`
//! crate's client side) over the real binary's stdin/stdout, against the
//! scripted model: a permission request, a diff, a cancel, a reload.
//!
//! The tests wait for what proves a state (an update, a permission request,
//! a line from the running command), each wait bounded; never for a while.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, InitializeRequest, LoadSessionRequest, NewSessionRequest, PromptRequest,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, StopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, ConnectTo, Lines};
use futures::StreamExt;
use futures::channel::mpsc;
use gyre_mock::{Item, MockServer, Reply, Script, Step, StreamReply, When};
use gyre_protocol::{Part, Role};
use gyre_store::SessionStore;
use gyre_store_sql::SqliteStore;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, watch};

use crate::common::*;

/// What the editor saw, besides responses.
pub struct Seen {
    updates: mpsc::UnboundedReceiver<SessionNotification>,
    pub permissions: Arc<Mutex<Vec<RequestPermissionRequest>>>,
    /// How many permission requests have come.
    asked: watch::Receiver<usize>,
}

impl Seen {
    /// Every update until one matches `done` (bounded in time), as JSON.
    pub async fn until(&mut self, done: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let next = tokio::time::timeout_at(deadline, self.updates.next())
                .await
                .unwrap_or_else(|_| panic!("no matching update within 30 s; saw {seen:#?}"))
                .expect("the connection closed");
            let update = serde_json::to_value(&next.update).unwrap();
            let matched = done(&update);
            seen.push(update);
            if matched {
                return seen;
            }
        }
    }

    /// Until `n` permission requests have come (bounded in time).
    pub async fn asked(&mut self, n: usize) {
        tokio::time::timeout(
            Duration::from_secs(30),
            self.asked.wait_for(|&asked| asked >= n),
        )
        .await
        .unwrap_or_else(|_| panic!("fewer than {n} permission requests within 30 s"))
        .expect("the editor is gone");
    }

    /// The updates already received.
    pub fn drain(&mut self) -> Vec<Value> {
        let mut seen = Vec::new();
        while let Ok(next) = self.updates.try_recv() {
            seen.push(serde_json::to_value(&next.update).unwrap());
        }
        seen
    }
}

/// When the editor answers permission requests (always "allow once").
#[derive(Clone)]
enum Answer {
    AtOnce,
    /// Each answer waits for a permit of this `Notify`.
    When(Arc<Notify>),
}

/// Starts `gyre acp` and runs `body` as its editor; every line the process
/// wrote on stdout must be a JSON-RPC message.
pub async fn with_editor<T>(
    env: &Env,
    server: &MockServer,
    body: impl AsyncFnOnce(ConnectionTo<Agent>, Seen) -> T,
) -> T {
    with_editor_answering(env, server, Answer::AtOnce, body).await
}

async fn with_editor_answering<T>(
    env: &Env,
    server: &MockServer,
    answer: Answer,
    body: impl AsyncFnOnce(ConnectionTo<Agent>, Seen) -> T,
) -> T {
    let mut cmd = env.gyre_on(server, &["acp"]);
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    // Read as it comes (a full pipe would stall the agent), shown if it
    // fails.
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stderr_text = tokio::spawn(async move {
        let mut text = String::new();
        let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr_pipe, &mut text).await;
        text
    });
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let transport = transport(stdin, stdout, lines.clone());

    let (updates_tx, updates) = mpsc::unbounded();
    let permissions = Arc::new(Mutex::new(Vec::new()));
    let asked = permissions.clone();
    let (asked_tx, asked_rx) = watch::channel(0);
    let seen = Seen {
        updates,
        permissions,
        asked: asked_rx,
    };
    let result = tokio::time::timeout(
        Duration::from_secs(90),
        Client
            .v1()
            .name("gyre-test-editor")
            .on_receive_notification(
                async move |notification: SessionNotification, _cx: ConnectionTo<Agent>| {
                    let _ = updates_tx.unbounded_send(notification);
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async move |request: RequestPermissionRequest,
                            responder: Responder<RequestPermissionResponse>,
                            cx: ConnectionTo<Agent>| {
                    let count = {
                        let mut asked = asked.lock().unwrap();
                        asked.push(request);
                        asked.len()
                    };
                    asked_tx.send_replace(count);
                    let allow = RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
                        SelectedPermissionOutcome::new("allow_once"),
                    ));
                    match answer.clone() {
                        Answer::AtOnce => responder.respond(allow),
                        // Answered later, outside the editor's dispatch loop.
                        Answer::When(permit) => cx.spawn(async move {
                            permit.notified().await;
                            responder.respond(allow)
                        }),
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(transport, async move |cx| Ok(body(cx, seen).await)),
    )
    .await
    .expect("the editor's session did not end within 90 s")
    .expect("the ACP connection failed");
    // Closing stdin ends `gyre acp`, which exits 0.
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("gyre acp did not exit after its stdin closed")
        .unwrap();
    let stderr_text = stderr_text.await.unwrap_or_default();
    assert_eq!(status.code(), Some(0), "gyre acp's stderr: {stderr_text}");
    for line in lines.lock().unwrap().iter() {
        let message: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
    }
    result
}

/// The child's stdio as the line transport the SDK speaks over.
fn transport(
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
    lines: Arc<Mutex<Vec<String>>>,
) -> impl ConnectTo<Client> + 'static {
    let outgoing = futures::sink::unfold(stdin, async |mut stdin, line: String| {
        stdin.write_all(line.as_bytes()).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await?;
        Ok::<_, std::io::Error>(stdin)
    });
    let incoming = futures::stream::unfold(
        (BufReader::new(stdout).lines(), lines),
        async |(mut reader, lines)| match reader.next_line().await {
            Ok(Some(line)) => {
                lines.lock().unwrap().push(line.clone());
                Some((Ok(line), (reader, lines)))
            }
            Ok(None) => None,
            Err(e) => Some((Err(e), (reader, lines))),
        },
    );
    Lines::new(Box::pin(outgoing), Box::pin(incoming))
}

pub fn of_kind<'a>(updates: &'a [Value], kind: &str) -> Vec<&'a Value> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

fn text_of(updates: &[Value], kind: &str) -> String {
    of_kind(updates, kind)
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap_or_default())
        .collect()
}

fn script() -> Script {
    Script::linear(vec![
        vec![
            Item::Text("Writing it.".into()),
            call(
                "write",
                json!({"file_path": "hello.txt", "content": "hello\n"}),
            ),
        ],
        vec![Item::Text("Done.".into())],
        vec![call(
            "bash",
            // Says it runs (see `Fifo`), then runs long.
            json!({
                "command": "echo running > started; sleep 30",
                "description": "wait a long time"
            }),
        )],
        vec![Item::Text("Never sent: the run was cancelled.".into())],
    ])
}

#[tokio::test]
async fn an_editor_runs_a_prompt_with_a_permission_cancels_one_and_reloads_the_session() {
    let server = MockServer::start(script()).await.unwrap();
    let env = Env::new();
    let workspace = std::fs::canonicalize(env.workspace.path()).unwrap();

    let session_id = with_editor(&env, &server, async |cx, mut seen| {
        let init = cx
            .send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await
            .unwrap();
        assert_eq!(init.protocol_version, ProtocolVersion::V1);
        assert!(init.agent_capabilities.load_session);
        assert!(init.agent_capabilities.prompt_capabilities.embedded_context);
        assert_eq!(init.agent_info.unwrap().name, "gyre");

        let session = cx
            .send_request(NewSessionRequest::new(workspace.clone()))
            .block_task()
            .await
            .unwrap()
            .session_id;

        // 1. A write in the default mode: the editor is asked, allows once.
        let done = cx
            .send_request(PromptRequest::new(
                session.clone(),
                vec!["write hello.txt".into()],
            ))
            .block_task()
            .await
            .unwrap();
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        // Updates come before the response that ends the prompt.
        let updates = seen.drain();
        assert_eq!(text_of(&updates, "agent_message_chunk"), "Writing it.Done.");
        let calls = of_kind(&updates, "tool_call");
        assert_eq!(calls.len(), 1, "{updates:#?}");
        let call_id = calls[0]["toolCallId"].clone();
        assert_eq!(calls[0]["kind"], "edit");
        // `pending` is the default status, which the wire leaves out.
        assert!(calls[0]["status"].is_null(), "{}", calls[0]);
        let call_updates = of_kind(&updates, "tool_call_update");
        // Its details come while it is still `pending` (it waits for the
        // answer); `in_progress` once allowed.
        let statuses: Vec<&Value> = call_updates.iter().map(|u| &u["status"]).collect();
        assert_eq!(
            statuses,
            [&Value::Null, &json!("in_progress"), &json!("completed")]
        );
        assert!(call_updates.iter().all(|u| u["toolCallId"] == call_id));
        assert_eq!(call_updates[0]["title"], "Write hello.txt");
        let path = workspace.join("hello.txt").display().to_string();
        assert_eq!(
            call_updates[2]["content"],
            json!([{"type": "diff", "path": path, "newText": "hello\n"}])
        );
        {
            let asked = seen.permissions.lock().unwrap();
            assert_eq!(asked.len(), 1);
            let request = serde_json::to_value(&asked[0]).unwrap();
            assert_eq!(request["toolCall"]["toolCallId"], call_id);
            assert_eq!(request["toolCall"]["title"], "Write hello.txt");
            let options: Vec<(&str, &str)> = request["options"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| (o["optionId"].as_str().unwrap(), o["kind"].as_str().unwrap()))
                .collect();
            assert_eq!(
                options,
                [
                    ("allow_once", "allow_once"),
                    ("allow_always", "allow_always"),
                    ("reject_once", "reject_once")
                ]
            );
            let always = request["options"][1]["name"].as_str().unwrap();
            assert!(always.contains("edit("), "the rule it adds: {always}");
        }
        assert_eq!(
            std::fs::read_to_string(workspace.join("hello.txt")).unwrap(),
            "hello\n"
        );

        // 2. A long command, cancelled once it runs.
        let mut started = Fifo::new(&workspace.join("started"));
        let prompt = cx.send_request(PromptRequest::new(
            session.clone(),
            vec!["wait for a long time".into()],
        ));
        seen.until(|u| u["sessionUpdate"] == "tool_call" && u["kind"] == "execute")
            .await;
        started.line().await;
        assert_eq!(
            seen.permissions.lock().unwrap().len(),
            2,
            "bash was asked about before it ran"
        );
        let cancelled_at = Instant::now();
        cx.send_notification(CancelNotification::new(session.clone()))
            .unwrap();
        let stopped = prompt.block_task().await.unwrap();
        assert_eq!(stopped.stop_reason, StopReason::Cancelled);
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(10),
            "the cancel took {:?}",
            cancelled_at.elapsed()
        );
        let updates = seen.until(|u| u["status"] == "failed").await;
        let failed = updates.last().unwrap();
        assert_eq!(failed["sessionUpdate"], "tool_call_update");
        assert!(
            seen.drain()
                .iter()
                .all(|u| u["content"]["text"] != "Never sent: the run was cancelled.")
        );
        session.0.to_string()
    })
    .await;

    // The store holds both prompts, the written file's call and the
    // interrupted command.
    let store = SqliteStore::open(&env.database()).await.unwrap();
    let messages = store.load_messages(&session_id).await.unwrap();
    let prompts: Vec<String> = messages
        .iter()
        .filter(|m| m.role == Role::User && m.origin.is_conversation())
        .map(|m| m.text())
        .filter(|t| !t.is_empty())
        .collect();
    assert_eq!(prompts, ["write hello.txt", "wait for a long time"]);
    let results: Vec<(String, bool)> = messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some((r.name.clone(), r.is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [("write".to_string(), false), ("bash".to_string(), true)]
    );

    // 3. Another editor process loads the session: the conversation replays.
    with_editor(&env, &server, async |cx, mut seen| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await
            .unwrap();
        cx.send_request(LoadSessionRequest::new(
            session_id.clone(),
            workspace.clone(),
        ))
        .block_task()
        .await
        .unwrap();
        // The commands are advertised after the response, when they may
        // or may not have come yet: the replay is the rest.
        let updates: Vec<Value> = seen
            .drain()
            .into_iter()
            .filter(|u| u["sessionUpdate"] != "available_commands_update")
            .collect();
        let kinds: Vec<&str> = updates
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_message_chunk",
                "tool_call",
                "tool_call_update",
                "agent_message_chunk",
                "user_message_chunk",
                "tool_call",
                "tool_call_update"
            ],
            "{updates:#?}"
        );
        assert_eq!(updates[0]["content"]["text"], "write hello.txt");
        assert_eq!(updates[2]["title"], "Write hello.txt");
        assert_eq!(updates[3]["status"], "completed");
        assert_eq!(updates[3]["content"][0]["type"], "diff");
        assert_eq!(updates[4]["content"]["text"], "Done.");
        assert_eq!(updates[6]["kind"], "execute");
        assert_eq!(updates[7]["status"], "failed");
    })
    .await;
}

#[tokio::test]
async fn a_prompt_for_an_unknown_session_is_an_error_and_the_connection_goes_on() {
    let server = MockServer::start(always("hi")).await.unwrap();
    let env = Env::new();
    with_editor(&env, &server, async |cx, _seen| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await
            .unwrap();
        let error = cx
            .send_request(PromptRequest::new("no-such-session", vec!["hi".into()]))
            .block_task()
            .await
            .unwrap_err();
        assert!(error.message.contains("no open session"), "{error:?}");
        let error = cx
            .send_request(LoadSessionRequest::new(
                "no-such-session",
                env.workspace.path(),
            ))
            .block_task()
            .await
            .unwrap_err();
        assert!(error.message.contains("no-such-session"), "{error:?}");
        // Still serving.
        let session = cx
            .send_request(NewSessionRequest::new(env.workspace.path()))
            .block_task()
            .await
            .unwrap();
        let done = cx
            .send_request(PromptRequest::new(session.session_id, vec!["hello".into()]))
            .block_task()
            .await
            .unwrap();
        assert_eq!(done.stop_reason, StopReason::EndTurn);
    })
    .await;
}

/// A step that answers requests whose last message contains `needle`.
fn on_last(needle: &str, tool_results: Option<u32>, items: Vec<Item>) -> Step {
    Step {
        when: When {
            last_message_contains: Some(needle.into()),
            tool_results,
            ..When::default()
        },
        times: None,
        reply: Reply::Stream(StreamReply {
            items,
            ..StreamReply::default()
        }),
    }
}

#[tokio::test]
async fn a_session_waiting_for_permission_does_not_hold_up_another() {
    let script = Script::new(vec![
        on_last(
            "write slowly",
            Some(0),
            vec![call(
                "write",
                json!({"file_path": "slow.txt", "content": "s"}),
            )],
        ),
        on_last("wrote", Some(1), vec![Item::Text("Slow one done.".into())]),
        on_last("say hi", Some(0), vec![Item::Text("hi".into())]),
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let permit = Arc::new(Notify::new());
    let answer = Answer::When(permit.clone());
    with_editor_answering(&env, &server, answer, async |cx, mut seen| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await
            .unwrap();
        let mut sessions = Vec::new();
        for _ in 0..2 {
            let created = cx
                .send_request(NewSessionRequest::new(env.workspace.path()))
                .block_task()
                .await
                .unwrap();
            sessions.push(created.session_id);
        }
        let slow = cx.send_request(PromptRequest::new(
            sessions[0].clone(),
            vec!["write slowly".into()],
        ));
        seen.asked(1).await;
        // The first session waits for its answer; the second one runs.
        let quick = cx
            .send_request(PromptRequest::new(
                sessions[1].clone(),
                vec!["say hi".into()],
            ))
            .block_task()
            .await
            .unwrap();
        assert_eq!(quick.stop_reason, StopReason::EndTurn);
        assert!(!env.path("slow.txt").exists(), "not answered yet");
        permit.notify_one();
        let slow = slow.block_task().await.unwrap();
        assert_eq!(slow.stop_reason, StopReason::EndTurn);
        assert_eq!(std::fs::read_to_string(env.path("slow.txt")).unwrap(), "s");
    })
    .await;
}

#[tokio::test]
async fn flags_of_one_run_are_usage_errors() {
    let env = Env::new();
    let out = output(env.gyre(&["acp", "--resume", "x"])).await;
    assert_usage_error(&out, "--resume does not apply to `gyre acp`");
    let out = output(env.gyre(&["mcp-server", "--output-format", "json"])).await;
    assert_usage_error(&out, "--output-format does not apply to `gyre mcp-server`");
}
