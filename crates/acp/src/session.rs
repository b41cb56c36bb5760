//! One ACP session: its prompts, their streamed updates, their permission
//! requests and their cancellation.
//!
//! Invariants:
//! - One prompt of a session runs at a time (a later one waits for the
//!   earlier one's response); every prompt gets exactly one response.
//! - `session/cancel` stops the running prompt and every prompt of the
//!   session that was waiting when it came; each of them answers
//!   `cancelled`. A cancel that comes while a run is being started is
//!   applied as soon as the run exists, so it is never lost.
//! - The run never waits for the editor: updates are read from the live
//!   session's kept stream and passed on as notifications; a permission
//!   request is awaited in its own task, so the stream goes on meanwhile
//!   and a client that never answers stalls only the call it was asked
//!   about (which a cancel still ends).
//! - A subagent's tool calls are shown like the session's own (their ids
//!   are unique), so its permission requests point at a call the editor
//!   knows; its text is not shown (it is the `task` call's result).
//! - A call stays `pending` while its permission request is open; it is
//!   `in_progress` once allowed (sent before the run is told, so the
//!   editor sees it before the result) or once it reports progress.
//! - The session's agent is rebuilt (for its next prompt) when its mode
//!   or its model (one of [`models`]' list, adjusted as the TUI's `/model`)
//!   changes; it carries the session's own MCP tool set when the editor
//!   passed servers. The first prompt waits (bounded) for those servers,
//!   and says in a notice (an agent message) which of them failed.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionConfigOption, SessionConfigOptionValue, SessionNotification, SessionUpdate, StopReason,
    ToolCall as AcpToolCall, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use agent_client_protocol::{Client, Error, ErrorCode};
use gyre_core::{Abort, LiveSession, PermissionAnswer, PermissionMode, RunRequest, Update};
use gyre_host::AgentFactory;
use gyre_host::editor_mcp::{self, EditorServer};
use gyre_protocol::{Event, McpServerState, ToolCall};
use gyre_tools::LateTools;

use super::files::ClientFiles;
use super::stop::stop_reason;
use super::updates::{Updates, agent_text, kind_of};
use super::{diffs, models, modes};

/// How long a session's first prompt waits for the editor's MCP servers.
const MCP_WAIT: Duration = Duration::from_secs(30);

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";

/// A session an editor has open.
pub struct AcpSession {
    pub live: Arc<LiveSession>,
    /// The workspace: where relative paths in tool calls point.
    root: PathBuf,
    /// Held by the prompt that runs.
    turn: tokio::sync::Mutex<()>,
    /// How many cancels came; a prompt cancelled after it arrived sees it
    /// change.
    cancels: AtomicU64,
    /// Builds the session's agent again when its mode changes.
    factory: Arc<AgentFactory>,
    agent_name: String,
    /// The session's own MCP tool set (the editor passed servers).
    late: Option<Arc<LateTools>>,
    /// The editor's servers, by name (their failures are said).
    editor_servers: Vec<String>,
    mode: Mutex<PermissionMode>,
    /// The models the editor may choose ([`gyre_host::models::known`]).
    models: Vec<String>,
    /// The model the editor chose, if it did.
    model: Mutex<Option<String>>,
    /// Said to the editor at the next prompt (servers not started).
    notices: Mutex<Vec<String>>,
    /// Whether the first prompt has waited for the MCP servers.
    mcp_waited: AtomicBool,
    /// The editor's buffers, when it offers `fs/*`.
    files: Option<Arc<ClientFiles>>,
}

impl std::fmt::Debug for AcpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpSession")
            .field("id", &self.live.id())
            .finish_non_exhaustive()
    }
}

impl AcpSession {
    /// The editor's view of `live`: its agent rebuilt when the editor
    /// passed MCP servers or offers its buffers.
    pub fn open(
        live: Arc<LiveSession>,
        root: PathBuf,
        factory: Arc<AgentFactory>,
        servers: &[EditorServer],
        notices: Vec<String>,
        files: Option<Arc<ClientFiles>>,
        models: Vec<String>,
    ) -> Result<Arc<Self>, Error> {
        let agent_name = live
            .with_session(|s| s.state.agent.clone())
            .flatten()
            .unwrap_or_else(|| factory.default_agent().to_string());
        let late = editor_mcp::start(&factory, servers);
        let mode = factory.config.permissions.mode;
        let session = Arc::new(Self {
            live,
            root,
            turn: tokio::sync::Mutex::new(()),
            cancels: AtomicU64::new(0),
            factory,
            agent_name,
            late,
            editor_servers: servers.iter().map(|s| s.name().to_string()).collect(),
            mode: Mutex::new(mode),
            models,
            model: Mutex::new(None),
            notices: Mutex::new(notices),
            mcp_waited: AtomicBool::new(false),
            files,
        });
        if session.late.is_some() || session.files.is_some() {
            session.rebuild()?;
        }
        Ok(session)
    }

