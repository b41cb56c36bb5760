//! Subagents: child loops a run starts through the `task` tool (seed 003's
//! foreground and background subagents, task notifications and resuming
//! an agent; seed 000's `dispatch_agent`).
//!
//! A subagent is an [`Agent`] made from the calling agent's configuration
//! and an [`AgentProfile`]: its own system prompt (the same template with
//! its agent layer), its own tools (the profile's selection of the
//! session's), its own limits, and permissions that can only be narrower
//! than its parent's. It runs in a session of its own, stored with its
//! parent's id, so it can be inspected, resumed and replayed.
//!
//! Invariants:
//! - Nesting is bounded: a run at depth `max_depth` is not offered `task`
//!   (a call to it is refused with a message saying why).
//! - At most `max_concurrent` subagents run at once on each nesting level.
//!   Levels have separate bounds, so a parent holding a slot never waits
//!   for a slot its own children need.
//! - A child's cancellation token is a child of its caller's: cancelling a
//!   run cancels every subagent below it, foreground and background.
//! - Permission requests of a child are answered through the top-level
//!   run's handle: approvers of one tree share their pending answers.

pub mod background;
mod output_tool;
mod task_tool;

use std::sync::{Arc, Mutex};

use gyre_protocol::{RunSummary, Usage};

use gyre_tools::Registry;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, AgentConfig};
use crate::agents::{AgentCatalog, AgentProfile, Completion};
use crate::approval::Approver;
use crate::completion::AttemptCompletionTool;
use crate::events::EventSink;
use crate::prompt::PromptTemplate;
use crate::skills::{SKILL_TOOL, SkillSet, SkillTool};
use background::BackgroundTasks;

pub use output_tool::TaskOutputTool;
pub use task_tool::TaskTool;

/// Bounds on subagents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubagentLimits {
    /// How deep subagents may nest (1: only the main agent starts them).
    pub max_depth: u32,
    /// Subagents running at once, per nesting level.
    pub max_concurrent: usize,
}

impl Default for SubagentLimits {
    fn default() -> Self {
        Self {
            max_depth: 2,
            max_concurrent: 4,
        }
    }
}

/// How the agents of one session are made: shared by the whole tree.
#[derive(Debug)]
pub struct SubagentSetup {
    pub catalog: Arc<AgentCatalog>,
    pub prompt: PromptTemplate,
    /// Every tool of the session, before an agent's selection.
    pub base_tools: Registry,
    pub limits: SubagentLimits,
    /// The session's skills, before an agent's selection.
    pub skills: SkillSet,
    /// One bound per nesting level (index: depth - 1).
    levels: Vec<Arc<Semaphore>>,
}

impl SubagentSetup {
    pub fn new(
        catalog: Arc<AgentCatalog>,
        prompt: PromptTemplate,
        base_tools: Registry,
        limits: SubagentLimits,
    ) -> Arc<Self> {
        Self::with_skills(catalog, prompt, base_tools, limits, SkillSet::default())
    }

    /// [`SubagentSetup::new`] with the session's skills: an agent that
    /// sees any is offered the `skill` tool.
    pub fn with_skills(
        catalog: Arc<AgentCatalog>,
        prompt: PromptTemplate,
        base_tools: Registry,
        limits: SubagentLimits,
        skills: SkillSet,
    ) -> Arc<Self> {
        let levels = (0..limits.max_depth)
            .map(|_| Arc::new(Semaphore::new(limits.max_concurrent.max(1))))
            .collect();
        Arc::new(Self {
            catalog,
            prompt,
            base_tools,
            limits,
            skills,
            levels,
        })
    }

    /// The bound of nesting level `depth` (1-based).
    pub(crate) fn level(&self, depth: u32) -> Option<Arc<Semaphore>> {
        let index = usize::try_from(depth.checked_sub(1)?).ok()?;
        self.levels.get(index).cloned()
    }

