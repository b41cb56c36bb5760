//! The agent: what a run needs (model client, store, tools, workspace,
//! configuration), and the public face of a run ([`Run`], [`RunHandle`]).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;

use gyre_llm::catalog::Pricing;
use gyre_llm::{ModelClient, Sampling};
use gyre_protocol::{Event, ToolSpec};
use gyre_store::SessionStore;
use gyre_tools::{
    ImageSupport, LateTools, OutputLimits, Registry, Sandbox, Tool, ToolKind, Workspace,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::agents::{AgentProfile, Completion, DEFAULT_AGENT, ToolSelection};
use crate::approval::{Approvals, Approver, PermissionAnswer};
use crate::checkpoint::Checkpointer;
use crate::context::ContextConfig;
use crate::events::EventSink;
use crate::guard::LoopGuardConfig;
use crate::hooks::Hooks;
use crate::permissions::{PermissionContext, Permissions};
use crate::redact::Redactor;
use crate::retry::RetryPolicy;
use crate::scheduler::SiblingAbort;
use crate::session::Session;
use crate::structured::OutputSchema;
use crate::subagent::SubagentSetup;

/// How a run behaves.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub model: String,
    /// The output limit sent with each request.
    pub max_output_tokens: u32,
    /// Model requests allowed per run; the last one offers no tools.
    pub max_turns: Option<u32>,
    pub permissions: Permissions,
    pub approvals: Approvals,
    /// The assembled system prompt.
    pub system_prompt: String,
    /// Read-only tool calls that may run at once.
    pub read_only_concurrency: usize,
    /// The output budget of one tool result, and where whole outputs go.
    pub tool_output: Arc<OutputLimits>,
    /// The sandbox `bash` commands run in (default: off; the cli sets it).
    pub sandbox: Arc<Sandbox>,
    /// Whether the model takes images in tool results.
    pub images: ImageSupport,
    /// Which failures in a concurrent batch cancel the batch's other calls.
    pub sibling_abort: SiblingAbort,
    /// How failed model requests are retried.
    pub retry: RetryPolicy,
    /// The model's prices, for cost per turn and per run.
    pub pricing: Option<Pricing>,
    /// The context window and what is done as it fills.
    pub context: ContextConfig,
    /// Budgets that end a run cleanly when crossed.
    pub limits: RunLimits,
    /// Where the workspace's files are snapshotted before each mutating
    /// call; `None`: no checkpoints (no rewinding of files).
    pub checkpoints: Option<Arc<Checkpointer>>,
    /// What is redacted from every tool result before it is stored and
    /// sent (default: the provider keys in the environment and the
    /// built-in key shapes; the cli adds `[redact] patterns`).
    pub redactor: Arc<Redactor>,
    /// The agent profile this configuration runs (`build` unless named).
    pub agent_name: String,
    /// Subagent nesting level: 0 for the agent a person started.
    pub depth: u32,
    /// Whether only `attempt_completion` ends a run (seed 000).
    pub completion: Completion,
    /// The agent's temperature, top_p and provider options.
    pub sampling: Sampling,
    /// How subagents are made (the `task` tool); `None`: no subagents.
    pub subagents: Option<Arc<SubagentSetup>>,
    /// A second model asked every turn, whose answer and the main model's
    /// are merged by a synthesis request (avante's `dual_boost`).
    pub dual_model: Option<String>,
    /// When repeated calls trip the loop guard.
    pub loop_guard: LoopGuardConfig,
    /// The user's hooks (`None`: none configured, and nothing is spawned).
    pub hooks: Option<Arc<Hooks>>,
    /// Continuations a Stop hook may force in one run.
    pub max_stop_continuations: u32,
    /// Tools that join during the session (MCP servers' tools, once their
    /// server is up), shared by the agent and its subagents; each agent
    /// offers those its profile selects, after its built-in tools, taking
    /// them at turn boundaries. `None`: no late tools.
    pub late_tools: Option<Arc<LateTools>>,
    /// Where the file tools read and write text (`None`: the disk; `gyre
    /// acp`: the editor's buffers).
    pub workspace_fs: Option<Arc<dyn gyre_tools::WorkspaceFs>>,
    /// The workspace's language servers, told of the files the tools read
    /// and change (`None`: none).
    pub diagnostics: Option<Arc<dyn gyre_tools::DiagnosticsHook>>,
    /// `--json-schema`: the final answer must be a JSON value valid
    /// against it (the main agent only; a subagent answers its caller).
    pub output_schema: Option<OutputSchema>,
    /// Reasoning effort of the session (`--effort`, config `effort`); an
    /// agent's own wins.
    pub effort: Option<gyre_llm::Effort>,
    /// The provider's server-side web search (`[web_search]`), for every
    /// agent of the session; `None`: not offered.
    pub web_search: Option<gyre_llm::WebSearch>,
}

/// The sampling settings of `profile`.
pub(crate) fn sampling_of(profile: &AgentProfile) -> Sampling {
    Sampling {
        temperature: profile.temperature,
        top_p: profile.top_p,
        provider_options: profile.provider_options.clone(),
        effort: profile.effort,
        output_schema: None,
        web_search: None,
    }
}

