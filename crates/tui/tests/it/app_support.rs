//! The app over real parts: gyre-core's agent against the scripted mock
//! model server (real HTTP/SSE), a SQLite store and real tools in a temp
//! workspace; and a driver that types keys and pumps the live session's
//! updates and background news into the app, as the event loop does.
//!
//! The driver waits on what proves a state (an update, a background
//! message, the live session going idle), never for a fixed time; every
//! wait is bounded. The clock runs while a run is waited on: paused time
//! would jump to the product's timeouts while real IO (the mock server's
//! sockets, SQLite, tool processes) is pending. [`Driver::until_paused`]
//! pauses it only from the update a test then moves time after.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use gyre_core::checkpoint::Checkpointer;
use gyre_core::live::{Lagged, Numbered};
use gyre_core::sessions::RewindScope;
use gyre_core::{Agent, AgentConfig, Approvals, LiveSession, PermissionMode, Reader, Session};
use gyre_llm::{AnthropicClient, ClientConfig, ModelClient};
use gyre_mock::{Item, MockServer, Reply, Script, Step, StreamReply, When};
use gyre_protocol::Message;
use gyre_store::SessionStore;
use gyre_store_sql::SqliteStore;
use gyre_tools::{Registry, Workspace};
use gyre_tui::app::{
    AgentChoice, AgentInfo, App, AppOptions, Backend, BackendError, BackendResult, Background,
    CustomCommandInfo, ExpandedCommand, Opened, SessionInfo,
};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tempfile::TempDir;
use tokio::sync::mpsc;

use crate::support::text_of;

/// A backend over gyre-core, as the `gyre` binary's is over its host.
pub struct CoreBackend {
    /// Kept for its drop (the directory goes with the backend).
    _workspace: TempDir,
    pub home: TempDir,
    pub store: Arc<SqliteStore>,
    pub server: MockServer,
    client: Arc<dyn ModelClient>,
    root: PathBuf,
    mode: PermissionMode,
    /// MCP servers that "are starting" until `mcp_ready` is notified.
    pub mcp_starting: std::sync::Mutex<Vec<String>>,
    pub mcp_ready: Arc<tokio::sync::Notify>,
    /// The agents' context window (`None`: unknown, no gauge).
    pub window: Option<u64>,
}

