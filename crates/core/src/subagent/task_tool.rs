//! `task`: runs a subagent, in the foreground (its final text is the
//! result) or in the background (the result is the task id; the end
//! arrives later as a notification), or continues a finished one.
//!
//! Invariants:
//! - The subagent's session is created (with its parent's id) before it
//!   runs, so a crash leaves a session that can be found and resumed.
//! - A foreground subagent forwards every event to its caller's stream,
//!   nested under the call; it is cancelled with the call.
//! - A background subagent is cancelled with the run that started it; its
//!   end is recorded in the session's [`BackgroundTasks`] whatever happens.
//! - Scheduling: a call to a read-only agent may run beside other
//!   read-only calls (and runs again after a crash); any other is a
//!   mutating call (one at a time; reported as interrupted after a crash).

use futures::StreamExt;
use futures::future::BoxFuture;
use gyre_protocol::{
    Event, FinishReason, Outcome, RunError, RunErrorKind, RunSummary, ToolSpec, Usage,
};
use gyre_tools::{Tool, ToolContext, ToolError, ToolKind, ToolOutput, input_schema, parse_args};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::LoopScope;
use super::background::status_word;
use crate::agent::RunRequest;
use crate::agents::{AgentCatalog, AgentProfile, DEFAULT_AGENT};
use crate::events::EventSink;
use crate::session::Session;

const NAME: &str = "task";

/// Arguments of `task`.
#[derive(Deserialize, JsonSchema)]
pub struct TaskArgs {
    /// A short (3-5 words) description of the task, for display.
    description: String,
    /// The whole task for the subagent. It sees nothing of this conversation: say everything
    /// it needs (files, constraints, what to report back).
    prompt: String,
    /// Which agent runs it (default `build`).
    agent: Option<String>,
    /// Run it in the background: the call returns the task id at once and a
    /// <task-notification> arrives when it ends. Default false.
    background: Option<bool>,
    /// The task id of a finished subagent to continue: it keeps its history and gets `prompt`
    /// as the next message.
    resume: Option<String>,
}

/// The `task` tool; its description lists the agents of the catalog.
pub struct TaskTool {
    spec: ToolSpec,
    /// Which agents are read-only, for scheduling.
    read_only: Vec<String>,
}

impl TaskTool {
    pub fn new(catalog: &AgentCatalog) -> Self {
        let mut description = String::from(
            "Start a subagent: a separate agent loop with its own history and tools that works \
             on one task and reports back. Use it for work that is independent of this \
             conversation or would fill it with noise (broad searches, a self-contained change, \
             a review). Several `task` calls in one answer run at the same time. Give the \
             subagent a complete prompt: it knows only what you write. The result is its final \
             answer, which the user does not see: relay what matters. Background tasks return \
             their id at once; keep working and you get a <task-notification> when one ends \
             (`task_output` reads one's state). Pass a finished task's id as `resume` to \
             continue it.\n\nAgents:",
        );
        for profile in catalog.iter() {
            description.push_str(&format!("\n- {}: {}", profile.name, profile.description));
        }
        let read_only = catalog
            .iter()
            .filter(|p| p.is_read_only())
            .map(|p| p.name.clone())
            .collect();
        Self {
            spec: ToolSpec {
                name: NAME.into(),
                description,
                input_schema: input_schema::<TaskArgs>(),
            },
            read_only,
        }
    }
}

impl Tool for TaskTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self, arguments: &Value) -> ToolKind {
        let resumes = arguments.get("resume").is_some_and(|v| !v.is_null());
        let agent = match arguments.get("agent").and_then(Value::as_str) {
            Some(name) => name,
            // A resumed task's agent is known only from its session.
            None if resumes => return ToolKind::Mutating,
            None => DEFAULT_AGENT,
        };
        if self.read_only.iter().any(|r| r == agent) {
            ToolKind::ReadOnly
        } else {
            ToolKind::Mutating
        }
    }

    fn accepts(&self, arguments: &Value) -> Option<bool> {
        Some(parse_args::<TaskArgs>(NAME, arguments.clone()).is_ok())
    }

    fn run<'a>(
        &'a self,
        arguments: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: TaskArgs = parse_args(NAME, arguments)?;
            let scope = LoopScope::of(ctx)?;
            start(args, scope, ctx).await
        })
    }
}

