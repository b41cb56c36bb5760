//! `gyre mcp-server`: gyre as an MCP server over stdio, so that another
//! agent (Claude Code, Codex) can hand it a task.
//!
//! Two tools: `gyre` runs a prompt in a new session in a directory and
//! returns the final text with the session's id; `gyre_reply` goes on
//! with that session. rmcp's server side (its `server` and
//! `transport-io` features) is used in this crate only; `gyre-mcp` is the
//! client. Settings, the store and the agents come from `gyre-host`
//! ([`Host`]); the binary converts its clap flags into [`Flags`] and calls
//! [`run`]. Must not hold: settings or store logic, clap, or another
//! frontend's code; no rmcp type leaves this crate's API.
//!
//! Invariants:
//! - stdout carries MCP messages only; logs go to the log file.
//! - No one is asked about permissions: a call that needs approval is
//!   refused with the usual headless explanation (which names the
//!   `--allowed-tools` rule and modes to start the server with), unless the
//!   server was started with `--permission-prompt-tool`.
//! - One prompt of a session runs at a time; a second call on a busy
//!   session waits for the first. A client's cancellation of a call stops
//!   its run (what ran so far is recorded), also when it comes while the
//!   run is starting, and never stops another call's run.
//! - A bad call (unknown session, empty prompt, bad arguments) is a tool
//!   error the calling model can read, never a crash.
//! - Memory is bounded by the calls going on: a session is kept only while
//!   calls use it; when the last one ends and its run has recorded its
//!   end, it is dropped, and `gyre_reply` opens it again from the store.
//!
//! Trade-offs: a session's model, agent and permission mode are the
//! server's flags (`agent` may be chosen per call); there is no per-call
//! model or permission mode, which would need an agent factory per
//! combination. Progress notifications carry the text as it streams when
//! the client asks for progress.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use gyre_core::{Abort, LiveSession, RunRequest, Update};
use gyre_protocol::{Event, FinishReason, RunSummary};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{Value, json};

use gyre_host::{Exit, Flags, Host, Settings};

/// How long runs still going when the client leaves get to record their end.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// Serves one MCP client on stdin/stdout until it closes the connection.
pub async fn run(home: &Path, args: Flags) -> Result<i32, Exit> {
    if let Some(flag) = args.one_run_flag() {
        return Err(Exit::usage(format!(
            "{flag} does not apply to `gyre mcp-server`: the client chooses the sessions"
        )));
    }
    // Headless, or the --permission-prompt-tool: no person is at hand.
    let approvals = Settings::resolve(&args)?.approvals();
    let host = Host::open(home, args, approvals).await?;
    let server = GyreServer {
        host: Arc::new(host),
        sessions: Arc::new(Mutex::new(HashMap::new())),
    };
    let sessions = server.sessions.clone();
    let served = match server.serve(rmcp::transport::io::stdio()).await {
        Ok(running) => running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Err(error) => Err(error.to_string()),
    };
    close_all(&sessions).await;
    match served {
        Ok(()) => Ok(0),
        Err(error) => {
            tracing::error!(%error, "the MCP connection failed");
            Err(Exit::failure(format!("the MCP connection failed: {error}")))
        }
    }
}

type Sessions = Arc<Mutex<HashMap<String, Arc<Served>>>>;

/// A session a client's calls run prompts in.
struct Served {
    live: Arc<LiveSession>,
    /// Held by the call whose prompt runs.
    turn: tokio::sync::Mutex<()>,
    /// The calls using it; raised only under the sessions' lock, so that a
    /// session is dropped only when no call took it meanwhile.
    calls: AtomicUsize,
}

impl Served {
    /// A session used by one call.
    fn new(live: Arc<LiveSession>) -> Arc<Served> {
        Arc::new(Served {
            live,
            turn: tokio::sync::Mutex::new(()),
            calls: AtomicUsize::new(1),
        })
    }
}

#[derive(Clone)]
struct GyreServer {
    host: Arc<Host>,
    sessions: Sessions,
}

async fn close_all(sessions: &Sessions) {
    let open: Vec<Arc<Served>> = sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .drain()
        .map(|(_, served)| served)
        .collect();
    let closing = futures::future::join_all(open.iter().map(|s| s.live.close()));
    if tokio::time::timeout(CLOSE_WAIT, closing).await.is_err() {
        tracing::warn!("runs were still recording their end when gyre mcp-server exited");
    }
}