    /// The permissions a prompt of this session runs with (a custom
    /// command's `` !`command` `` inclusions are checked against them).
    pub fn permissions(&self) -> gyre_core::Permissions {
        let mut permissions = self.factory.config.permissions.clone();
        permissions.mode = self.mode();
        permissions
    }

    pub fn mode(&self) -> PermissionMode {
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `session/set_mode` (and an approved plan): applies from the next
    /// prompt.
    pub fn set_mode(&self, mode: PermissionMode) -> Result<(), Error> {
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner) = mode;
        self.rebuild()
    }

    /// The session's config options (its model), as they are now.
    pub fn config_options(&self) -> Vec<SessionConfigOption> {
        models::options(&self.models, &self.live.agent().config().model)
    }

    /// `session/set_config_option`: from the next prompt; whether the
    /// model changed. An agent with a model of its own keeps it (refused).
    pub fn set_config(&self, id: &str, value: &SessionConfigOptionValue) -> Result<bool, Error> {
        let before = self.live.agent().config().model.clone();
        let model = models::chosen(id, value, &self.models, &before)
            .map_err(|why| Error::new(ErrorCode::INVALID_PARAMS, why))?;
        let chosen = Some(model.clone());
        let earlier = std::mem::replace(
            &mut *self.model.lock().unwrap_or_else(PoisonError::into_inner),
            chosen,
        );
        self.rebuild()?;
        let now = self.live.agent().config().model.clone();
        if now != model {
            *self.model.lock().unwrap_or_else(PoisonError::into_inner) = earlier;
            self.rebuild()?;
            let why = format!(
                "the agent `{}` runs on its own model `{now}`",
                self.agent_name
            );
            return Err(Error::new(ErrorCode::INVALID_PARAMS, why));
        }
        Ok(now != before)
    }

    /// The session's agent with its mode, model, tool set and file access.
    fn rebuild(&self) -> Result<(), Error> {
        let mode = self.mode();
        let model = self
            .model
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let late = self.late.clone();
        let files = self.files.clone();
        let overrides = self.factory.model_overrides.clone();
        let (agent, _warnings) = self
            .factory
            .agent_with(&self.agent_name, |config| {
                config.permissions.mode = mode;
                if let Some(model) = &model {
                    gyre_host::models::adjust(&overrides, config, model);
                }
                if let Some(late) = late {
                    config.late_tools = Some(late);
                }
                if let Some(files) = files {
                    config.workspace_fs = Some(files);
                }
            })
            .map_err(|exit| Error::new(ErrorCode::INTERNAL_ERROR, exit.message))?;
        self.live.set_agent(agent);
        Ok(())
    }

    /// Waits (once, bounded) for the editor's MCP servers, then says what
    /// failed to start, with the notices kept until now.
    async fn say_notices(&self, cx: &ConnectionTo<Client>) {
        if let Some(late) = &self.late
            && !self.mcp_waited.swap(true, Ordering::SeqCst)
        {
            let _ = tokio::time::timeout(MCP_WAIT, late.wait_started()).await;
            let failed: Vec<String> = late
                .statuses()
                .into_iter()
                .filter(|s| self.editor_servers.contains(&s.server))
                .filter(|s| matches!(s.status, McpServerState::Failed | McpServerState::Crashed))
                .map(|s| format!("MCP server `{}` failed: {}", s.server, s.message))
                .collect();
            self.notices
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(failed);
        }
        let notices =
            std::mem::take(&mut *self.notices.lock().unwrap_or_else(PoisonError::into_inner));
        for notice in notices {
            tracing::warn!(session = self.live.id(), "{notice}");
            self.notify(cx, agent_text(&format!("gyre: {notice}\n\n")));
        }
    }

    pub fn root(&self) -> PathBuf {
        self.root.clone()
    }

    /// `session/cancel`: stops the running prompt and the waiting ones.
    pub fn cancel(&self) {
        self.cancels.fetch_add(1, Ordering::SeqCst);
        self.live.abort(Abort::CurrentRun);
    }

