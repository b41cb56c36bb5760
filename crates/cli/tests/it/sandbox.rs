//! `bash` under the Linux sandbox (`--sandbox`, `[sandbox]`), through the
//! real binary: the helper is `gyre __sandbox-exec`.
//!
//! Every test first asks the helper itself whether this kernel enforces
//! Landlock (and prints the answer), then checks that what gyre said (a
//! `gyre: warning: the sandbox … is not enforced` line, or nothing, which
//! means on) agrees with what the commands could do. "Outside the
//! workspace" is a directory under the target dir, not under /tmp, which
//! `workspace-write` may write.

use std::path::{Path, PathBuf};
use std::process::Output;

use gyre_mock::{Item, MockServer, Script};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::common::*;

/// What `gyre __sandbox-exec --probe` says of a plain policy, with the
/// network `allowed` or `denied` (printed, so that the test's output states
/// it).
async fn kernel_enforces(network: &str) -> bool {
    let policy = json!({"writable": [], "deny_read": [], "network": network}).to_string();
    let out = tokio::process::Command::new(GYRE)
        .args(["__sandbox-exec", "--probe", &policy])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    eprintln!("sandbox probe on this kernel: {report}");
    report["landlock"] == "fully_enforced" && report["network"] != "failed"
}

/// A directory outside the workspace and outside the temp dirs the sandbox
/// lets commands write (`/tmp`, `$TMPDIR`, `/dev/shm`): the target dir's
/// own temp dir when the checkout is not under one of those (it is under
/// `/tmp` in a clone made there), else `/var/tmp`, else the home directory.
fn outside_dir() -> TempDir {
    let writable: Vec<PathBuf> = ["/tmp".into(), "/dev/shm".into()]
        .into_iter()
        .chain(std::env::var_os("TMPDIR").map(PathBuf::from))
        .filter_map(|dir: PathBuf| std::fs::canonicalize(dir).ok())
        .collect();
    let candidates = [
        Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        Some(PathBuf::from("/var/tmp")),
        std::env::var_os("HOME").map(PathBuf::from),
    ];
    let dir = candidates
        .into_iter()
        .flatten()
        .filter_map(|dir| std::fs::canonicalize(dir).ok())
        .find(|dir| !writable.iter().any(|w| dir.starts_with(w)))
        .expect("a directory outside the sandbox's writable temp dirs");
    tempfile::Builder::new()
        .prefix("gyre-sandbox-test-")
        .tempdir_in(dir)
        .unwrap()
}

/// Whether gyre said the sandbox is not enforced.
fn gyre_warned(out: &Output) -> bool {
    let err = stderr(out);
    err.contains("gyre: warning: the sandbox") && err.contains("not enforced")
}

/// The text of every tool result of the run, in order.
fn result_texts(out: &Output) -> Vec<String> {
    tool_results(&json_lines(out))
        .iter()
        .map(result_text)
        .collect()
}

/// A model that runs each of `commands` with `bash`, one per turn.
fn bash_script(commands: &[Value]) -> Script {
    let mut turns: Vec<Vec<Item>> = commands
        .iter()
        .map(|c| vec![call("bash", c.clone())])
        .collect();
    turns.push(vec![Item::Text("Done.".into())]);
    Script::linear(turns)
}

fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display())
}