#[derive(Debug, Deserialize)]
struct GyreArgs {
    prompt: String,
    cwd: Option<PathBuf>,
    agent: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ReplyArgs {
    session_id: String,
    prompt: String,
}

/// How a call ended, as both result forms show it.
struct Outcome {
    session_id: String,
    result: String,
    is_error: bool,
}

impl GyreServer {
    async fn gyre(&self, args: GyreArgs, context: &RequestContext<RoleServer>) -> CallToolResult {
        if args.prompt.trim().is_empty() {
            return tool_error("the prompt is empty: say what gyre should do");
        }
        let created = self
            .host
            .create(args.cwd.as_deref(), &args.prompt, args.agent.as_deref())
            .await;
        let live = match created {
            Ok(live) => live,
            Err(exit) => return tool_error(&exit.message),
        };
        let served = Served::new(live);
        self.keep(served.clone());
        let outcome = run_prompt(&served, args.prompt, context).await;
        self.release(&served).await;
        outcome.into()
    }

    async fn reply(&self, args: ReplyArgs, context: &RequestContext<RoleServer>) -> CallToolResult {
        if args.prompt.trim().is_empty() {
            return tool_error("the prompt is empty: say what gyre should do");
        }
        let served = match self.open(&args.session_id).await {
            Ok(served) => served,
            Err(message) => return tool_error(&message),
        };
        let outcome = run_prompt(&served, args.prompt, context).await;
        self.release(&served).await;
        outcome.into()
    }

    fn keep(&self, served: Arc<Served>) {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(served.live.id().to_string(), served);
    }

    /// Ends a call's use of `served`: the last call drops it once its run
    /// has recorded its end (unless another call took it meanwhile).
    async fn release(&self, served: &Arc<Served>) {
        if served.calls.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        served.live.idle().await;
        let id = served.live.id();
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let unused = served.calls.load(Ordering::Acquire) == 0;
        if unused && sessions.get(id).is_some_and(|s| Arc::ptr_eq(s, served)) {
            sessions.remove(id);
        }
    }

    /// The session `id`, for one more call: one this server runs, else a
    /// stored one.
    async fn open(&self, id: &str) -> Result<Arc<Served>, String> {
        let found = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .inspect(|served| {
                served.calls.fetch_add(1, Ordering::AcqRel);
            })
            .cloned();
        if let Some(served) = found {
            return Ok(served);
        }
        let live = self
            .host
            .open_session(id, None)
            .await
            .map_err(|exit| exit.message)?;
        // Two calls opening it at once: the first one kept wins.
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        match sessions.get(id) {
            Some(kept) => {
                kept.calls.fetch_add(1, Ordering::AcqRel);
                Ok(kept.clone())
            }
            None => {
                let served = Served::new(live);
                sessions.insert(id.to_string(), served.clone());
                Ok(served)
            }
        }
    }
}

/// Runs `prompt` in `served` to its end (or the client's cancellation).
async fn run_prompt(
    served: &Served,
    prompt: String,
    context: &RequestContext<RoleServer>,
) -> Outcome {
    let session_id = served.live.id().to_string();
    let cancelled = context.ct.clone();
    let _turn = tokio::select! {
        turn = served.turn.lock() => turn,
        _ = cancelled.cancelled() => {
            return Outcome { session_id, result: "cancelled before it started".into(), is_error: true };
        }
    };
    let (submitted, mut reader) = served.live.submit_and_read(RunRequest::prompt(prompt));
    let run = submitted.run();
    let progress = context.meta.get_progress_token();
    let mut streamed = 0u64;
    let mut aborted = false;
    loop {
        let next = tokio::select! {
            next = reader.next() => next,
            // Stop the run (the live session keeps an abort that comes
            // before the run has started), then read on to its recorded end.
            _ = cancelled.cancelled(), if !aborted => {
                aborted = true;
                served.live.abort(Abort::CurrentRun);
                continue;
            }
        };
        let numbered = match next {
            Ok(numbered) => numbered,
            Err(lagged) => {
                tracing::warn!(session = %session_id, %lagged, "an MCP call fell behind its run");
                continue;
            }
        };
        let Update::Event { run: of, event } = numbered.update.as_ref() else {
            continue;
        };
        if *of != run {
            continue;
        }
        match event {
            Event::RunFinished(summary) => return outcome(session_id, summary),
            Event::TextDelta { text } => {
                if let Some(token) = &progress {
                    streamed += 1;
                    let mut note = ProgressNotificationParam::new(token.clone(), streamed as f64);
                    note.message = Some(text.clone());
                    if let Err(error) = context.peer.notify_progress(note).await {
                        tracing::debug!(%error, "a progress notification was not sent");
                    }
                }
            }
            _ => {}
        }
    }
}

fn outcome(session_id: String, summary: &RunSummary) -> Outcome {
    let is_error = summary.reason != FinishReason::Completed || summary.error.is_some();
    let result = match (&summary.error, summary.reason) {
        (None, FinishReason::Completed) => summary.final_text.clone(),
        (Some(error), _) => error.message.clone(),
        (None, reason) => format!("the run stopped: {reason:?}"),
    };
    Outcome {
        session_id,
        result,
        is_error,
    }
}

impl From<Outcome> for CallToolResult {
    fn from(outcome: Outcome) -> Self {
        let structured = json!({
            "session_id": outcome.session_id,
            "result": outcome.result,
            "is_error": outcome.is_error,
        });
        let content = vec![
            ContentBlock::text(outcome.result),
            // For clients that show the model the content only.
            ContentBlock::text(format!(
                "gyre session_id: {} (continue it with gyre_reply)",
                outcome.session_id
            )),
        ];
        let mut result = if outcome.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        result.structured_content = Some(structured);
        result
    }
}

fn tool_error(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.to_string())])
}