async fn start(
    args: TaskArgs,
    scope: &LoopScope,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let parent = &scope.agent;
    let Some(setup) = parent.config.subagents.clone() else {
        return Err(ToolError::Failed(
            "subagents are not enabled in this run".into(),
        ));
    };
    let depth = parent.config.depth + 1;
    if depth > setup.limits.max_depth {
        return Err(ToolError::Failed(format!(
            "subagents may nest at most {} levels deep, and this one would be level {depth}; do \
             this part of the task yourself",
            setup.limits.max_depth
        )));
    }
    let Some(level) = setup.level(depth) else {
        return Err(ToolError::Failed(
            "no slot for a subagent at this depth".into(),
        ));
    };
    if args.prompt.trim().is_empty() {
        return Err(ToolError::invalid(
            NAME,
            "`prompt` is empty; say what the subagent must do",
        ));
    }
    let (mut session, profile) = match &args.resume {
        Some(id) => resumed(id, args.agent.as_deref(), scope, ctx, &setup.catalog).await?,
        None => {
            let profile = setup
                .catalog
                .require(args.agent.as_deref().unwrap_or(DEFAULT_AGENT))
                .map_err(ToolError::Failed)?
                .clone();
            let session = Session::create_child(
                parent.store.as_ref(),
                &ctx.session_id,
                &parent.workspace.root().display().to_string(),
                &scope.provider,
                profile.model.as_deref().unwrap_or(&parent.config.model),
                &args.description,
            )
            .await
            .map_err(|e| {
                ToolError::Failed(format!("could not store the subagent's session: {e}"))
            })?;
            (session, profile)
        }
    };
    session.state.agent = Some(profile.name.clone());
    let child = parent.child(&setup, &profile);
    let task_id = session.id().to_string();
    let request = RunRequest::prompt(args.prompt);
    let nest = Nest {
        events: scope.events.clone(),
        call_id: ctx.call_id.clone(),
        task_id: task_id.clone(),
        agent: profile.name.clone(),
    };

    if args.background == Some(true) {
        let cancel = scope.cancel.child_token();
        scope
            .tasks
            .started(&task_id, &profile.name, &args.description, cancel.clone());
        let tasks = scope.tasks.clone();
        let spent = scope.spent.clone();
        let approver = scope.approver.clone();
        tokio::spawn(async move {
            let summary = tokio::select! {
                biased;
                _ = cancel.cancelled() => cancelled_before_start(),
                permit = level.acquire_owned() => {
                    let _permit = permit;
                    let run = child.start_child(session, request, cancel, &approver);
                    nest.follow(run, Delivery::IfRoom).await
                }
            };
            spent.add(&summary);
            tasks.finished(&nest.task_id, summary);
        });
        return Ok(ToolOutput::text(
            format!(
                "task started in the background: {} ({})",
                args.description, profile.name
            ),
            format!(
                "Started task {task_id} ({} agent) in the background. Keep working: a \
                 <task-notification> arrives when it ends, and task_output reads its state.",
                profile.name
            ),
        ));
    }

    let permit = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled { output: String::new() }),
        permit = level.acquire_owned() => permit,
    };
    let run = child.start_child(session, request, ctx.cancel.child_token(), &scope.approver);
    let summary = nest.follow(run, Delivery::Every).await;
    drop(permit);
    scope.spent.add(&summary);
    Ok(output_of(&args.description, &profile, &task_id, &summary))
}