#[tokio::test]
async fn sandbox_workspace_write_confines_writes_and_denied_reads() {
    let enforced = kernel_enforces("allowed").await;
    let outside = outside_dir();
    let secret = outside.path().join("secret.txt");
    write(&secret, "the secret\n");
    let out_file = outside.path().join("out.txt");
    let job_file = outside.path().join("job.txt");
    let env = Env::new();
    env.write_user_config(&format!(
        "{FAST_RETRIES}[sandbox]\ndeny_read = [{:?}]\n",
        secret.display().to_string()
    ));
    let server = MockServer::start(bash_script(&[
        json!({"command": format!(
            "echo inside > inside.txt; echo outside > {}; cat {}; echo tmp > \"${{TMPDIR:-/tmp}}/gyre-sandbox-$$\" && echo TMP-OK; echo x > /dev/null && echo NULL-OK",
            shell_quote(&out_file), shell_quote(&secret)
        )}),
        json!({"command": format!("echo job > {}; echo job > job.txt", shell_quote(&job_file)),
               "run_in_background": true}),
        json!({"command": "sleep 0.5; mkdir -p sub && cd sub && pwd"}),
        json!({"command": "pwd; cat ../job.txt"}),
    ]))
    .await
    .unwrap();
    let out = output(env.run_on(&server, "go", &[])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let results = result_texts(&out);
    eprintln!("results: {results:#?}");

    let says_on = !gyre_warned(&out);
    assert_eq!(
        says_on,
        enforced,
        "gyre's word on the sandbox must match the kernel's: stderr: {}",
        stderr(&out)
    );
    // Inside the workspace, temp dirs and /dev/null: always.
    assert_eq!(
        std::fs::read_to_string(env.path("inside.txt")).unwrap(),
        "inside\n"
    );
    assert!(
        results[0].contains("TMP-OK") && results[0].contains("NULL-OK"),
        "{}",
        results[0]
    );
    // The working directory is still tracked (the trap's temp file).
    assert!(
        results[3].lines().next().unwrap().ends_with("/sub"),
        "{}",
        results[3]
    );
    assert!(results[3].contains("job"), "{}", results[3]);
    if says_on {
        assert!(
            !out_file.exists(),
            "wrote outside the workspace while gyre said the sandbox is on"
        );
        assert!(
            !job_file.exists(),
            "a background job wrote outside the workspace"
        );
        assert!(results[0].contains("Permission denied"), "{}", results[0]);
        assert!(
            results[0].contains("ran in gyre's sandbox (workspace-write)"),
            "{}",
            results[0]
        );
        assert!(
            !results[0].contains("the secret"),
            "read a denied path: {}",
            results[0]
        );
    } else {
        // Unsandboxed (fallback = warn), as gyre said.
        assert!(out_file.exists());
        assert_eq!(stderr(&out).matches("not enforced").count(), 1, "said once");
    }
}

#[tokio::test]
async fn sandbox_without_network_fails_a_tcp_connect() {
    let enforced = kernel_enforces("denied").await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let env = Env::new();
    env.write_user_config(&format!("{FAST_RETRIES}[sandbox]\nnetwork = false\n"));
    let connect =
        format!("(exec 3<>/dev/tcp/127.0.0.1/{port}) && echo CONNECT-OK || echo CONNECT-FAILED");
    let server = MockServer::start(bash_script(&[json!({"command": connect})]))
        .await
        .unwrap();
    let out = output(env.run_on(&server, "go", &[])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let results = result_texts(&out);
    let says_on = !gyre_warned(&out);
    assert_eq!(says_on, enforced, "stderr: {}", stderr(&out));
    if says_on {
        assert!(results[0].contains("CONNECT-FAILED"), "{}", results[0]);
        assert!(
            results[0].contains("Operation not permitted"),
            "{}",
            results[0]
        );
        assert!(
            results[0].contains("cannot use the network"),
            "{}",
            results[0]
        );
        assert!(listener.accept().is_err(), "nothing may have connected");
    } else {
        assert!(results[0].contains("CONNECT-OK"), "{}", results[0]);
    }
}

#[tokio::test]
async fn sandbox_read_only_refuses_writes_in_the_workspace_but_keeps_cd() {
    let enforced = kernel_enforces("allowed").await;
    let env = Env::new();
    std::fs::create_dir(env.path("sub")).unwrap();
    let server = MockServer::start(bash_script(&[
        json!({"command": "cd sub; echo x > ro.txt; echo x > /dev/null && echo NULL-OK"}),
        json!({"command": "pwd"}),
    ]))
    .await
    .unwrap();
    let out = output(env.run_on(&server, "go", &["--sandbox", "read-only"])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let results = result_texts(&out);
    assert_eq!(!gyre_warned(&out), enforced, "stderr: {}", stderr(&out));
    assert!(results[0].contains("NULL-OK"), "{}", results[0]);
    assert!(results[1].trim_end().ends_with("/sub"), "{}", results[1]);
    assert_eq!(env.path("sub/ro.txt").exists(), !enforced, "{}", results[0]);
}

#[tokio::test]
async fn sandbox_off_leaves_commands_as_before() {
    let outside = outside_dir();
    let secret = outside.path().join("secret.txt");
    write(&secret, "the secret\n");
    let out_file: PathBuf = outside.path().join("out.txt");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let env = Env::new();
    // The section is ignored while the sandbox is off.
    env.write_user_config(&format!(
        "{FAST_RETRIES}[sandbox]\nmode = \"workspace-write\"\nnetwork = false\ndeny_read = [{:?}]\n",
        secret.display().to_string()
    ));
    let server = MockServer::start(bash_script(&[json!({"command": format!(
        "echo outside > {}; cat {}; (exec 3<>/dev/tcp/127.0.0.1/{port}) && echo CONNECT-OK",
        shell_quote(&out_file), shell_quote(&secret)
    )})]))
    .await
    .unwrap();
    let out = output(env.run_on(&server, "go", &["--sandbox", "off"])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).is_empty(),
        "no word of a sandbox: {}",
        stderr(&out)
    );
    let results = result_texts(&out);
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), "outside\n");
    assert!(results[0].contains("the secret"), "{}", results[0]);
    assert!(results[0].contains("CONNECT-OK"), "{}", results[0]);
}

#[tokio::test]
async fn sandbox_helper_refuses_a_bad_policy() {
    let out = tokio::process::Command::new(GYRE)
        .args(["__sandbox-exec", "not json", "--", "/bin/true"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("usage"), "{}", stderr(&out));
}

#[tokio::test]
async fn sandbox_a_project_config_cannot_turn_it_off() {
    let enforced = kernel_enforces("allowed").await;
    let outside = outside_dir();
    let out_file = outside.path().join("out.txt");
    let env = Env::new();
    write(
        &env.path(".gyre/config.toml"),
        "[sandbox]\nmode = \"off\"\nnetwork = true\n",
    );
    let server = MockServer::start(bash_script(&[json!({"command": format!(
        "echo outside > {}", shell_quote(&out_file)
    )})]))
    .await
    .unwrap();
    let out = output(env.run_on(&server, "go", &[])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("[sandbox] mode = \"off\" is ignored"),
        "the project's attempt is said: {err}"
    );
    assert_eq!(!gyre_warned(&out), enforced, "{err}");
    assert_eq!(out_file.exists(), !enforced, "{err}");
}
