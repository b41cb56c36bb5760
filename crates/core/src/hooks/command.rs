//! Running one hook command: `sh -c COMMAND` in the workspace, the event's
//! JSON on stdin, stdout and stderr kept (bounded), killed with its process
//! group at its timeout or when the run is cancelled.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// The most bytes of a hook's stdout or stderr that are kept.
const MAX_OUTPUT: usize = 64 * 1024;

/// How a hook command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ran {
    /// It exited with this code (`None`: killed by a signal).
    Exited {
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
    /// It ran past its timeout and was killed.
    TimedOut,
    /// It could not be started.
    Failed(String),
    /// The run was cancelled while it ran.
    Cancelled,
}

pub(crate) async fn run(
    command: &str,
    input: &[u8],
    cwd: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Ran {
    let mut child = match tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env("GYRE_PROJECT_DIR", cwd)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(error) => return Ran::Failed(format!("could not start `sh -c {command}`: {error}")),
    };
    let pgid = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .filter(|&p| p > 1);
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let work = async {
        // A hook that does not read its stdin must not block us: write in
        // the background and ignore a closed pipe.
        let feed = async {
            if let Some(mut stdin) = stdin {
                let _ = stdin.write_all(input).await;
            }
        };
        let (_, out, err, status) = tokio::join!(
            feed,
            read_bounded(stdout),
            read_bounded(stderr),
            child.wait()
        );
        (out, err, status)
    };
    let ran = tokio::select! {
        biased;
        _ = cancel.cancelled() => Ran::Cancelled,
        _ = tokio::time::sleep(timeout) => Ran::TimedOut,
        (out, err, status) = work => match status {
            Ok(status) => Ran::Exited { code: status.code(), stdout: out, stderr: err },
            Err(error) => Ran::Failed(format!("could not wait for the hook: {error}")),
        },
    };
    if let Some(pgid) = pgid {
        // Whatever it left running goes too (the group leader is ours).
        gyre_tools::kill_process_group(pgid);
    }
    ran
}

async fn read_bounded(pipe: Option<impl tokio::io::AsyncRead + Unpin>) -> String {
    let Some(mut pipe) = pipe else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_OUTPUT.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}
