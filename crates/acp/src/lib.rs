//! `gyre acp`: the Agent Client Protocol (v1) over stdio, for editors.
//!
//! The only crate that names `agent-client-protocol`: every type of it
//! stays inside this crate, which the crate churning (a major every month
//! or two) makes worth it: a bump touches nothing else. Settings, the
//! store and the agents come from `gyre-host` ([`Host`]); the binary
//! converts its clap flags into [`Flags`] and calls [`run`]. Must not
//! hold: settings or store logic, clap, or another frontend's code; no
//! ACP type leaves this crate's API (it takes `Flags`, returns `Exit`).
//!
//! Invariants:
//! - stdout carries protocol messages only; logs go to the log file
//!   (`$GYRE_HOME/logs/gyre.log`), warnings of the setup to stderr.
//! - Handlers never hold the connection's dispatch loop: anything that
//!   waits (the store, a run, the editor's answer) runs in a task of its
//!   own, so one session's prompt, permission request or replay never
//!   delays another session's messages.
//! - Sessions are gyre's stored sessions (the ACP session id is gyre's),
//!   created in the editor's `cwd` with the flags `gyre acp` was started
//!   with; `session/load` replays a stored one, in the workspace it was
//!   stored with.
//! - When the editor closes the connection, every open session's run is
//!   stopped and recorded before the process exits.
//!
//! Trade-offs: MCP servers the editor passes in `session/new` are not
//! started (gyre's own `.mcp.json` and config are); they are logged. The
//! SDK queues outgoing messages without a bound: the run is never slowed
//! by the editor, and what the queue can hold is bounded by what a run
//! produces.

mod prompt;
mod replay;
mod session;
mod updates;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, Implementation, InitializeRequest, InitializeResponse,
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse,
    PromptCapabilities, PromptRequest, PromptResponse, SessionNotification,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, ErrorCode, JsonRpcResponse, Stdio};
use gyre_core::Approvals;

use gyre_host::{Exit, Flags, Host};
use session::AcpSession;

/// How long the runs still going when the editor leaves get to record
/// their end.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// The title of sessions an editor creates (the store keeps the title
/// given at creation, before any prompt).
const SESSION_TITLE: &str = "editor session (ACP)";

/// Serves one editor on stdin/stdout until it closes the connection.
pub async fn run(home: &Path, args: Flags) -> Result<i32, Exit> {
    if let Some(flag) = args.one_run_flag() {
        return Err(Exit::usage(format!(
            "{flag} does not apply to `gyre acp`: the editor chooses the sessions"
        )));
    }
    if args.permission_prompt_tool.is_some() {
        return Err(Exit::usage(
            "--permission-prompt-tool does not apply to `gyre acp`: the editor answers permission requests",
        ));
    }
    let host = Host::open(home, args, Approvals::Interactive).await?;
    let state = Arc::new(State {
        host,
        sessions: Mutex::new(HashMap::new()),
    });
    let served = serve(state.clone()).await;
    state.close_all().await;
    match served {
        Ok(()) => Ok(0),
        Err(error) => {
            tracing::error!(%error, "the ACP connection failed");
            Err(Exit::failure(format!("the ACP connection failed: {error}")))
        }
    }
}

/// What the handlers share.
struct State {
    host: Host,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
}