    /// The configuration and tools of `profile` at `depth`, made from
    /// `base` (the caller's configuration); warnings of the prompt's
    /// assembly (rule files cut) come back too.
    pub(crate) fn configure(
        self: &Arc<Self>,
        base: &AgentConfig,
        profile: &AgentProfile,
        depth: u32,
    ) -> (AgentConfig, Registry, Vec<String>) {
        let mut config = base.clone();
        let prompt = self.prompt.assemble(&profile.prompt);
        config.system_prompt = prompt.text;
        if let Some(model) = &profile.model
            && *model != base.model
        {
            config.model = model.clone();
            let catalogued = gyre_llm::catalog::lookup(model);
            config.pricing = catalogued.and_then(|info| info.pricing);
            if let Some(info) = catalogued {
                config.context.window = Some(info.context_window);
            }
            config.images = if gyre_llm::catalog::takes_images(model) {
                gyre_tools::ImageSupport::Accepted
            } else {
                gyre_tools::ImageSupport::NotAccepted
            };
        }
        // A profile's limit can only lower the caller's.
        config.max_turns = match (profile.max_turns, base.max_turns) {
            (Some(own), Some(caller)) => Some(own.min(caller)),
            (own, caller) => own.or(caller),
        };
        config.permissions = profile.narrowing.apply(&base.permissions);
        config.completion = profile.completion;
        config.sampling = crate::agent::sampling_of(profile);
        config.agent_name = profile.name.clone();
        config.depth = depth;
        config.subagents = Some(self.clone());
        // A second model per turn is the main agent's choice alone.
        if depth > 0 {
            config.dual_model = None;
            config.output_schema = None;
        }
        config.sampling.effort = profile.effort.or(base.effort);
        config.sampling.output_schema = config.output_schema.as_ref().map(|s| s.schema().clone());

        let deny = &config.permissions.deny;
        let offered = |name: &str| {
            profile.tools.includes(name) && !deny.iter().any(|rule| rule.covers_whole_tool(name))
        };
        // The provider's search is a tool too: a selection or a deny rule
        // without it takes it away.
        let search = base.web_search.filter(|_| offered(WEB_SEARCH_TOOL));
        let mut tools = self.base_tools.clone();
        tools.retain(offered);
        // No `task` where it could only be refused (past the nesting bound);
        // a call to it anyway is refused with the reason (`unknown_tool`).
        if offered("task") && depth < self.limits.max_depth {
            tools.register(Arc::new(TaskTool::new(&self.catalog)));
            tools.register(Arc::new(TaskOutputTool::new()));
        }
        let skills = self.skills.narrowed(profile.skills.as_deref());
        if !skills.is_empty() && offered(SKILL_TOOL) {
            tools.register(Arc::new(SkillTool::new(skills)));
        }
        if config.completion == Completion::Required {
            tools.register(Arc::new(AttemptCompletionTool::new()));
        }
        config.sampling.web_search = search;
        (config, tools, prompt.warnings)
    }
}

/// The name the provider's server-side web search goes by.
pub const WEB_SEARCH_TOOL: &str = "web_search";

/// Why a call to `name` finds no tool, when subagents explain it: `task`
/// past the nesting bound.
pub(crate) fn unknown_tool_reason(name: &str, config: &AgentConfig) -> Option<String> {
    let setup = config.subagents.as_ref()?;
    (name == "task" && config.depth >= setup.limits.max_depth).then(|| {
        format!(
            "`task` is not available here: subagents may nest at most {} levels deep, and this \
             agent is at level {}; do this part of the task yourself",
            setup.limits.max_depth, config.depth
        )
    })
}

/// What a run's subagents spent, added to the run's totals at its next
/// turn boundary: budgets (`--max-budget-usd`, `--max-tokens`) and the
/// run's reported usage and cost include its subagents.
#[derive(Debug, Default)]
pub(crate) struct Spent {
    totals: Mutex<(Usage, f64)>,
}

impl Spent {
    pub(crate) fn add(&self, summary: &RunSummary) {
        let mut totals = self.totals.lock().unwrap_or_else(|e| e.into_inner());
        totals.0.add(&summary.usage);
        totals.1 += summary.cost_usd;
    }

    /// What was spent since the last call.
    pub(crate) fn take(&self) -> (Usage, f64) {
        std::mem::take(&mut *self.totals.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// What `task` and `task_output` need of the run that calls them (handed
/// to them through `ToolContext::loop_scope`).
pub(crate) struct LoopScope {
    pub agent: Arc<Agent>,
    pub events: EventSink,
    pub approver: Approver,
    /// The run's token: background subagents are cancelled with the run.
    pub cancel: CancellationToken,
    /// The calling session's background tasks.
    pub tasks: Arc<BackgroundTasks>,
    /// The calling session's provider, for its children's sessions.
    pub provider: String,
    /// What the run's subagents spent.
    pub spent: Arc<Spent>,
}

impl LoopScope {
    /// The scope of a call, or the error a tool outside a run returns.
    pub(crate) fn of(ctx: &gyre_tools::ToolContext) -> Result<&LoopScope, gyre_tools::ToolError> {
        ctx.loop_scope
            .as_ref()
            .and_then(|scope| scope.downcast_ref::<LoopScope>())
            .ok_or_else(|| {
                gyre_tools::ToolError::Failed(
                    "this tool runs only inside a gyre run, which starts subagents".into(),
                )
            })
    }
}
