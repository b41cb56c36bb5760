use std::sync::Arc;
use std::time::{Duration, Instant};

use gyre_tools::ToolError;
use serde_json::json;
use tokio::sync::mpsc;

use crate::{FAKE_KEY, Fixture};

/// Processes of group `pgid` that are still alive (zombies excluded: they
/// run nothing and wait only for their reaper).
fn live_members(pgid: i32) -> Vec<i32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
        let Some(after_comm) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = after_comm.split_whitespace().collect();
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
            members.push(pid);
        }
    }
    members
}

/// Waits (bounded) for the group to have no live process.
async fn group_is_gone(pgid: i32) -> bool {
    for _ in 0..200 {
        if live_members(pgid).is_empty() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// A fixture whose progress chunks go to a channel.
fn with_progress() -> (Fixture, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let fx = Fixture::new().with_progress(Arc::new(move |chunk: &str| {
        let _ = tx.send(chunk.to_owned());
    }));
    (fx, rx)
}

/// Waits for the first progress line of the form `PID <n>`.
async fn first_pid(rx: &mut mpsc::UnboundedReceiver<String>) -> i32 {
    let mut seen = String::new();
    let wait = async {
        while let Some(chunk) = rx.recv().await {
            seen.push_str(&chunk);
            let complete = &seen[..seen.rfind('\n').map_or(0, |i| i + 1)];
            if let Some(line) = complete.lines().find(|l| l.starts_with("PID ")) {
                return line[4..].trim().parse::<i32>().unwrap();
            }
        }
        panic!("progress ended without a PID line");
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .unwrap()
}

#[tokio::test]
async fn runs_a_command_in_the_workspace_root() {
    let fx = Fixture::new();
    fx.write("marker.txt", "");
    let out = fx
        .call(
            "bash",
            json!({"command": "pwd; ls", "description": "Show where we are"}),
        )
        .await
        .unwrap();
    assert_eq!(
        crate::text(&out),
        format!("{}\nmarker.txt\n", fx.root().display())
    );
    assert!(crate::is_success(&out));
    assert_eq!(out.title, "bash: Show where we are (exit 0): marker.txt");
}

#[tokio::test]
async fn non_zero_exit_is_an_error_outcome_with_the_output() {
    let fx = Fixture::new();
    let out = fx
        .call("bash", json!({"command": "echo oops; exit 3"}))
        .await
        .unwrap();
    assert_eq!(crate::text(&out), "oops\nExit code: 3");
    assert!(!crate::is_success(&out));
    assert_eq!(out.title, "bash: echo oops; exit 3 (exit code: 3)");
}

#[tokio::test]
async fn stdout_and_stderr_keep_their_order() {
    let fx = Fixture::new();
    let text = fx
        .ok(
            "bash",
            json!({"command": "echo a; echo b >&2; echo c; echo d >&2; printf e"}),
        )
        .await;
    assert_eq!(text, "a\nb\nc\nd\ne");
}

#[tokio::test]
async fn api_keys_are_not_in_the_child_environment() {
    let fx = Fixture::new();
    assert_eq!(std::env::var("OPENAI_API_KEY").unwrap(), FAKE_KEY);
    let text = fx
        .ok(
            "bash",
            json!({"command": "env; echo \"A=${ANTHROPIC_API_KEY-unset} O=${OPENAI_API_KEY-unset} G=${GEMINI_API_KEY-unset} GG=${GOOGLE_API_KEY-unset}\""}),
        )
        .await;
    assert!(!text.contains(FAKE_KEY), "{text}");
    assert!(
        text.ends_with("A=unset O=unset G=unset GG=unset\n"),
        "{text}"
    );
    assert!(
        text.contains("PATH="),
        "the rest of the environment is kept"
    );
}

#[tokio::test]
async fn stdin_is_empty() {
    let fx = Fixture::new();
    let text = fx.ok("bash", json!({"command": "cat; echo done"})).await;
    assert_eq!(text, "done\n");
}

#[tokio::test]
async fn huge_output_keeps_head_and_tail() {
    let fx = Fixture::new();
    let text = fx.ok("bash", json!({"command": "seq 1 200000"})).await;
    assert!(text.len() <= 30_100, "{}", text.len());
    assert!(text.starts_with("1\n2\n3\n"));
    assert!(text.ends_with("199999\n200000\n"));
    let marker = text.lines().find(|l| l.starts_with("[... ")).unwrap();
    assert!(marker.ends_with(" bytes) omitted ...]"), "{marker}");
    let omitted: usize = marker[5..].split(' ').next().unwrap().parse().unwrap();
    let kept = text.lines().count() - 1;
    assert_eq!(omitted + kept, 200_000);
}

#[tokio::test]
async fn progress_reports_output_as_it_comes() {
    let (fx, mut rx) = with_progress();
    let text = fx
        .ok("bash", json!({"command": "echo one; echo two"}))
        .await;
    drop(fx);
    let mut streamed = String::new();
    while let Some(chunk) = rx.recv().await {
        streamed.push_str(&chunk);
    }
    assert_eq!(streamed, text);
}

#[tokio::test]
async fn a_timeout_kills_the_whole_group_promptly() {
    let fx = Fixture::new();
    let started = Instant::now();
    let err = fx
        .err(
            "bash",
            json!({"command": "echo PID $$; sleep 30 & sleep 30; wait", "timeout_ms": 500}),
        )
        .await;
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(500), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(1500), "{elapsed:?}");
    let ToolError::Timeout { timeout_ms, output } = &err else {
        panic!("expected a timeout, got {err}");
    };
    assert_eq!(*timeout_ms, 500);
    let message = err.to_string();
    assert!(
        message.starts_with("the command timed out after 500 ms"),
        "{message}"
    );
    assert!(message.contains("PID "), "{message}");
    let pgid: i32 = output.trim().strip_prefix("PID ").unwrap().parse().unwrap();
    assert!(group_is_gone(pgid).await, "left: {:?}", live_members(pgid));
}

#[tokio::test]
async fn cancellation_kills_the_whole_group() {
    let (fx, mut rx) = with_progress();
    let fx = Arc::new(fx);
    let runner = {
        let fx = fx.clone();
        tokio::spawn(async move {
            fx.call(
                "bash",
                json!({"command": "echo PID $$; sleep 30 & sleep 30; wait"}),
            )
            .await
        })
    };
    let pgid = first_pid(&mut rx).await;
    assert!(!live_members(pgid).is_empty());
    let cancelled_at = Instant::now();
    fx.ctx.cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(5), runner)
        .await
        .unwrap()
        .unwrap();
    assert!(cancelled_at.elapsed() < Duration::from_secs(1));
    match result {
        Err(ToolError::Cancelled { output }) => assert!(output.starts_with("PID ")),
        other => panic!("expected cancellation, got {other:?}"),
    }
    assert!(group_is_gone(pgid).await, "left: {:?}", live_members(pgid));
}

#[tokio::test]
async fn dropping_the_future_kills_the_whole_group() {
    let (fx, mut rx) = with_progress();
    let tool = fx.registry.get("bash").unwrap();
    // A boxed future: dropping `call` drops the call itself.
    let mut call = tool.run(
        json!({"command": "sleep 30 & echo PID $$; sleep 30; wait"}),
        &fx.ctx,
    );
    let pgid = tokio::select! {
        result = &mut call => panic!("the command ended early: {result:?}"),
        pgid = first_pid(&mut rx) => pgid,
    };
    assert!(
        live_members(pgid).len() >= 2,
        "the shell and a background job run"
    );
    drop(call);
    assert!(group_is_gone(pgid).await, "left: {:?}", live_members(pgid));
}

#[tokio::test]
async fn background_jobs_do_not_outlive_the_command() {
    let fx = Fixture::new();
    let started = Instant::now();
    let text = fx
        .ok("bash", json!({"command": "sleep 30 & echo PID $$"}))
        .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let pgid: i32 = text.trim().strip_prefix("PID ").unwrap().parse().unwrap();
    assert!(group_is_gone(pgid).await, "left: {:?}", live_members(pgid));
}

#[tokio::test]
async fn unsupported_and_empty_requests_are_clear_errors() {
    let fx = Fixture::new();
    let err = fx
        .err("bash", json!({"command": "ls", "run_in_background": true}))
        .await;
    assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
    assert!(
        err.to_string()
            .contains("run_in_background is not supported yet")
    );
    let err = fx.err("bash", json!({"command": "  "})).await;
    assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
}

#[tokio::test]
async fn output_after_a_kill_by_signal_is_reported() {
    let fx = Fixture::new();
    let out = fx
        .call("bash", json!({"command": "echo bye; kill -9 $$"}))
        .await
        .unwrap();
    assert_eq!(crate::text(&out), "bye\nKilled by signal 9");
    assert!(!crate::is_success(&out));
}