/// Budgets of one run (seed 003's `task_budget`): when one is crossed, the
/// current turn finishes and no new request starts.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RunLimits {
    /// US dollars, by the model's prices (`--max-budget-usd`).
    pub max_cost_usd: Option<f64>,
    /// Tokens in and out, cached input included (`--max-tokens`).
    pub max_tokens: Option<u64>,
}

/// What a run is asked to do.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunRequest {
    /// The user's prompt; `None`: only compact (the TUI's `/compact`).
    pub prompt: Option<String>,
    /// Compact the history first (`--compact-first`, `/compact`).
    pub compact: Option<ManualCompaction>,
    /// Images that go with the prompt (`gyre run -i`, stream-json image
    /// blocks), each a [`gyre_protocol::Part::Image`]; refused, ending the
    /// run, when the model takes no images.
    pub images: Vec<gyre_protocol::Part>,
}

impl RunRequest {
    pub fn prompt(prompt: impl Into<String>) -> Self {
        Self {
            prompt: Some(prompt.into()),
            compact: None,
            images: Vec::new(),
        }
    }
}

/// A compaction the user asked for, with what the summary should stress.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ManualCompaction {
    pub instructions: Option<String>,
}

impl AgentConfig {
    pub fn new(model: impl Into<String>, system_prompt: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            max_output_tokens: 8192,
            max_turns: None,
            permissions: Permissions::default(),
            approvals: Approvals::Headless,
            system_prompt: system_prompt.into(),
            read_only_concurrency: 5,
            tool_output: Arc::default(),
            sandbox: Arc::default(),
            images: ImageSupport::Accepted,
            sibling_abort: SiblingAbort::Bash,
            retry: RetryPolicy::default(),
            pricing: None,
            context: ContextConfig::default(),
            limits: RunLimits::default(),
            checkpoints: None,
            redactor: Arc::new(Redactor::default()),
            agent_name: DEFAULT_AGENT.to_string(),
            depth: 0,
            completion: Completion::Off,
            sampling: Sampling::default(),
            subagents: None,
            dual_model: None,
            loop_guard: LoopGuardConfig::default(),
            hooks: None,
            max_stop_continuations: 3,
            late_tools: None,
            workspace_fs: None,
            diagnostics: None,
            output_schema: None,
            effort: None,
            web_search: None,
        }
    }
}

