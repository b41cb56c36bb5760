//! Fencing (issue 22, item 1): a run paused past its lease (SIGSTOP of its
//! process group and of its shell's) is taken over by a `--resume`, which
//! finishes; the paused run, continued, ends with the takeover error and
//! neither stores nor executes anything more; the command A left running
//! was stopped by B before B settled its call. On SQLite and PostgreSQL.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use gyre_mock::{Item, MockServer, Reply, Script, Step, StreamReply, When};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::common::*;
use crate::sessions_pg::Schema;

/// After `n` tool results, call bash with `command`.
fn after(n: u32, items: Vec<Item>) -> Step {
    Step {
        when: When {
            tool_results: Some(n),
            ..When::default()
        },
        times: None,
        reply: Reply::Stream(StreamReply {
            items,
            ..StreamReply::default()
        }),
    }
}

/// Four effects on a ledger, one per turn; the second sleeps (the pause
/// hits it) and first writes its shell's pid.
fn ledger_script() -> Script {
    let bash = |command: &str| call("bash", json!({ "command": command }));
    Script::new(vec![
        after(0, vec![bash("echo T00 >> ledger.txt")]),
        after(
            1,
            vec![bash("echo $$ > shell.pid; sleep 3; echo T01 >> ledger.txt")],
        ),
        after(2, vec![bash("echo T02 >> ledger.txt")]),
        after(3, vec![bash("echo T03 >> ledger.txt")]),
        after(4, vec![Item::Text("ledger done".into())]),
    ])
}

#[allow(unsafe_code)]
fn signal_group(pgid: i32, signal: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions; the group is one
    // this test started.
    let sent = unsafe { libc::kill(-pgid, signal) };
    assert_eq!(sent, 0, "kill(-{pgid}, {signal})");
}

/// The process group of `pid` (field 5 of /proc/PID/stat).
fn pgid_of(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    after_name.split(' ').nth(2).unwrap().parse().unwrap()
}

async fn wait_for_file(path: &Path) -> String {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Ok(text) = std::fs::read_to_string(path)
                && text.ends_with('\n')
            {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{} never appeared", path.display()))
}

async fn paused_run_is_fenced(database_url: Option<&str>) {
    let server = MockServer::start(ledger_script()).await.unwrap();
    let env = Env::new();
    let with_db = |mut cmd: Command| {
        if let Some(url) = database_url {
            cmd.env("GYRE_DATABASE_URL", url);
        }
        cmd
    };
    // Run A, in a process group of its own so it can be stopped whole.
    let mut a = with_db(env.run_on(&server, "keep the ledger", &[]));
    a.process_group(0);
    let a = a.spawn().unwrap();
    let a_pid = i32::try_from(a.id().unwrap()).unwrap();
    let shell_pid: i32 = wait_for_file(&env.path("shell.pid"))
        .await
        .trim()
        .parse()
        .unwrap();
    let shell_group = pgid_of(shell_pid);
    signal_group(a_pid, libc::SIGSTOP);
    signal_group(shell_group, libc::SIGSTOP);
    let list = output(with_db(env.gyre(&["sessions", "list"]))).await;
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    let session_id = stdout(&list)
        .split_whitespace()
        .next()
        .unwrap_or_else(|| panic!("no session listed: {}", stdout(&list)))
        .to_string();

    // Run B waits out A's lease, takes over, answers the interrupted call
    // and finishes the ledger.
    let b = output(with_db(env.run_on(
        &server,
        "go on",
        &["--resume", &session_id],
    )))
    .await;
    assert_eq!(b.status.code(), Some(0), "B: {}", stderr(&b));
    let b_lines = json_lines(&b);
    assert_eq!(b_lines.last().unwrap()["result"], "ledger done");
    let requests_after_b = server.requests().len();

    // A continues: it must notice at once and end with the takeover error.
    signal_group(shell_group, libc::SIGCONT);
    signal_group(a_pid, libc::SIGCONT);
    let a = tokio::time::timeout(Duration::from_secs(30), a.wait_with_output())
        .await
        .expect("A ended after it was continued")
        .unwrap();
    assert_eq!(a.status.code(), Some(1), "A: {}", stderr(&a));
    let a_lines = json_lines(&a);
    let result = a_lines.last().unwrap();
    assert_eq!(result["type"], "result", "{a_lines:?}");
    assert_eq!(result["is_error"], true);
    let said = result.to_string();
    assert!(
        said.contains("session taken over by another run"),
        "A's result: {said}"
    );
    // A asked the model nothing more.
    assert_eq!(
        server.requests().len(),
        requests_after_b,
        "A made a request"
    );

    // Give a late effect of A the chance to show, then read the ledger.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let ledger = std::fs::read_to_string(env.path("ledger.txt")).unwrap();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for line in ledger.lines() {
        *counts.entry(line).or_default() += 1;
    }
    for effect in ["T00", "T02", "T03"] {
        assert_eq!(counts.get(effect), Some(&1), "{effect} in {ledger:?}");
    }
    // B found A's command still running (stopped, not continued) and
    // stopped it before it settled the call: its effect never happened.
    assert_eq!(counts.get("T01"), None, "{ledger:?}");
    assert!(counts.keys().all(|k| k.starts_with('T')), "{ledger:?}");

    // The export has one result per call, each after its call.
    let export = output(with_db(env.gyre(&["sessions", "export", &session_id]))).await;
    assert_eq!(export.status.code(), Some(0), "{}", stderr(&export));
    let mut calls = Vec::new();
    let mut results: HashMap<String, usize> = HashMap::new();
    for line in stdout(&export).lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        if line["type"] != "message" {
            continue;
        }
        for part in line["message"]["parts"].as_array().unwrap() {
            match part["type"].as_str() {
                Some("tool_call") => calls.push(part["id"].as_str().unwrap().to_string()),
                Some("tool_result") => {
                    let id = part["call_id"].as_str().unwrap().to_string();
                    assert!(calls.contains(&id), "result before its call: {id}");
                    *results.entry(id).or_default() += 1;
                }
                _ => {}
            }
        }
    }
    assert_eq!(calls.len(), 4, "{}", stdout(&export));
    assert!(
        stdout(&export).contains("its command was still running and was stopped now"),
        "the interrupted result says the command was found running: {}",
        stdout(&export)
    );
    for id in &calls {
        assert_eq!(results.get(id), Some(&1), "results of {id}");
    }
    assert_eq!(results.len(), calls.len());
}

#[tokio::test]
async fn a_run_paused_past_its_lease_is_fenced_on_sqlite() {
    paused_run_is_fenced(None).await;
}

#[tokio::test]
async fn a_run_paused_past_its_lease_is_fenced_on_postgres() {
    let schema = Schema::create().await;
    paused_run_is_fenced(Some(&schema.url)).await;
    schema.drop_now().await;
}
