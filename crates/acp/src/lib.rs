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
//! - The editor's MCP servers (`mcpServers`, stdio and streamable HTTP)
//!   run for their session, beside the workspace's; one that fails is said
//!   in a notice and the session goes on. Modes are the permission modes
//!   ([`modes`]); the model is a session config option ([`models`]); the editor's buffers are read and written through `fs/*`
//!   when it offers both methods ([`files`]).
//!
//! Trade-offs: the SDK queues outgoing messages without a bound: the run is never slowed
//! by the editor, and what the queue can hold is bounded by what a run
//! produces.

mod commands;
mod diffs;
mod files;
mod mcp;
mod models;
mod modes;
mod prompt;
mod replay;
mod session;
mod stop;
mod updates;

use gyre_core::RunRequest;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ConfigOptionUpdate, Implementation, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse,
    SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
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
        client_fs: AtomicBool::new(false),
    });
    let served = serve(state.clone()).await;
    state.close_all().await;
    match served {
        Ok(()) => Ok(0),
        Err(error) if editor_went_away(&error) => {
            tracing::info!("the editor closed the connection while gyre was still writing");
            Ok(0)
        }
        Err(error) => {
            tracing::error!(%error, "the ACP connection failed");
            Err(Exit::failure(format!("the ACP connection failed: {error}")))
        }
    }
}

/// Whether the connection ended because the editor closed it while gyre
/// was still writing (a late update after the editor quit): the SDK reports
/// the failed write as an internal error carrying the io error's text. The
/// editor leaving is how a session ends, not a failure.
fn editor_went_away(error: &Error) -> bool {
    let broken_pipe = std::io::Error::from_raw_os_error(libc::EPIPE).to_string();
    error.code == ErrorCode::INTERNAL_ERROR
        && error.data.as_ref().and_then(serde_json::Value::as_str) == Some(broken_pipe.as_str())
}

/// What the handlers share.
struct State {
    host: Host,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    /// The editor offers `fs/read_text_file` and `fs/write_text_file`.
    client_fs: AtomicBool,
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

    /// The editor's buffers for session `id`, when it offers them.
    fn files_for(&self, cx: &ConnectionTo<Client>, id: &str) -> Option<Arc<files::ClientFiles>> {
        self.client_fs
            .load(Ordering::SeqCst)
            .then(|| Arc::new(files::ClientFiles::new(cx.clone(), id.to_string())))
    }

    /// `live` as the editor's session, with the editor's MCP servers.
    async fn open(
        &self,
        cx: &ConnectionTo<Client>,
        live: Arc<gyre_core::LiveSession>,
        servers: &[agent_client_protocol::v1::schema::McpServer],
    ) -> Result<Arc<AcpSession>, Error> {
        let root = workspace_of(&live);
        let factory = self
            .host
            .factory(Some(&root))
            .await
            .map_err(invalid_params)?;
        let (servers, notices) = mcp::servers(servers);
        let files = self.files_for(cx, live.id());
        let agent_models = factory.catalog.iter().filter_map(|p| p.model.as_deref());
        let models = gyre_host::models::known(&self.host.settings, agent_models);
        AcpSession::open(live, root, factory, &servers, notices, files, models)
    }

    async fn new_session(
        &self,
        cx: &ConnectionTo<Client>,
        request: NewSessionRequest,
    ) -> Result<NewSessionResponse, Error> {
        let live = self
            .host
            .create(Some(&request.cwd), SESSION_TITLE, None)
            .await
            .map_err(invalid_params)?;
        let session = self.open(cx, live, &request.mcp_servers).await?;
        let id = session.live.id().to_string();
        let modes = modes::state(session.mode());
        let options = session.config_options();
        self.keep(session);
        tracing::info!(session = %id, cwd = %request.cwd.display(), "ACP session created");
        Ok(NewSessionResponse::new(id)
            .modes(modes)
            .config_options(options))
    }

    /// `session/set_mode`: from the session's next prompt on.
    fn set_mode(&self, request: &SetSessionModeRequest) -> Result<SetSessionModeResponse, Error> {
        let id = request.session_id.0.to_string();
        let session = self.session(&id).ok_or_else(|| not_open(&id))?;
        let mode = modes::parse(&request.mode_id.0)
            .map_err(|why| Error::new(ErrorCode::INVALID_PARAMS, why))?;
        session.set_mode(mode)?;
        tracing::info!(session = %id, mode = mode.as_str(), "ACP session mode set");
        Ok(SetSessionModeResponse::new())
    }

