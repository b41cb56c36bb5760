use std::sync::Arc;
use std::time::Duration;

use gyre_tools::{JobStatus, OutputLimits, ToolError, ToolKind};
use serde_json::json;

use crate::Fixture;
use crate::bash::{group_is_gone, live_members};

/// Starts `command` in the background and returns its id.
async fn start(fx: &Fixture, command: &str) -> String {
    let out = fx
        .call(
            "bash",
            json!({"command": command, "run_in_background": true, "description": "job"}),
        )
        .await
        .unwrap();
    let text = crate::text(&out);
    let id = text
        .strip_prefix("Started in the background as ")
        .and_then(|rest| rest.split(';').next())
        .unwrap_or_else(|| panic!("unexpected start text: {text}"))
        .to_owned();
    assert_eq!(out.title, format!("bash: job (background {id})"));
    id
}

/// Reads `id` (waiting for news) until `done` holds for all output read so
/// far, or 10 s pass; returns that output with the status lines.
async fn read_until(fx: &Fixture, id: &str, done: impl Fn(&str) -> bool) -> String {
    let mut seen = String::new();
    for _ in 0..20 {
        seen.push_str(
            &fx.ok("bash_output", json!({"shell_id": id, "wait_ms": 500}))
                .await,
        );
        if done(&seen) {
            return seen;
        }
    }
    panic!("gave up waiting; read so far:\n{seen}");
}

fn has_line(text: &str, line: &str) -> bool {
    text.lines().any(|l| l == line)
}

fn pid_in(text: &str) -> i32 {
    let line = text.lines().find(|l| l.starts_with("PID ")).unwrap();
    line[4..].trim().parse().unwrap()
}

#[tokio::test]
async fn a_background_job_is_read_incrementally() {
    let fx = Fixture::new();
    let id = start(
        &fx,
        "echo one; while [ ! -e go ]; do sleep 0.02; done; echo two",
    )
    .await;
    assert_eq!(id, "shell_1");
    let first = read_until(&fx, &id, |t| has_line(t, "one")).await;
    assert!(first.starts_with("shell_1: running (echo one;"), "{first}");
    assert!(!has_line(&first, "two"), "{first}");

    fx.write("go", "");
    let rest = read_until(&fx, &id, |t| t.contains("exited with code 0")).await;
    assert!(has_line(&rest, "two"), "{rest}");
    assert!(!has_line(&rest, "one"), "only new output: {rest}");

    let again = fx.ok("bash_output", json!({"shell_id": id})).await;
    assert_eq!(
        again,
        "shell_1: exited with code 0 (echo one; while [ ! -e go ]; do sleep 0.02; done; \
         echo two)\n(no new output)\n"
    );
    let jobs = fx.ctx.session.shell.jobs();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].status, JobStatus::Exited(0));
}

#[tokio::test]
async fn a_job_starts_in_the_working_directory_and_reports_its_exit_code() {
    let fx = Fixture::new();
    fx.write("sub/x", "");
    fx.ok("bash", json!({"command": "cd sub"})).await;
    let id = start(&fx, "pwd; exit 7").await;
    let text = read_until(&fx, &id, |t| t.contains("exited with code 7")).await;
    assert!(
        text.contains(&format!("{}\n", fx.path("sub").display())),
        "{text}"
    );
}

#[tokio::test]
async fn filter_keeps_only_matching_lines() {
    let fx = Fixture::new();
    let id = start(&fx, "printf 'ok 1\\nerror: a\\nok 2\\nerror: b\\n'").await;
    let mut output = String::new();
    for _ in 0..20 {
        let text = fx
            .ok(
                "bash_output",
                json!({"shell_id": id, "filter": "^error", "wait_ms": 500}),
            )
            .await;
        let (status, new) = text.split_once('\n').unwrap();
        assert!(status.starts_with("shell_1: "), "{status}");
        if new != "(no new output)\n" {
            output.push_str(new);
        }
        if output.contains("error: b") {
            break;
        }
    }
    assert_eq!(output, "error: a\nerror: b\n");
    let err = fx
        .err("bash_output", json!({"shell_id": id, "filter": "("}))
        .await;
    assert!(err.to_string().contains("invalid filter"), "{err}");
}