impl CoreBackend {
    pub async fn new(script: Script, mode: PermissionMode) -> Self {
        let workspace = TempDir::new().unwrap();
        let home = TempDir::new().unwrap();
        let store = Arc::new(
            SqliteStore::open(&home.path().join("sessions.db"))
                .await
                .unwrap(),
        );
        let server = MockServer::start(script).await.unwrap();
        let config = ClientConfig::new(server.anthropic_base_url(), Some("test-key".into()));
        let client: Arc<dyn ModelClient> = Arc::new(AnthropicClient::new(config));
        let root = std::fs::canonicalize(workspace.path()).unwrap();
        Self {
            _workspace: workspace,
            home,
            store,
            server,
            client,
            root,
            mode,
            mcp_starting: std::sync::Mutex::new(Vec::new()),
            mcp_ready: Arc::new(tokio::sync::Notify::new()),
            window: None,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn checkpointer(&self) -> Checkpointer {
        Checkpointer::new(
            Checkpointer::dir_for(&self.home.path().join("checkpoints"), &self.root),
            &self.root,
        )
    }

    fn cwd(&self) -> String {
        self.root.display().to_string()
    }

    fn commands(&self) -> gyre_host::commands::Commands {
        let dirs = gyre_host::commands::command_dirs(None, None, &self.root);
        gyre_host::commands::load_dirs(&dirs).0
    }
}

impl Backend for CoreBackend {
    fn workspace(&self) -> &Path {
        &self.root
    }

    fn history_file(&self) -> Option<PathBuf> {
        Some(self.home.path().join("history"))
    }

    async fn new_session(
        &self,
        title: &str,
        choice: &AgentChoice,
    ) -> BackendResult<Arc<LiveSession>> {
        let session = Session::create(
            self.store.as_ref(),
            &self.cwd(),
            "mock",
            "mock-model",
            title,
        )
        .await
        .map_err(|e| BackendError(e.to_string()))?;
        Ok(LiveSession::new(self.agent(choice)?, session))
    }

    async fn open_session(&self, id: &str, choice: &AgentChoice) -> BackendResult<Opened> {
        let session = Session::load(self.store.as_ref(), id)
            .await
            .map_err(|e| BackendError(e.to_string()))?;
        Ok(Opened {
            live: LiveSession::new(self.agent(choice)?, session),
            messages: self.messages(id).await?,
        })
    }

    async fn list_sessions(&self) -> BackendResult<Vec<SessionInfo>> {
        let sessions = self
            .store
            .list_sessions()
            .await
            .map_err(|e| BackendError(e.to_string()))?;
        Ok(sessions
            .into_iter()
            .filter(|m| m.cwd == self.cwd() && m.parent_id.is_none())
            .map(|m| SessionInfo {
                id: m.id,
                title: m.title,
                updated_at_ms: m.updated_at_ms,
                model: m.model,
            })
            .collect())
    }

    async fn messages(&self, id: &str) -> BackendResult<Vec<Arc<Message>>> {
        let messages = self
            .store
            .load_messages(id)
            .await
            .map_err(|e| BackendError(e.to_string()))?;
        Ok(messages.into_iter().map(Arc::new).collect())
    }

    async fn rewind(&self, id: &str, message: &str) -> BackendResult<String> {
        let messages = self.messages(id).await?;
        let at = messages.iter().position(|m| m.id == message).unwrap();
        // As the host's backend: the first prompt leaves nothing, which the
        // store cannot cut to, so what follows it goes and then it does.
        let (to, first) = match at.checked_sub(1) {
            Some(before) => (&messages[before].id, false),
            None => (&messages[at].id, true),
        };
        let rewound = gyre_core::sessions::rewind(
            self.store.as_ref(),
            &self.checkpointer(),
            id,
            to,
            RewindScope::FilesAndConversation,
        )
        .await
        .map_err(|e| BackendError(e.to_string()))?;
        if first {
            self.store.discard_message(id, message).await.unwrap();
        }
        Ok(format!(
            "{} messages removed",
            rewound.messages_removed + u64::from(first)
        ))
    }

    fn agent(&self, choice: &AgentChoice) -> BackendResult<Arc<Agent>> {
        let model = choice.model.clone().unwrap_or_else(|| "mock-model".into());
        if model == "no-such-model" {
            return Err(BackendError("no model is called no-such-model".into()));
        }
        let mut config = AgentConfig::new(model, "You are a test agent.");
        config.permissions.mode = choice.mode.unwrap_or(self.mode);
        config.sampling.effort = choice.effort;
        config.approvals = Approvals::Interactive;
        config.checkpoints = Some(Arc::new(self.checkpointer()));
        config.agent_name = choice.agent.clone().unwrap_or_else(|| "build".into());
        config.context.window = self.window;
        Ok(Agent::new(
            self.client.clone(),
            self.store.clone(),
            Registry::builtin(),
            Arc::new(Workspace::new(&self.root).unwrap()),
            config,
        ))
    }

    fn agents(&self) -> Vec<AgentInfo> {
        vec![
            AgentInfo {
                name: "build".into(),
                description: "does the work".into(),
            },
            AgentInfo {
                name: "plan".into(),
                description: "plans it".into(),
            },
        ]
    }

    fn models(&self) -> Vec<String> {
        vec!["mock-model".into()]
    }

    fn mcp_servers(&self) -> Vec<String> {
        Vec::new()
    }

    /// The workspace's own command folders (not the user's), read at each
    /// call so a test may write them after the start.
    fn custom_commands(&self) -> Vec<CustomCommandInfo> {
        self.commands()
            .iter()
            .map(CustomCommandInfo::from)
            .collect()
    }

    async fn expand_command(
        &self,
        line: &str,
        permissions: gyre_core::Permissions,
    ) -> Option<BackendResult<ExpandedCommand>> {
        let invoked = self
            .commands()
            .invoke(line, &self.root, &permissions)
            .await?;
        Some(
            invoked
                .map(|i| ExpandedCommand {
                    prompt: i.prompt,
                    model: i.model,
                    agent: i.agent,
                })
                .map_err(BackendError),
        )
    }

    fn mcp_starting(&self) -> Vec<String> {
        self.mcp_starting.lock().unwrap().clone()
    }

    fn mcp_started(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let ready = self.mcp_ready.clone();
        async move { ready.notified().await }
    }
}

/// A step answering requests whose last message contains `needle`, `times`
/// times at most.
pub fn on(needle: &str, times: Option<u32>, items: Vec<Item>) -> Step {
    Step {
        when: When {
            last_message_contains: Some(needle.into()),
            ..When::default()
        },
        times,
        reply: Reply::Stream(StreamReply {
            items,
            ..StreamReply::default()
        }),
    }
}

/// A step answering every request not answered before it.
pub fn otherwise(items: Vec<Item>) -> Step {
    Step {
        when: When::default(),
        times: None,
        reply: Reply::Stream(StreamReply {
            items,
            ..StreamReply::default()
        }),
    }
}

pub fn text(s: &str) -> Item {
    Item::Text(s.into())
}

pub fn call(name: &str, arguments: serde_json::Value) -> Item {
    Item::ToolCall {
        id: None,
        name: name.into(),
        arguments,
        fragments: None,
    }
}

/// How long a test waits for a state before it fails.
const WAIT: Duration = Duration::from_secs(30);

/// What the driver fed the app.
enum Fed {
    Update(Result<Numbered, Lagged>),
    Background(Background),
    /// The live session went idle.
    Idle,
}

/// The app and what the event loop would feed it.
pub struct Driver {
    pub app: App<CoreBackend>,
    reader: Option<Reader>,
    epoch: u64,
    background: mpsc::Receiver<Background>,
}

impl Driver {
    pub async fn new(steps: Vec<Step>, mode: PermissionMode) -> Driver {
        let backend = CoreBackend::new(Script::new(steps), mode).await;
        Self::with(backend, AppOptions::default()).await
    }

    pub async fn with(backend: CoreBackend, options: AppOptions) -> Driver {
        let mut app = App::new(backend, options).await;
        let background = app.take_background().unwrap();
        Driver {
            reader: app.reader(),
            epoch: app.epoch(),
            app,
            background,
        }
    }

    pub fn backend(&self) -> &CoreBackend {
        self.app.backend()
    }

    pub async fn key(&mut self, code: KeyCode, modifiers: KeyModifiers) {
        self.app.handle_key(KeyEvent::new(code, modifiers)).await;
        self.follow_epoch();
    }

    pub async fn press(&mut self, code: KeyCode) {
        self.key(code, KeyModifiers::NONE).await;
    }

    pub async fn ctrl(&mut self, c: char) {
        self.key(KeyCode::Char(c), KeyModifiers::CONTROL).await;
    }

    pub async fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            self.press(KeyCode::Char(c)).await;
        }
    }

