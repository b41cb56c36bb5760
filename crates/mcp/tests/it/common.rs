//! What the tests share: the fixtures, the reference servers from npm, a
//! tool context, waiting for a server's state.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use gyre_mcp::{ServerConfig, ServerEntry, StdioServer, Timeouts};
use gyre_protocol::{McpServerState, McpServerStatus};
use gyre_tools::{
    ImageSupport, LateTools, OutputLimits, Sandbox, Tool, ToolContext, ToolSession, Workspace,
};
use tokio_util::sync::CancellationToken;

/// The path of a fixture server.
pub fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

/// Where `.ci/run` installs the reference servers: `GYRE_TEST_MCP_DIR`,
/// else its default. Fails the test, saying how to install them, when
/// they are not there.
pub fn npm_bin(name: &str) -> String {
    let dir = match std::env::var_os("GYRE_TEST_MCP_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/gyre-ci/mcp")
        }
    };
    let bin = dir.join("node_modules/.bin").join(name);
    assert!(
        bin.exists(),
        "{} is missing: the MCP reference servers are installed by .ci/run \
         (npm install --prefix \"$HOME/.cache/gyre-ci/mcp\" @modelcontextprotocol/server-everything \
         @modelcontextprotocol/server-filesystem), or set GYRE_TEST_MCP_DIR to where they are",
        bin.display()
    );
    bin.display().to_string()
}

/// server-everything over stdio.
pub fn everything() -> ServerConfig {
    ServerConfig::Stdio(StdioServer {
        command: npm_bin("mcp-server-everything"),
        args: vec!["stdio".into()],
        ..StdioServer::default()
    })
}

pub fn entry(name: &str, config: ServerConfig, timeouts: Timeouts) -> ServerEntry {
    ServerEntry {
        name: name.into(),
        config: Ok(config),
        timeouts,
        source: "test".into(),
        enabled: true,
    }
}

/// server-everything serving streamable HTTP on a free port; killed when
/// dropped.
pub struct HttpEverything {
    pub url: String,
    _child: tokio::process::Child,
}

impl HttpEverything {
    pub async fn start() -> HttpEverything {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = tokio::process::Command::new(npm_bin("mcp-server-everything"))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        // Ready once it accepts connections (bounded).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "server-everything did not listen on port {port} within 20 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        HttpEverything {
            url: format!("http://127.0.0.1:{port}/mcp"),
            _child: child,
        }
    }
}

/// A context for calling a tool outside a run.
pub fn context(dir: &Path, images: ImageSupport) -> ToolContext {
    ToolContext {
        workspace: Arc::new(Workspace::new(dir).unwrap()),
        session_id: "s".into(),
        call_id: "c".into(),
        cancel: CancellationToken::new(),
        progress: None,
        session: Arc::new(ToolSession::default()),
        images,
        output: Arc::new(OutputLimits::default()),
        sandbox: Arc::new(Sandbox::default()),
        loop_scope: None,
        processes: None,
        fs: None,
        diagnostics: None,
    }
}

/// Waits (bounded) until `server` reports `state` (or has it already);
/// returns that status. Every report is seen, so a passing state (crashed,
/// then starting again at once) is not missed.
pub async fn wait_for(late: &LateTools, server: &str, state: McpServerState) -> McpServerStatus {
    let wanted = |s: &McpServerStatus| s.server == server && s.status == state;
    let (statuses, mut reports) = late.watch();
    if let Some(status) = statuses.into_iter().find(wanted) {
        return status;
    }
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match reports.recv().await {
                Ok(status) if wanted(&status) => return status,
                Ok(_) => {}
                // Fell behind: the latest statuses are still there.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    if let Some(status) = late.statuses().into_iter().find(wanted) {
                        return status;
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                    panic!("no more reports of `{server}`")
                }
            }
        }
    })
    .await;
    waited.unwrap_or_else(|_| {
        panic!(
            "`{server}` did not become {state:?} within 30 s: {:?}",
            late.statuses()
        )
    })
}

/// The late tool named `name`.
pub fn tool(late: &LateTools, name: &str) -> Arc<dyn Tool> {
    let snapshot = late.snapshot();
    snapshot
        .tools()
        .find(|(_, t)| t.spec().name == name)
        .map(|(_, t)| t.clone())
        .unwrap_or_else(|| panic!("no tool {name} in {:?}", snapshot.names()))
}
