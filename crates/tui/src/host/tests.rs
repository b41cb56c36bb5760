//! The TUI's backend over a real host: the mock model (OpenAI wire, through
//! the `ollama` preset, which needs no key), a SQLite store and shadow-git
//! checkpoints in temp dirs.

use std::sync::Arc;
use std::time::Duration;

use gyre_core::{Approvals, LiveSession, PermissionMode, RunRequest};
use gyre_host::{AgentFactory, Flags, Host};
use gyre_mock::{Item, MockServer, Script};
use gyre_protocol::McpServerState;
use serde_json::json;
use tempfile::TempDir;

use super::HostBackend;
use crate::app::{AgentChoice, Backend};

struct Setup {
    workspace: TempDir,
    _home: TempDir,
    _server: MockServer,
    /// The backend's factory, for what the backend does not show (the MCP
    /// servers' status reports).
    factory: Arc<AgentFactory>,
    backend: HostBackend,
}

async fn setup(script: Script) -> Setup {
    setup_with(script, |_| {}).await
}

/// A setup whose workspace `prepare` fills before the host opens it.
async fn setup_with(script: Script, prepare: impl FnOnce(&std::path::Path)) -> Setup {
    let workspace = TempDir::new().unwrap();
    prepare(workspace.path());
    let home = TempDir::new().unwrap();
    let server = MockServer::start(script).await.unwrap();
    let args = Flags {
        provider: Some("ollama".into()),
        model: Some("m1".into()),
        base_url: Some(server.openai_base_url()),
        cwd: Some(workspace.path().to_path_buf()),
        permission_mode: Some("bypassPermissions".into()),
        ..Flags::default()
    };
    let host = Host::open(home.path(), args, Approvals::Interactive)
        .await
        .unwrap();
    let factory = host.factory(None).await.unwrap();
    Setup {
        workspace,
        _home: home,
        _server: server,
        factory: factory.clone(),
        backend: HostBackend::new(host, factory),
    }
}

async fn run(live: &Arc<LiveSession>, prompt: &str) {
    live.submit(RunRequest::prompt(prompt));
    tokio::time::timeout(Duration::from_secs(30), live.idle())
        .await
        .expect("the run ends");
}

#[tokio::test]
async fn rewinding_the_first_prompt_empties_the_conversation_and_restores_the_files() {
    let script = Script::linear(vec![
        vec![Item::ToolCall {
            id: None,
            name: "write".into(),
            arguments: json!({"file_path": "a.txt", "content": "a"}),
            fragments: None,
        }],
        vec![Item::Text("Made.".into())],
    ]);
    let s = setup(script).await;
    let choice = AgentChoice::default();
    let live = s.backend.new_session("make a", &choice).await.unwrap();
    let id = live.id().to_string();
    run(&live, "make a").await;
    let file = s.workspace.path().join("a.txt");
    assert!(file.exists());
    let messages = s.backend.messages(&id).await.unwrap();
    assert_eq!(messages.len(), 4, "prompt, call, result, answer");
    drop(live);

    let said = s.backend.rewind(&id, &messages[0].id).await.unwrap();
    assert!(said.contains("4 messages removed"), "{said}");
    assert!(said.contains("files restored"), "{said}");
    assert!(!file.exists(), "the write is undone");
    assert!(s.backend.messages(&id).await.unwrap().is_empty());
    let opened = s.backend.open_session(&id, &choice).await.unwrap();
    assert!(opened.messages.is_empty());
}

#[tokio::test]
async fn choices_build_agents_and_this_directorys_sessions_are_listed() {
    let s = setup(Script::linear(vec![vec![Item::Text("Hi.".into())]])).await;
    let agent = s
        .backend
        .agent(&AgentChoice {
            agent: Some("plan".into()),
            model: Some("claude-sonnet-4-5".into()),
            mode: Some(PermissionMode::AcceptEdits),
            effort: Some(gyre_llm::Effort::High),
        })
        .unwrap();
    let config = agent.config();
    assert_eq!(config.model, "claude-sonnet-4-5");
    assert_eq!(config.sampling.effort, Some(gyre_llm::Effort::High));
    assert!(config.pricing.is_some(), "the catalogue's prices");
    assert_eq!(config.agent_name, "plan");
    let error = s
        .backend
        .agent(&AgentChoice {
            agent: Some("nope".into()),
            ..AgentChoice::default()
        })
        .unwrap_err();
    assert!(error.0.contains("nope"), "{error}");
    let names: Vec<String> = s.backend.agents().into_iter().map(|a| a.name).collect();
    assert!(names.contains(&"build".into()) && names.contains(&"plan".into()));

    let live = s
        .backend
        .new_session("hello there", &AgentChoice::default())
        .await
        .unwrap();
    run(&live, "hello there").await;
    let listed = s.backend.list_sessions().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, live.id());
    assert_eq!(listed[0].title, "hello there");

    assert!(
        s.backend.mcp_servers().is_empty(),
        "no MCP server configured"
    );
}

#[tokio::test]
async fn mcp_lists_the_configured_servers_with_their_state() {
    let s = setup_with(Script::linear(vec![]), |dir| {
        std::fs::write(
            dir.join(".mcp.json"),
            r#"{"mcpServers": {"files": {"command": "/nonexistent/mcp-server"}}}"#,
        )
        .unwrap();
    })
    .await;
    // The server starts in the background; its start fails at once: wait
    // for that report, not for a while.
    let late = s.factory.config.late_tools.clone().unwrap();
    let (statuses, mut reports) = late.watch();
    if !statuses
        .iter()
        .any(|st| st.status == McpServerState::Failed)
    {
        tokio::time::timeout(Duration::from_secs(30), async {
            while reports.recv().await.unwrap().status != McpServerState::Failed {}
        })
        .await
        .expect("the failure is reported");
    }
    let lines = s.backend.mcp_servers();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("files  failed: "), "{lines:?}");
}