    /// Runs `text` as the session's next prompt, passing its updates on to
    /// `cx`; how it stopped, or why it failed.
    pub async fn prompt(
        self: Arc<Self>,
        cx: ConnectionTo<Client>,
        request: RunRequest,
    ) -> Result<StopReason, Error> {
        let cancels_before = self.cancels.load(Ordering::SeqCst);
        let _turn = self.turn.lock().await;
        if self.cancels.load(Ordering::SeqCst) != cancels_before {
            return Ok(StopReason::Cancelled);
        }
        self.say_notices(&cx).await;
        // A command alone (`/compact`) made no plan to approve.
        let prompted = request.prompt.is_some();
        let stop = self.run(&cx, request, cancels_before).await?;
        if prompted && stop == StopReason::EndTurn && self.mode() == PermissionMode::Plan {
            self.approve_plan(&cx).await?;
        }
        Ok(stop)
    }

    /// Asks the editor to approve the plan; an approval sets the mode it
    /// chose and says so (`current_mode_update`).
    async fn approve_plan(&self, cx: &ConnectionTo<Client>) -> Result<(), Error> {
        let call_id = format!("plan-approval-{}", gyre_core::new_id());
        self.notify(
            cx,
            SessionUpdate::ToolCall(
                AcpToolCall::new(call_id.clone(), modes::APPROVAL_TITLE)
                    .kind(agent_client_protocol::v1::schema::ToolKind::SwitchMode)
                    .status(ToolCallStatus::Pending),
            ),
        );
        let (call, options) = modes::approval(&call_id);
        let request = RequestPermissionRequest::new(self.live.id().to_string(), call, options);
        let chosen = match cx.send_request(request).block_task().await {
            Ok(response) => modes::approved(&response.outcome),
            Err(error) => {
                tracing::warn!(session = self.live.id(), %error, "the editor did not answer the plan's approval");
                None
            }
        };
        let status = if chosen.is_some() {
            ToolCallStatus::Completed
        } else {
            ToolCallStatus::Failed
        };
        self.notify(
            cx,
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                call_id,
                ToolCallUpdateFields::new().status(status),
            )),
        );
        if let Some(mode) = chosen {
            self.set_mode(mode)?;
            self.notify(cx, SessionUpdate::CurrentModeUpdate(modes::changed(mode)));
        }
        Ok(())
    }

    /// Runs `request`, passing its updates on; how it stopped.
    async fn run(
        self: &Arc<Self>,
        cx: &ConnectionTo<Client>,
        request: RunRequest,
        cancels_before: u64,
    ) -> Result<StopReason, Error> {
        let (submitted, mut reader) = self.live.submit_and_read(request);
        let run = submitted.run();
        // A cancel that came between the check above and the submit reached
        // no run: apply it now (the live session keeps an abort made before
        // the run has started; later cancels abort it directly).
        if self.cancels.load(Ordering::SeqCst) != cancels_before {
            self.live.abort(Abort::CurrentRun);
        }
        let mut updates = Updates::new(self.root.clone());
        loop {
            let numbered = match reader.next().await {
                Ok(numbered) => numbered,
                Err(lagged) => {
                    tracing::warn!(session = self.live.id(), %lagged, "ACP prompt fell behind its run");
                    continue;
                }
            };
            let Update::Event { run: of, event } = numbered.update.as_ref() else {
                continue;
            };
            if *of != run {
                continue;
            }
            if let Event::RunFinished(summary) = event {
                return stop_reason(summary);
            }
            for update in self.updates_of(cx, &mut updates, event) {
                self.notify(cx, update);
            }
        }
    }

    /// The updates of `event`, a subagent's tool calls included; asks the
    /// editor about permission requests.
    fn updates_of(
        self: &Arc<Self>,
        cx: &ConnectionTo<Client>,
        updates: &mut Updates,
        event: &Event,
    ) -> Vec<SessionUpdate> {
        match event {
            Event::PermissionRequested {
                request_id,
                call,
                always_rule,
                ..
            } => {
                self.ask(cx, updates, request_id, call, always_rule.as_deref());
                Vec::new()
            }
            Event::Subagent { inner, .. } => match inner.as_ref() {
                Event::ToolCallStarted { .. }
                | Event::ToolCallReady { .. }
                | Event::ToolResult { .. }
                | Event::PermissionRequested { .. }
                | Event::Subagent { .. } => self.updates_of(cx, updates, inner),
                _ => Vec::new(),
            },
            other => updates.of(other),
        }
    }

    fn notify(&self, cx: &ConnectionTo<Client>, update: SessionUpdate) {
        let notification = SessionNotification::new(self.live.id().to_string(), update);
        if let Err(error) = cx.send_notification(notification) {
            tracing::debug!(session = self.live.id(), %error, "a session update was not sent");
        }
    }

    /// Sends `session/request_permission` for `call` and answers the run
    /// with the editor's choice, in a task of its own.
    fn ask(
        self: &Arc<Self>,
        cx: &ConnectionTo<Client>,
        updates: &Updates,
        request_id: &str,
        call: &ToolCall,
        always_rule: Option<&str>,
    ) {
        let always_rule = always_rule.map(str::to_string);
        let fields = updates.details(call).kind(kind_of(&call.name));
        let path = updates.file_of(call);
        let call = call.clone();
        let session = self.clone();
        let request_id = request_id.to_string();
        let unasked = request_id.clone();
        let asking = cx.clone();
        let spawned = cx.spawn(async move {
            let before = match &path {
                Some(path) => session.file_text(path).await,
                None => None,
            };
            let content = path
                .as_deref()
                .map(|path| diffs::whole(&call, path, before.as_deref()))
                .unwrap_or_default();
            let fields = if content.is_empty() { fields } else { fields.content(content) };
            let request = RequestPermissionRequest::new(
                session.live.id().to_string(),
                ToolCallUpdate::new(call.id.clone(), fields),
                options(always_rule.as_deref()),
            );
            let answer = match asking.send_request(request).block_task().await {
                Ok(response) => answer_of(&response.outcome),
                Err(error) => {
                    tracing::warn!(session = session.live.id(), %error, "the editor did not answer a permission request; the call is denied");
                    PermissionAnswer::Deny
                }
            };
            if answer != PermissionAnswer::Deny {
                session.notify(
                    &asking,
                    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        call.id.clone(),
                        ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
                    )),
                );
            }
            // False when the run ended meanwhile (cancelled): nothing waits.
            session.live.answer_permission(&request_id, answer);
            Ok(())
        });
        if let Err(error) = spawned {
            tracing::warn!(session = self.live.id(), %error, "cannot ask the editor; the call is denied");
            self.live
                .answer_permission(&unasked, PermissionAnswer::Deny);
        }
    }
}