/// A stored child of this session, to continue.
async fn resumed(
    id: &str,
    agent: Option<&str>,
    scope: &LoopScope,
    ctx: &ToolContext,
    catalog: &AgentCatalog,
) -> Result<(Session, AgentProfile), ToolError> {
    if scope.tasks.is_running(id) {
        return Err(ToolError::Failed(format!(
            "task {id} is still running in the background; wait for its notification or read \
             it with task_output"
        )));
    }
    let store = scope.agent.store.as_ref();
    let not_ours = || {
        ToolError::Failed(format!(
            "there is no task {id} started by this session; use an id a `task` call returned"
        ))
    };
    let meta = store
        .get_session(id)
        .await
        .map_err(|e| ToolError::Failed(format!("could not read task {id}: {e}")))?
        .ok_or_else(not_ours)?;
    if meta.parent_id.as_deref() != Some(ctx.session_id.as_str()) {
        return Err(not_ours());
    }
    let session = Session::load(store, id)
        .await
        .map_err(|e| ToolError::Failed(format!("could not load task {id}: {e}")))?;
    let name = agent
        .map(str::to_string)
        .or_else(|| session.state.agent.clone())
        .unwrap_or_else(|| DEFAULT_AGENT.to_string());
    let profile = catalog.require(&name).map_err(ToolError::Failed)?.clone();
    Ok((session, profile))
}

/// How a child's events reach its caller's stream.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Delivery {
    /// Every event, waiting for room (a foreground child: the caller is
    /// reading).
    Every,
    /// Display only, dropped when the consumer is behind (a background
    /// child must never block on a stream nobody reads any more).
    IfRoom,
}

/// Where a child's events go.
struct Nest {
    events: EventSink,
    call_id: String,
    task_id: String,
    agent: String,
}

impl Nest {
    /// Forwards the run's events, nested, and returns its summary.
    async fn follow(&self, mut run: crate::Run, delivery: Delivery) -> RunSummary {
        let mut summary = None;
        while let Some(event) = run.events.next().await {
            if let Event::RunFinished(finished) = &event {
                summary = Some(finished.clone());
            }
            let nested = Event::Subagent {
                call_id: self.call_id.clone(),
                task_id: self.task_id.clone(),
                agent: self.agent.clone(),
                inner: Box::new(event),
            };
            match delivery {
                Delivery::Every => self.events.emit(nested).await,
                Delivery::IfRoom => self.events.emit_if_room(nested),
            }
        }
        // The run's task ends right after its last event.
        let _ = run.finish().await;
        summary.unwrap_or_else(|| failed_summary("the subagent ended without a result"))
    }
}

fn cancelled_before_start() -> RunSummary {
    RunSummary {
        reason: FinishReason::Cancelled,
        final_text: String::new(),
        num_turns: 0,
        usage: Usage::default(),
        cost_usd: 0.0,
        duration_ms: 0,
        error: Some(RunError {
            kind: RunErrorKind::Cancelled,
            message: "cancelled before it started".into(),
        }),
    }
}

fn failed_summary(message: &str) -> RunSummary {
    RunSummary {
        reason: FinishReason::Failed,
        error: Some(RunError {
            kind: RunErrorKind::Provider,
            message: message.into(),
        }),
        ..cancelled_before_start()
    }
}

/// The result the model sees of a foreground subagent.
fn output_of(
    description: &str,
    profile: &AgentProfile,
    task_id: &str,
    summary: &RunSummary,
) -> ToolOutput {
    let status = status_word(summary.reason);
    let footer = format!(
        "\n\n(task_id: {task_id}; {} agent, {status} after {} turns; pass the id as `resume` \
         to continue it)",
        profile.name, summary.num_turns
    );
    let (text, outcome) = match (&summary.error, summary.reason) {
        (_, FinishReason::Completed) => (
            format!("{}{footer}", summary.final_text.trim()),
            Outcome::Success,
        ),
        (error, _) => {
            let why = error.as_ref().map_or("", |e| e.message.as_str());
            let partial = summary.final_text.trim();
            let partial = if partial.is_empty() {
                String::new()
            } else {
                format!("\nIts last answer:\n{partial}")
            };
            (
                format!("The subagent {status}: {why}{partial}{footer}"),
                Outcome::Error,
            )
        }
    };
    ToolOutput {
        content: vec![gyre_protocol::ToolResultContent::Text { text }],
        title: format!("task {description} ({}): {status}", profile.name),
        outcome,
    }
}
