//! The scripted model server, run as its own process (`gyre mock-server`) for
//! the length of one scenario.
//!
//! Invariants: the server is killed and reaped when its guard is dropped, on
//! every path (errors, panics unwinding); its stderr is drained for as long as
//! it lives, so it can never block on a full pipe; finding its port is bounded
//! in time.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// How long the server may take to say where it listens.
const STARTUP_LIMIT: Duration = Duration::from_secs(10);
/// Lines of its stderr searched for the address.
const STARTUP_LINES: usize = 20;

/// A running mock server; killed on drop.
pub struct MockServer {
    child: Child,
    port: u16,
}

impl MockServer {
    pub fn start(gyre: &Path, script: &Path) -> anyhow::Result<MockServer> {
        let mut child = Command::new(gyre)
            .args(["mock-server", "--port", "0", "--script"])
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {} mock-server", gyre.display()))?;
        let stderr = child.stderr.take();
        // From here on the guard owns the process, so any error kills it.
        let mut server = MockServer { child, port: 0 };
        let stderr = stderr.context("mock-server stderr was not piped")?;

        let (line_tx, lines) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            // Forward the first lines, then keep draining until the server exits.
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let _ = line_tx.send(line);
            }
        });

        let deadline = Instant::now() + STARTUP_LIMIT;
        let mut seen = Vec::new();
        while seen.len() < STARTUP_LINES {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = lines.recv_timeout(left) else {
                break;
            };
            if let Some(port) = parse_port(&line) {
                server.port = port;
                return Ok(server);
            }
            seen.push(line);
        }
        bail!(
            "mock-server did not report its port within {STARTUP_LIMIT:?}; it said: {}",
            seen.join(" / ")
        )
    }

    /// The Anthropic base URL (no `/v1`: the client adds it).
    pub fn anthropic_base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The port in the server's start-up line, e.g.
/// `gyre mock-server on http://127.0.0.1:41234 (Anthropic: …); Ctrl-C stops it`.
pub fn parse_port(line: &str) -> Option<u16> {
    let (_, rest) = line.split_once(" on http://")?;
    let authority = rest
        .split(|c: char| c.is_whitespace() || c == '/' || c == '(')
        .next()?;
    let (_, port) = authority.rsplit_once(':')?;
    port.parse().ok().filter(|&port| port != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_port_from_the_start_up_line() {
        let line = "gyre mock-server on http://127.0.0.1:41234 (Anthropic: \
                    ANTHROPIC_BASE_URL=http://127.0.0.1:41234, OpenAI: \
                    OPENAI_BASE_URL=http://127.0.0.1:41234/v1); Ctrl-C stops it";
        assert_eq!(parse_port(line), Some(41234));
        assert_eq!(
            parse_port("gyre mock-server on http://[::1]:8080/"),
            Some(8080)
        );
    }

    fn stub_server(dir: &Path, body: &str) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("fake-gyre");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write stub");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    /// Starts a stub, retrying while another test's fork still holds the
    /// just-written file open (ETXTBSY), which lasts only until its exec.
    fn start_stub(gyre: &Path) -> anyhow::Result<MockServer> {
        let text_busy = |e: &anyhow::Error| {
            e.chain()
                .filter_map(|c| c.downcast_ref::<std::io::Error>())
                .any(|io| io.raw_os_error() == Some(libc::ETXTBSY))
        };
        for _ in 0..100 {
            match MockServer::start(gyre, Path::new("script.json")) {
                Err(e) if text_busy(&e) => std::thread::yield_now(),
                other => return other,
            }
        }
        MockServer::start(gyre, Path::new("script.json"))
    }

    #[test]
    fn the_guard_kills_and_reaps_the_server() {
        let dir = tempfile::tempdir().expect("temp dir");
        let gyre = stub_server(
            dir.path(),
            "echo 'gyre mock-server on http://127.0.0.1:4321 (x)' >&2\nexec sleep 30",
        );
        let server = start_stub(&gyre).expect("starts");
        assert_eq!(server.anthropic_base_url(), "http://127.0.0.1:4321");
        let proc_dir = format!("/proc/{}", server.child.id());
        assert!(Path::new(&proc_dir).exists());
        drop(server);
        assert!(!Path::new(&proc_dir).exists(), "{proc_dir} is still there");
    }

    #[test]
    fn a_server_that_never_names_its_port_is_an_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let gyre = stub_server(dir.path(), "echo 'error: no such script' >&2\nexit 2");
        let err = start_stub(&gyre).err().expect("fails");
        assert!(err.to_string().contains("no such script"), "{err}");
    }

    #[test]
    fn rejects_lines_without_a_usable_port() {
        assert_eq!(parse_port("warning: something else"), None);
        assert_eq!(parse_port("gyre mock-server on http://127.0.0.1 (x)"), None);
        assert_eq!(
            parse_port("gyre mock-server on http://127.0.0.1:0 (x)"),
            None
        );
        assert_eq!(
            parse_port("gyre mock-server on http://127.0.0.1:99999"),
            None
        );
    }
}