#[tokio::test]
async fn a_job_that_never_ends_is_killed_with_its_group() {
    let fx = Fixture::new();
    let id = start(&fx, "sleep 1000 & echo PID $$; sleep 1000").await;
    let text = read_until(&fx, &id, |t| t.contains("PID ")).await;
    let pgid = pid_in(&text);
    assert!(
        live_members(pgid).len() >= 2,
        "the shell and its sleeps run"
    );

    let out = fx
        .call("kill_shell", json!({"shell_id": id}))
        .await
        .unwrap();
    assert_eq!(crate::text(&out), "shell_1 was killed.");
    assert_eq!(out.title, "kill_shell shell_1: killed");
    assert!(group_is_gone(pgid).await, "left: {:?}", live_members(pgid));
    let status = fx.ok("bash_output", json!({"shell_id": id})).await;
    assert!(status.starts_with("shell_1: killed"), "{status}");

    let again = fx.ok("kill_shell", json!({"shell_id": id})).await;
    assert_eq!(again, "shell_1 is not running (status: killed).");
}

#[tokio::test]
async fn ending_the_session_kills_running_jobs() {
    let fx = Fixture::new();
    let id = start(&fx, "sleep 1000 & echo PID $$; sleep 1000").await;
    let text = read_until(&fx, &id, |t| t.contains("PID ")).await;
    let pgid = pid_in(&text);
    assert!(!live_members(pgid).is_empty());
    // The fixture holds the session's only reference: dropping it drops the
    // ShellState.
    drop(fx);
    assert!(group_is_gone(pgid).await, "left: {:?}", live_members(pgid));
}

#[tokio::test]
async fn unknown_ids_name_the_known_ones() {
    let fx = Fixture::new();
    let err = fx
        .err("bash_output", json!({"shell_id": "shell_9"}))
        .await
        .to_string();
    assert!(err.contains("none was started in this session"), "{err}");
    let id = start(&fx, "exit 0").await;
    read_until(&fx, &id, |t| t.contains("exited")).await;
    let err = fx
        .err("kill_shell", json!({"shell_id": "shell_9"}))
        .await
        .to_string();
    assert_eq!(
        err,
        "there is no background shell `shell_9`; known shells: shell_1 (exited with code 0)"
    );
    assert!(matches!(
        fx.err("kill_shell", json!({"shell_id": "nope"})).await,
        ToolError::Failed(_)
    ));
}

#[tokio::test]
async fn at_most_sixteen_jobs_run_at_once() {
    let fx = Fixture::new();
    for _ in 0..gyre_tools::MAX_RUNNING {
        start(&fx, "sleep 1000").await;
    }
    let err = fx
        .err(
            "bash",
            json!({"command": "sleep 1", "run_in_background": true}),
        )
        .await
        .to_string();
    assert!(
        err.contains("16 background jobs are already running"),
        "{err}"
    );
    fx.ok("kill_shell", json!({"shell_id": "shell_3"})).await;
    let id = start(&fx, "sleep 1000").await;
    assert_eq!(id, "shell_17");
}

#[tokio::test]
async fn a_long_job_output_is_spilled_whole() {
    let mut fx = Fixture::new();
    let spill = tempfile::tempdir().unwrap();
    fx.ctx.output = Arc::new(OutputLimits {
        max_result_tokens: 1_000,
        spill_dir: Some(spill.path().to_path_buf()),
    });
    // 2.4 MB, more than the 1 MB a job keeps in memory.
    let id = start(&fx, "seq 1 350000; touch finished").await;
    // Waits (in the shell, bounded by its timeout) without reading the job.
    fx.ok(
        "bash",
        json!({"command": "while [ ! -e finished ]; do sleep 0.01; done", "timeout_ms": 20000}),
    )
    .await;
    let text = read_until(&fx, &id, |t| t.contains("exited with code 0")).await;
    let path = spill.path().join("s1").join(format!("{id}.log"));
    assert!(text.len() < 40_000, "{}", text.len());
    assert!(
        text.contains(&format!(
            "earlier bytes were dropped before they were read; full output in {}",
            path.display()
        )),
        "{}",
        &text[..text.len().min(2000)]
    );
    assert!(text.contains("350000\n"), "the end is kept");
    let whole = std::fs::read_to_string(&path).unwrap();
    let expected: String = (1..=350_000).map(|i| format!("{i}\n")).collect();
    assert!(whole == expected, "the file holds the whole output");
}

#[tokio::test]
async fn waiting_for_output_ends_at_cancellation() {
    let fx = Fixture::new();
    let id = start(&fx, "sleep 1000").await;
    let cancel = fx.ctx.cancel.clone();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let err = fx
        .err("bash_output", json!({"shell_id": id, "wait_ms": 30_000}))
        .await;
    assert!(matches!(err, ToolError::Cancelled { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    canceller.await.unwrap();
}

#[test]
fn kinds_of_the_job_tools() {
    let fx = Fixture::new();
    let kind = |name: &str| {
        fx.registry
            .get(name)
            .unwrap()
            .kind(&json!({"shell_id": "x"}))
    };
    assert_eq!(kind("bash_output"), ToolKind::ReadOnly);
    assert_eq!(kind("kill_shell"), ToolKind::Mutating);
}