/// Everything a run needs; shared by the runs of a process.
pub struct Agent {
    pub(crate) client: Arc<dyn ModelClient>,
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) tools: Registry,
    pub(crate) tool_specs: Vec<ToolSpec>,
    pub(crate) workspace: Arc<Workspace>,
    pub(crate) config: AgentConfig,
    /// Bytes of what every request carries: the system prompt and the tool
    /// schemas (for token estimates), late tools left out.
    pub(crate) fixed_request_bytes: u64,
    /// Which late tools this agent offers (its profile's selection).
    late_selection: ToolSelection,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("api", &self.client.api())
            .field("workspace", &self.workspace)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Agent {
    pub fn new(
        client: Arc<dyn ModelClient>,
        store: Arc<dyn SessionStore>,
        tools: Registry,
        workspace: Arc<Workspace>,
        config: AgentConfig,
    ) -> Arc<Self> {
        Self::selecting(client, store, tools, workspace, config, ToolSelection::All)
    }

    /// [`Agent::new`], offering the late tools `late_selection` selects.
    fn selecting(
        client: Arc<dyn ModelClient>,
        store: Arc<dyn SessionStore>,
        tools: Registry,
        workspace: Arc<Workspace>,
        mut config: AgentConfig,
        late_selection: ToolSelection,
    ) -> Arc<Self> {
        // Path rules need the workspace root; a configuration made without
        // one (tests, embedders) gets this agent's.
        if config
            .permissions
            .context
            .workspace_root
            .as_os_str()
            .is_empty()
        {
            config.permissions.context = PermissionContext::new(workspace.root());
        }
        let tool_specs = tools.specs();
        let schema_bytes = serde_json::to_string(&tool_specs).map_or(0, |json| json.len());
        let fixed_request_bytes = (config.system_prompt.len() + schema_bytes) as u64;
        Arc::new(Self {
            client,
            store,
            tools,
            tool_specs,
            workspace,
            config,
            fixed_request_bytes,
            late_selection,
        })
    }

    /// Whether this agent offers the late tool `tool`: its profile selects
    /// it (a read-only profile, the tools that only read) and no deny rule
    /// covers the whole tool.
    pub(crate) fn offers_late(&self, tool: &dyn Tool) -> bool {
        let name = tool.spec().name.as_str();
        let selected = match &self.late_selection {
            ToolSelection::ReadOnly => {
                let no_arguments = serde_json::Value::Object(Default::default());
                tool.kind(&no_arguments) == ToolKind::ReadOnly
            }
            selection => selection.includes(name),
        };
        selected
            && !self
                .config
                .permissions
                .deny
                .iter()
                .any(|rule| rule.covers_whole_tool(name))
    }

    /// The agent `profile` of `setup`, as a person starts it: `base` is the
    /// session's configuration (permissions, limits, model), which the
    /// profile narrows and completes; its tools are the profile's selection
    /// of `setup`'s, plus `task` and `attempt_completion` as it asks. Also
    /// returns the warnings of the prompt's assembly (rule files cut).
    pub fn from_profile(
        client: Arc<dyn ModelClient>,
        store: Arc<dyn SessionStore>,
        workspace: Arc<Workspace>,
        base: &AgentConfig,
        setup: &Arc<SubagentSetup>,
        profile: &AgentProfile,
    ) -> (Arc<Self>, Vec<String>) {
        let (config, tools, warnings) = setup.configure(base, profile, 0);
        let selection = profile.tools.clone();
        (
            Agent::selecting(client, store, tools, workspace, config, selection),
            warnings,
        )
    }

    /// A subagent of this agent, running `profile` one level deeper.
    pub(crate) fn child(&self, setup: &Arc<SubagentSetup>, profile: &AgentProfile) -> Arc<Agent> {
        let (config, tools, _) = setup.configure(&self.config, profile, self.config.depth + 1);
        Agent::selecting(
            self.client.clone(),
            self.store.clone(),
            tools,
            self.workspace.clone(),
            config,
            profile.tools.clone(),
        )
    }

    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.store
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The workspace's root directory.
    pub fn workspace_root(&self) -> &std::path::Path {
        self.workspace.root()
    }

    /// The names of the tools offered to the model now, in order: the
    /// built-in ones, then the late tools it offers, in join order.
    pub fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.tool_specs.iter().map(|s| s.name.clone()).collect();
        if let Some(late) = &self.config.late_tools {
            let snapshot = late.snapshot();
            for (_, tool) in snapshot.tools() {
                let name = &tool.spec().name;
                if self.offers_late(tool.as_ref()) && !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }
        names
    }

    /// Starts a run of `prompt` in `session`. The run goes on in its own task;
    /// its events arrive on [`Run::events`], and [`Run::finish`] gives the
    /// session back when it is over.
    pub fn run(self: &Arc<Self>, session: Session, prompt: String) -> Run {
        self.start(session, RunRequest::prompt(prompt))
    }

    /// Starts a run as [`Agent::run`] does, with compaction first or only.
    pub fn start(self: &Arc<Self>, session: Session, request: RunRequest) -> Run {
        let (events, rx) = EventSink::channel();
        let approver = Approver::new(self.config.approvals.clone(), events.clone()).remembering(
            session.always.clone(),
            self.config.permissions.context.clone(),
        );
        self.launch(
            session,
            request,
            CancellationToken::new(),
            events,
            rx,
            approver,
        )
    }

    /// Starts a subagent's run: cancelled with `cancel` (a child of its
    /// caller's token), its permission requests answered through the
    /// caller's approver.
    pub(crate) fn start_child(
        self: &Arc<Self>,
        session: Session,
        request: RunRequest,
        cancel: CancellationToken,
        caller: &Approver,
    ) -> Run {
        let (events, rx) = EventSink::channel();
        let approver = caller.sharing(events.clone());
        self.launch(session, request, cancel, events, rx, approver)
    }

    fn launch(
        self: &Arc<Self>,
        session: Session,
        request: RunRequest,
        cancel: CancellationToken,
        events: EventSink,
        rx: mpsc::Receiver<Event>,
        approver: Approver,
    ) -> Run {
        let handle = RunHandle {
            cancel: cancel.clone(),
            approver: approver.clone(),
        };
        let task = tokio::spawn(crate::run::drive(
            self.clone(),
            session,
            request,
            events,
            approver,
            cancel,
        ));
        Run {
            events: RunEvents {
                rx,
                finished: false,
            },
            handle,
            task,
        }
    }
}

/// Controls a running run from outside.
#[derive(Clone, Debug)]
pub struct RunHandle {
    cancel: CancellationToken,
    approver: Approver,
}

impl RunHandle {
    /// Stops the run at once: the model stream is closed, running tools are
    /// killed, and what happened so far is recorded.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Answers an [`Event::PermissionRequested`]; false when it was not waiting.
    pub fn answer_permission(&self, request_id: &str, answer: PermissionAnswer) -> bool {
        self.approver.answer(request_id, answer)
    }
}

/// A run's events, in order. The stream ends right after
/// [`Event::RunFinished`], whoever still holds a [`RunHandle`].
#[derive(Debug)]
pub struct RunEvents {
    rx: mpsc::Receiver<Event>,
    finished: bool,
}

impl Stream for RunEvents {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        if self.finished {
            return Poll::Ready(None);
        }
        let polled = self.rx.poll_recv(cx);
        if let Poll::Ready(Some(Event::RunFinished(_))) = &polled {
            self.finished = true;
        }
        polled
    }
}

/// A run in progress.
pub struct Run {
    pub events: RunEvents,
    pub handle: RunHandle,
    task: JoinHandle<Session>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}

impl Run {
    /// Waits for the run to end and gives the session back.
    pub async fn finish(self) -> Result<Session, tokio::task::JoinError> {
        self.task.await
    }
}