    /// Types `text` and presses Enter.
    pub async fn send(&mut self, text: &str) {
        self.type_text(text).await;
        self.press(KeyCode::Enter).await;
    }

    pub async fn paste(&mut self, text: &str) {
        self.app
            .handle_terminal(TermEvent::Paste(text.to_string()))
            .await;
    }

    fn follow_epoch(&mut self) {
        if self.app.epoch() != self.epoch {
            self.epoch = self.app.epoch();
            self.reader = self.app.reader();
        }
    }

    /// Waits for the next update or background message, or for the live
    /// session to go idle (which no update announces).
    async fn next(&mut self) -> Fed {
        let busy = self.app.live().filter(|live| live.is_busy()).cloned();
        let reader = self.reader.as_mut();
        tokio::select! {
            update = async {
                match reader {
                    Some(reader) => reader.next().await,
                    None => std::future::pending().await,
                }
            } => Fed::Update(update),
            Some(message) = self.background.recv() => Fed::Background(message),
            () = async {
                match busy {
                    Some(live) => live.idle().await,
                    None => std::future::pending().await,
                }
            } => Fed::Idle,
        }
    }

    async fn feed(&mut self, fed: Fed) {
        match fed {
            Fed::Update(update) => self.app.handle_update(update),
            Fed::Background(message) => self.app.handle_background(message).await,
            Fed::Idle => {}
        }
        self.follow_epoch();
    }

    /// Feeds the next update or background message into the app.
    pub async fn pump(&mut self) {
        let fed = self.next().await;
        self.feed(fed).await;
    }

    /// Feeds updates and background news until `done` holds (30 s at most,
    /// on a running clock).
    pub async fn until(&mut self, what: &str, done: impl Fn(&App<CoreBackend>) -> bool) {
        let waited = tokio::time::timeout(WAIT, async {
            while !done(&self.app) {
                self.pump().await;
            }
        })
        .await;
        assert!(waited.is_ok(), "timed out waiting for {what}");
    }

    /// As [`Driver::until`], but returns with tokio's clock paused since
    /// just before the update that made `done` hold was applied: no time
    /// has passed for the app since (if `done` holds already, the clock is
    /// paused from now). The test moves time with `tokio::time::advance`
    /// and calls `tokio::time::resume` before it waits on the run again.
    pub async fn until_paused(&mut self, what: &str, done: impl Fn(&App<CoreBackend>) -> bool) {
        if done(&self.app) {
            tokio::time::pause();
            return;
        }
        let waited = tokio::time::timeout(WAIT, async {
            loop {
                let fed = self.next().await;
                tokio::time::pause();
                self.feed(fed).await;
                if done(&self.app) {
                    return;
                }
                tokio::time::resume();
            }
        })
        .await;
        assert!(waited.is_ok(), "timed out waiting for {what}");
    }

    /// Until no run is going on or queued and the last one's end is shown.
    pub async fn until_idle(&mut self) {
        self.until("the session to be idle", |app| {
            app.live().is_none_or(|live| !live.is_busy())
                && !app.transcript().status().is_busy()
                && app.queued().is_empty()
        })
        .await;
        // Whatever the run published last.
        while let Some(Some(update)) = self.reader.as_mut().map(Reader::try_next) {
            self.app.handle_update(update);
        }
    }

    /// The labels of the completion popup open now (none: empty).
    pub fn completion_labels(&self) -> Vec<String> {
        self.app
            .completion()
            .map(|c| c.popup.items.iter().map(|i| i.label.clone()).collect())
            .unwrap_or_default()
    }

    /// The screen at `width`×`height`, as text.
    pub fn screen(&mut self, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|frame| self.app.draw(frame)).unwrap();
        text_of(terminal.backend().buffer())
    }
}
