//! SIGINT during a long command: the run ends at once, kills the command,
//! exits 130, and the store holds the interrupted state.

use std::time::{Duration, Instant};

use gyre_mock::{MockServer, Script};
use gyre_store::SessionStore;
use gyre_store_sql::SqliteStore;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::common::*;

#[tokio::test]
async fn sigint_during_a_sleep_exits_130_within_a_second() {
    let marker = "30.2718";
    let script = Script::linear(vec![vec![call(
        "bash",
        json!({"command": format!("echo started; sleep {marker}")}),
    )]]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let mut child = env
        .gyre_on(
            &server,
            &[
                "run",
                "sleep",
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
    let mut session_id = String::new();
    let waiting = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let value: serde_json::Value = serde_json::from_str(&line).unwrap();
            if value["subtype"] == "init" {
                session_id = value["session_id"].as_str().unwrap().to_string();
            }
            if value["event"]["type"] == "tool_progress"
                && value["event"]["output"]
                    .as_str()
                    .unwrap_or("")
                    .contains("started")
            {
                return;
            }
        }
        panic!("gyre ended before the command started");
    });
    waiting.await.expect("the command did not start");
    assert!(sleep_running(marker), "the command is running");

    let pid = child.id().unwrap() as i32;
    let sent = Instant::now();
    assert_eq!(send_sigint(pid), 0);
    let mut rest = Vec::new();
    while let Ok(Some(line)) = lines.next_line().await {
        rest.push(line);
    }
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .unwrap()
        .unwrap();
    let took = sent.elapsed();
    assert!(took < Duration::from_secs(1), "took {took:?}");
    assert_eq!(status.code(), Some(130));
    // SIGKILL to the group is delivered at once, but a loaded machine may
    // take a moment to tear the grandchild down.
    let deadline = Instant::now() + Duration::from_secs(2);
    while sleep_running(marker) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!sleep_running(marker), "no child process is left");

    let result: serde_json::Value = serde_json::from_str(rest.last().unwrap()).unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "error_during_execution");

    let store = SqliteStore::open(&env.database()).await.unwrap();
    let messages = store.load_messages(&session_id).await.unwrap();
    assert_eq!(
        messages.len(),
        3,
        "prompt, call, interrupted result: {messages:?}"
    );
    let interrupted = messages[2].tool_results().next().unwrap();
    assert!(interrupted.is_error);
    assert!(
        interrupted.text_content().to_lowercase().contains("cancel"),
        "{interrupted:?}"
    );
    let state = store.load_state(&session_id).await.unwrap().unwrap();
    assert_eq!(state["transition"], json!({"finished": "cancelled"}));
}

#[allow(unsafe_code)]
fn send_sigint(pid: i32) -> i32 {
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our child's.
    unsafe { libc::kill(pid, libc::SIGINT) }
}

fn sleep_running(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).contains(marker))
            .unwrap_or(false)
    })
}