/// `value` (a JSON object literal) as a schema object.
fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

fn output_schema() -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {
            "session_id": {"type": "string", "description": "The gyre session: pass it to gyre_reply to go on."},
            "result": {"type": "string", "description": "gyre's final answer, or what went wrong."},
            "is_error": {"type": "boolean"}
        },
        "required": ["session_id", "result", "is_error"]
    }))
}

fn tools() -> Vec<Tool> {
    let annotations = ToolAnnotations::new()
        .read_only(false)
        .destructive(true)
        .open_world(true);
    vec![
        Tool::new(
            "gyre",
            "Run a task with gyre, a coding agent that reads, edits and runs the project in `cwd`. \
             Returns gyre's final answer and its session_id (continue with gyre_reply).",
            object(json!({
                "type": "object",
                "properties": {
                    "prompt": {"type": "string", "description": "The task, as you would tell a developer."},
                    "cwd": {"type": "string", "description": "The project directory (default: where the server was started)."},
                    "agent": {"type": "string", "description": "A gyre agent: build (default), plan, explore, or a configured one."}
                },
                "required": ["prompt"]
            })),
        )
        .with_raw_output_schema(output_schema())
        .with_annotations(annotations.clone()),
        Tool::new(
            "gyre_reply",
            "Continue a gyre session with another prompt; gyre sees the whole conversation so far.",
            object(json!({
                "type": "object",
                "properties": {
                    "session_id": {"type": "string", "description": "The session_id a gyre call returned."},
                    "prompt": {"type": "string", "description": "What gyre should do next."}
                },
                "required": ["session_id", "prompt"]
            })),
        )
        .with_raw_output_schema(output_schema())
        .with_annotations(annotations),
    ]
}

/// The arguments of a call as `T`, or what is wrong with them.
fn parse<T: serde::de::DeserializeOwned>(
    tool: &str,
    arguments: Option<JsonObject>,
) -> Result<T, String> {
    let value = Value::Object(arguments.unwrap_or_default());
    serde_json::from_value(value).map_err(|e| format!("bad arguments for `{tool}`: {e}"))
}

impl ServerHandler for GyreServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("gyre", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "gyre is a coding agent. Call `gyre` with a task and a project directory; \
                 continue the same session with `gyre_reply` and the returned session_id.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools().into_iter().find(|tool| tool.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = match request.name.as_ref() {
            "gyre" => match parse::<GyreArgs>("gyre", request.arguments) {
                Ok(args) => self.gyre(args, &context).await,
                Err(message) => tool_error(&message),
            },
            "gyre_reply" => match parse::<ReplyArgs>("gyre_reply", request.arguments) {
                Ok(args) => self.reply(args, &context).await,
                Err(message) => tool_error(&message),
            },
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool `{other}`: the tools are gyre and gyre_reply"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}