impl State {
    fn session(&self, id: &str) -> Option<Arc<AcpSession>> {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    fn keep(&self, session: Arc<AcpSession>) {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(session.live.id().to_string(), session);
    }

    async fn close_all(&self) {
        let open: Vec<Arc<AcpSession>> = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, session)| session)
            .collect();
        let closing = futures::future::join_all(open.iter().map(|s| s.live.close()));
        if tokio::time::timeout(CLOSE_WAIT, closing).await.is_err() {
            tracing::warn!("runs were still recording their end when gyre acp exited");
        }
    }

    async fn new_session(&self, request: NewSessionRequest) -> Result<NewSessionResponse, Error> {
        note_mcp_servers(request.mcp_servers.len());
        let live = self
            .host
            .create(Some(&request.cwd), SESSION_TITLE, None)
            .await
            .map_err(invalid_params)?;
        let session = AcpSession::new(live.clone(), workspace_of(&live));
        let id = live.id().to_string();
        self.keep(session);
        tracing::info!(session = %id, cwd = %request.cwd.display(), "ACP session created");
        Ok(NewSessionResponse::new(id))
    }

    /// Opens the stored session (or takes the open one) and replays its
    /// conversation to the editor.
    async fn load_session(
        &self,
        cx: &ConnectionTo<Client>,
        request: LoadSessionRequest,
    ) -> Result<LoadSessionResponse, Error> {
        note_mcp_servers(request.mcp_servers.len());
        let id = request.session_id.0.to_string();
        let session = match self.session(&id) {
            Some(open) => open,
            None => {
                let live = self
                    .host
                    .open_session(&id, None)
                    .await
                    .map_err(|exit| Error::new(ErrorCode::RESOURCE_NOT_FOUND, exit.message))?;
                let session = AcpSession::new(live.clone(), workspace_of(&live));
                self.keep(session.clone());
                session
            }
        };
        let messages = self.host.store.load_messages(&id).await.map_err(|e| {
            Error::new(
                ErrorCode::INTERNAL_ERROR,
                format!("cannot read session {id}: {e}"),
            )
        })?;
        for update in replay::replay(&messages, session.root()) {
            cx.send_notification(SessionNotification::new(id.clone(), update))?;
        }
        tracing::info!(session = %id, messages = messages.len(), "ACP session loaded");
        Ok(LoadSessionResponse::new())
    }

    async fn prompt(
        &self,
        cx: ConnectionTo<Client>,
        request: PromptRequest,
    ) -> Result<PromptResponse, Error> {
        let id = request.session_id.0.to_string();
        let session = self.session(&id).ok_or_else(|| {
            Error::new(
                ErrorCode::RESOURCE_NOT_FOUND,
                format!(
                    "no open session {id}: create one with session/new or open it with session/load"
                ),
            )
        })?;
        let text = prompt::prompt_text(&request.prompt);
        if text.trim().is_empty() {
            return Err(Error::new(
                ErrorCode::INVALID_PARAMS,
                "the prompt is empty: say what gyre should do",
            ));
        }
        let stop = session.prompt(cx, text).await?;
        Ok(PromptResponse::new(stop))
    }
}

/// The connection: one handler per method, each quick.
async fn serve(state: Arc<State>) -> Result<(), Error> {
    let on_new = state.clone();
    let on_load = state.clone();
    let on_prompt = state.clone();
    let on_cancel = state;
    Agent
        .v1()
        .name("gyre")
        .on_receive_request(
            async move |request: InitializeRequest, responder: Responder<InitializeResponse>, _cx| {
                tracing::info!(client = ?request.client_info, "ACP client connected");
                responder.respond(initialize())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder: Responder<NewSessionResponse>, cx: ConnectionTo<Client>| {
                let state = on_new.clone();
                cx.spawn(async move {
                    answer(responder, state.new_session(request).await);
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder: Responder<LoadSessionResponse>, cx: ConnectionTo<Client>| {
                let state = on_load.clone();
                let sender = cx.clone();
                cx.spawn(async move {
                    answer(responder, state.load_session(&sender, request).await);
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder: Responder<PromptResponse>, cx: ConnectionTo<Client>| {
                let state = on_prompt.clone();
                let sender = cx.clone();
                cx.spawn(async move {
                    answer(responder, state.prompt(sender, request).await);
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |cancel: CancelNotification, _cx: ConnectionTo<Client>| {
                match on_cancel.session(&cancel.session_id.0) {
                    Some(session) => session.cancel(),
                    None => tracing::debug!(session = %cancel.session_id, "cancel for a session that is not open"),
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
}

fn initialize() -> InitializeResponse {
    // gyre speaks v1 only; an editor that needs another version says so.
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().embedded_context(true)),
        )
        .agent_info(Implementation::new("gyre", env!("CARGO_PKG_VERSION")))
}

/// Sends a handler's result; a closed connection has no one to tell.
fn answer<T: JsonRpcResponse>(responder: Responder<T>, result: Result<T, Error>) {
    let sent = match result {
        Ok(response) => responder.respond(response),
        Err(error) => responder.respond_with_error(error),
    };
    if let Err(error) = sent {
        tracing::debug!(%error, "an ACP response was not sent");
    }
}

fn invalid_params(exit: Exit) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, exit.message)
}

/// The session's workspace, as it was stored.
fn workspace_of(live: &gyre_core::LiveSession) -> std::path::PathBuf {
    live.with_session(|s| std::path::PathBuf::from(&s.meta.cwd))
        .unwrap_or_default()
}

fn note_mcp_servers(count: usize) {
    if count > 0 {
        tracing::warn!(
            count,
            "the editor's MCP servers are not started: gyre uses its own (.mcp.json, config.toml)"
        );
    }
}