    /// `session/set_config_option`: the model, from the session's next
    /// prompt; the editor hears of a change (`config_option_update`).
    fn set_config_option(
        &self,
        cx: &ConnectionTo<Client>,
        request: &SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let id = request.session_id.0.to_string();
        let session = self.session(&id).ok_or_else(|| not_open(&id))?;
        let changed = session.set_config(&request.config_id.0, &request.value)?;
        let options = session.config_options();
        if changed {
            tracing::info!(session = %id, option = %request.config_id.0, "ACP session config set");
            let update =
                SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options.clone()));
            if let Err(error) = cx.send_notification(SessionNotification::new(id, update)) {
                tracing::debug!(%error, "the config options were not sent");
            }
        }
        Ok(SetSessionConfigOptionResponse::new(options))
    }

    /// Tells the editor which commands the session offers.
    fn advertise_commands(&self, cx: &ConnectionTo<Client>, id: &str) {
        let Some(session) = self.session(id) else {
            return;
        };
        let update = SessionUpdate::AvailableCommandsUpdate(commands::available(&session.root()));
        if let Err(error) = cx.send_notification(SessionNotification::new(id.to_string(), update)) {
            tracing::debug!(%error, "the commands were not sent");
        }
    }

    /// Opens the stored session (or takes the open one) and replays its
    /// conversation to the editor.
    async fn load_session(
        &self,
        cx: &ConnectionTo<Client>,
        request: LoadSessionRequest,
    ) -> Result<LoadSessionResponse, Error> {
        let id = request.session_id.0.to_string();
        let session = match self.session(&id) {
            Some(open) => open,
            None => {
                let live = self
                    .host
                    .open_session(&id, None)
                    .await
                    .map_err(|exit| Error::new(ErrorCode::RESOURCE_NOT_FOUND, exit.message))?;
                let session = self.open(cx, live, &request.mcp_servers).await?;
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
        Ok(LoadSessionResponse::new()
            .modes(modes::state(session.mode()))
            .config_options(session.config_options()))
    }

    async fn prompt(
        &self,
        cx: ConnectionTo<Client>,
        request: PromptRequest,
    ) -> Result<PromptResponse, Error> {
        let id = request.session_id.0.to_string();
        let session = self.session(&id).ok_or_else(|| not_open(&id))?;
        let text = prompt::prompt_text(&request.prompt);
        let images = prompt::prompt_images(&request.prompt);
        if text.trim().is_empty() && images.is_empty() {
            return Err(Error::new(
                ErrorCode::INVALID_PARAMS,
                "the prompt is empty: say what gyre should do",
            ));
        }
        let mut run = commands::request(&text);
        if run.prompt.is_some()
            && let Some(expanded) =
                commands::custom(&text, &session.root(), &session.permissions()).await
        {
            let prompt = expanded.map_err(|e| Error::new(ErrorCode::INVALID_PARAMS, e))?;
            run = RunRequest::prompt(prompt);
        }
        if run.prompt.is_some() {
            run.images = images;
        }
        let stop = session.prompt(cx, run).await?;
        Ok(PromptResponse::new(stop))
    }
}

/// The connection: one handler per method, each quick.
async fn serve(state: Arc<State>) -> Result<(), Error> {
    let on_init = state.clone();
    let on_new = state.clone();
    let on_load = state.clone();
    let on_mode = state.clone();
    let on_config = state.clone();
    let on_prompt = state.clone();
    let on_cancel = state;
    Agent
        .v1()
        .name("gyre")
        .on_receive_request(
            async move |request: InitializeRequest, responder: Responder<InitializeResponse>, _cx| {
                tracing::info!(client = ?request.client_info, "ACP client connected");
                let fs = &request.client_capabilities.fs;
                on_init
                    .client_fs
                    .store(fs.read_text_file && fs.write_text_file, Ordering::SeqCst);
                responder.respond(initialize())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder: Responder<NewSessionResponse>, cx: ConnectionTo<Client>| {
                let state = on_new.clone();
                let sender = cx.clone();
                cx.spawn(async move {
                    let created = state.new_session(&sender, request).await;
                    let id = created.as_ref().ok().map(|r| r.session_id.0.to_string());
                    answer(responder, created);
                    if let Some(id) = id {
                        state.advertise_commands(&sender, &id);
                    }
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
                    let id = request.session_id.0.to_string();
                    let loaded = state.load_session(&sender, request).await;
                    let ok = loaded.is_ok();
                    answer(responder, loaded);
                    if ok {
                        state.advertise_commands(&sender, &id);
                    }
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder: Responder<SetSessionModeResponse>, _cx: ConnectionTo<Client>| {
                answer(responder, on_mode.set_mode(&request));
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder: Responder<SetSessionConfigOptionResponse>, cx: ConnectionTo<Client>| {
                answer(responder, on_config.set_config_option(&cx, &request));
                Ok(())
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
                .prompt_capabilities(PromptCapabilities::new().embedded_context(true).image(true))
                .mcp_capabilities(McpCapabilities::new().http(true)),
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

fn not_open(id: &str) -> Error {
    Error::new(
        ErrorCode::RESOURCE_NOT_FOUND,
        format!("no open session {id}: create one with session/new or open it with session/load"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_to_a_closed_editor_is_the_editor_leaving() {
        let gone = Error::into_internal_error(std::io::Error::from_raw_os_error(libc::EPIPE));
        assert!(editor_went_away(&gone));
        let other = Error::into_internal_error(std::io::Error::other("transport failure"));
        assert!(!editor_went_away(&other));
        assert!(!editor_went_away(&Error::new(
            ErrorCode::INVALID_PARAMS,
            "x"
        )));
    }
}
