use std::sync::Arc;
use std::time::{Duration, Instant};

use gyre_tools::{OutputLimits, ToolError, ToolKind};
use serde_json::json;
use tokio::sync::mpsc;

use crate::{FAKE_KEY, Fixture};

/// Processes of group `pgid` that are still alive (zombies excluded: they
/// run nothing and wait only for their reaper).
pub fn live_members(pgid: i32) -> Vec<i32> {
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
pub async fn group_is_gone(pgid: i32) -> bool {
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
            json!({"command": "env; echo \"A=${ANTHROPIC_API_KEY-unset} O=${OPENAI_API_KEY-unset} G=${GEMINI_API_KEY-unset} GG=${GOOGLE_API_KEY-unset} R=${OPENROUTER_API_KEY-unset} D=${GYRE_DATABASE_URL-unset}\""}),
        )
        .await;
    assert!(!text.contains(FAKE_KEY), "{text}");
    assert!(
        text.ends_with("A=unset O=unset G=unset GG=unset R=unset D=unset\n"),
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
async fn huge_output_keeps_head_and_tail_within_the_budget() {
    let fx = Fixture::new();
    let text = fx.ok("bash", json!({"command": "seq 1 200000"})).await;
    // The default budget: 10000 tokens of 4 bytes.
    assert!(text.len() <= 40_000, "{}", text.len());
    assert!(text.starts_with("1\n2\n3\n"));
    assert!(text.ends_with("199999\n200000\n"));
    let marker = text.lines().find(|l| l.starts_with("[... ")).unwrap();
    // No spill directory: nothing names a file.
    assert!(marker.ends_with(" bytes) cut ...]"), "{marker}");
    let omitted: usize = marker[5..].split(' ').next().unwrap().parse().unwrap();
    let kept = text.lines().count() - 1;
    assert_eq!(omitted + kept, 200_000);
    let (head, tail) = text.split_once(marker).unwrap();
    assert!(tail.len() > head.len(), "the tail gets the larger share");
}

#[tokio::test]
async fn huge_output_is_spilled_whole_to_a_file_the_result_names() {
    let mut fx = Fixture::new();
    let spill = tempfile::tempdir().unwrap();
    fx.ctx.output = Arc::new(OutputLimits {
        max_result_tokens: 1_000,
        spill_dir: Some(spill.path().to_path_buf()),
    });
    let out = fx
        .call("bash", json!({"command": "seq 1 200000; exit 4"}))
        .await
        .unwrap();
    let text = crate::text(&out);
    assert!(text.len() <= 4_000, "{}", text.len());
    assert!(text.starts_with("1\n2\n"), "{text}");
    assert!(text.ends_with("200000\nExit code: 4"), "{text}");
    let path = spill.path().join("s1").join("c1.log");
    let marker = text.lines().find(|l| l.starts_with("[... ")).unwrap();
    assert!(
        marker.ends_with(&format!("cut; full output in {} ...]", path.display())),
        "{marker}"
    );
    let whole = std::fs::read_to_string(&path).unwrap();
    let expected: String = (1..=200_000).map(|i| format!("{i}\n")).collect();
    assert!(whole == expected, "the file holds the whole output");
}

#[tokio::test]
async fn short_output_is_not_spilled() {
    let mut fx = Fixture::new();
    let spill = tempfile::tempdir().unwrap();
    fx.ctx.output = Arc::new(OutputLimits {
        max_result_tokens: 1_000,
        spill_dir: Some(spill.path().to_path_buf()),
    });
    assert_eq!(fx.ok("bash", json!({"command": "echo hi"})).await, "hi\n");
    assert_eq!(std::fs::read_dir(spill.path()).unwrap().count(), 0);
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
    // The commands would sleep 30 s; well under that means the group died.
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
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
async fn an_empty_command_is_a_clear_error() {
    let fx = Fixture::new();
    let err = fx.err("bash", json!({"command": "  "})).await;
    assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
    assert!(err.to_string().contains("command is empty"), "{err}");
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

#[tokio::test]
async fn the_working_directory_persists_between_calls() {
    let fx = Fixture::new();
    fx.write("sub/deeper/file.txt", "");
    fx.ok("bash", json!({"command": "cd sub"})).await;
    let pwd = fx.ok("bash", json!({"command": "pwd"})).await;
    assert_eq!(pwd, format!("{}\n", fx.path("sub").display()));
    assert_eq!(fx.ctx.session.shell.cwd(), Some(fx.path("sub")));
    // `exit` does not lose the directory, nor the exit code.
    let out = fx
        .call("bash", json!({"command": "cd deeper && exit 3"}))
        .await
        .unwrap();
    assert_eq!(crate::text(&out), "Exit code: 3");
    assert_eq!(fx.ok("bash", json!({"command": "ls"})).await, "file.txt\n");
    // A subshell's `cd` stays in the subshell.
    fx.ok("bash", json!({"command": "(cd ..); cd ../.. && (cd sub)"}))
        .await;
    let pwd = fx.ok("bash", json!({"command": "pwd"})).await;
    assert_eq!(pwd, format!("{}\n", fx.root().display()));
    assert_eq!(fx.ctx.session.shell.cwd(), None);
}

#[tokio::test]
async fn leaving_the_workspace_resets_to_the_root_and_says_so() {
    let fx = Fixture::new();
    let text = fx
        .ok("bash", json!({"command": "cd / && echo moved"}))
        .await;
    assert!(text.starts_with("moved\n"), "{text}");
    assert!(
        text.contains("Note: the command ended in `/`, outside the workspace"),
        "{text}"
    );
    let pwd = fx.ok("bash", json!({"command": "pwd"})).await;
    assert_eq!(pwd, format!("{}\n", fx.root().display()));
}

#[tokio::test]
async fn a_deleted_working_directory_falls_back_to_the_root() {
    let fx = Fixture::new();
    fx.ok("bash", json!({"command": "mkdir gone && cd gone"}))
        .await;
    std::fs::remove_dir(fx.path("gone")).unwrap();
    let text = fx.ok("bash", json!({"command": "pwd"})).await;
    assert!(
        text.starts_with(&format!("{}\n", fx.root().display())),
        "{text}"
    );
    assert!(text.contains("no longer exists"), "{text}");
}

#[test]
fn read_only_commands_may_run_concurrently() {
    let fx = Fixture::new();
    let bash = fx.registry.get("bash").unwrap();
    let kind = |args| bash.kind(&args);
    assert_eq!(
        kind(json!({"command": "git status && ls -la"})),
        ToolKind::ReadOnly
    );
    assert_eq!(kind(json!({"command": "ls; rm -rf x"})), ToolKind::Mutating);
    assert_eq!(kind(json!({"command": "cd sub"})), ToolKind::Mutating);
    assert_eq!(
        kind(json!({"command": "ls", "run_in_background": true})),
        ToolKind::Mutating
    );
    assert_eq!(kind(json!({})), ToolKind::Mutating);
}

#[tokio::test]
async fn errors_name_the_lines_the_model_wrote() {
    let fx = Fixture::new();
    let out = fx
        .call("bash", json!({"command": "true\nno_such_command_x"}))
        .await
        .unwrap();
    let text = crate::text(&out);
    assert!(text.contains("line 2: no_such_command_x"), "{text}");
    assert!(text.ends_with("Exit code: 127"), "{text}");
}