impl AcpSession {
    /// The text of `path` as the editor has it (its buffer when it offers
    /// `fs/*`, else the disk); `None` when there is none.
    async fn file_text(&self, path: &std::path::Path) -> Option<String> {
        match &self.files {
            Some(files) => files.read_text(path).await.ok(),
            None => tokio::fs::read_to_string(path).await.ok(),
        }
    }
}

/// The choices offered for a call; "always" names the rule it adds.
fn options(always_rule: Option<&str>) -> Vec<PermissionOption> {
    let mut options = vec![PermissionOption::new(
        ALLOW_ONCE,
        "Allow once",
        PermissionOptionKind::AllowOnce,
    )];
    if let Some(rule) = always_rule {
        options.push(PermissionOption::new(
            ALLOW_ALWAYS,
            format!("Always allow {rule} in this session"),
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        REJECT_ONCE,
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    options
}

/// The editor's choice as gyre's answer; anything else than an allow
/// (a cancelled request, an unknown option) denies.
fn answer_of(outcome: &RequestPermissionOutcome) -> PermissionAnswer {
    match outcome {
        RequestPermissionOutcome::Selected(selected) => match selected.option_id.0.as_ref() {
            ALLOW_ONCE => PermissionAnswer::Allow,
            ALLOW_ALWAYS => PermissionAnswer::AlwaysAllow,
            _ => PermissionAnswer::Deny,
        },
        _ => PermissionAnswer::Deny,
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use agent_client_protocol::v1::schema::SelectedPermissionOutcome;

    #[test]
    fn only_an_allow_option_allows() {
        let chose = |id: &str| {
            answer_of(&RequestPermissionOutcome::Selected(
                SelectedPermissionOutcome::new(id.to_string()),
            ))
        };
        assert_eq!(chose(ALLOW_ONCE), PermissionAnswer::Allow);
        assert_eq!(chose(ALLOW_ALWAYS), PermissionAnswer::AlwaysAllow);
        assert_eq!(chose(REJECT_ONCE), PermissionAnswer::Deny);
        assert_eq!(chose("something else"), PermissionAnswer::Deny);
        assert_eq!(
            answer_of(&RequestPermissionOutcome::Cancelled),
            PermissionAnswer::Deny
        );
        let names: Vec<String> = options(Some("write(src/**)"))
            .into_iter()
            .map(|o| o.name)
            .collect();
        assert_eq!(
            names,
            [
                "Allow once",
                "Always allow write(src/**) in this session",
                "Reject"
            ]
        );
        assert_eq!(options(None).len(), 2);
    }
}
