//! The loop's own hook points (tool hooks run in the scheduler): the
//! prompt's (SessionStart, UserPromptSubmit), the end's (Stop,
//! SubagentStop, SessionEnd) and compaction's (PreCompact).
//!
//! Invariants: with no hook configured for an event nothing is spawned;
//! a Stop hook can make a run go on at most `max_stop_continuations` times
//! (its input says `stop_hook_active: true` once it has); SessionStart and
//! SessionEnd are the main agent's only (a subagent's run is not a session
//! a person started).

use gyre_protocol::{CompactTrigger, FinishReason, Part};
use gyre_store::StoreError;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{End, MessageInProgress, RunLoop};
use crate::agent::Agent;
use crate::hooks::HookEvent;

impl RunLoop<'_> {
    /// Runs SessionStart (main agent) and UserPromptSubmit before `prompt`
    /// is recorded: the context they add, or why the prompt is blocked.
    pub(super) async fn prompt_hooks(&self, prompt: &str) -> Result<Option<String>, String> {
        let Some(hooks) = &self.agent.config.hooks else {
            return Ok(None);
        };
        let session_id = self.session.id();
        let mut context = Vec::new();
        if self.agent.config.depth == 0 && hooks.has(HookEvent::SessionStart, None) {
            let source = if !self.session.state.has_run() && self.session.history.is_empty() {
                "startup"
            } else {
                "resume"
            };
            let said = hooks
                .notify(
                    HookEvent::SessionStart,
                    session_id,
                    json!({"source": source}),
                    self.cancel,
                )
                .await;
            context.extend(said.context);
        }
        if hooks.has(HookEvent::UserPromptSubmit, None) {
            let said = hooks
                .user_prompt_submit(session_id, prompt, self.cancel)
                .await;
            if let Some(reason) = said.block {
                return Err(reason);
            }
            context.extend(said.context);
        }
        Ok((!context.is_empty()).then(|| context.join("\n")))
    }

    /// When the run would end: a Stop (or SubagentStop) hook that blocks
    /// makes it go on, with its reason told to the model. `Some` when the
    /// run ends (the hook let it).
    pub(super) async fn stop_hook(
        &mut self,
        wrap_up_next: bool,
    ) -> Result<Option<End>, StoreError> {
        let Some(hooks) = self.agent.config.hooks.clone() else {
            return Ok(Some(End::completed()));
        };
        let event = stop_event(self.agent.config.depth);
        let forced = self.session.state.stop_hook_continuations;
        let said = hooks
            .stop(event, self.session.id(), forced > 0, self.cancel)
            .await;
        let Some(reason) = said.block else {
            return Ok(Some(End::completed()));
        };
        self.session.state.stop_hook_continuations += 1;
        let mut note = MessageInProgress::notice();
        let text = format!(
            "<system-reminder>A {} hook did not let the task end yet: {reason}</system-reminder>",
            event.as_str()
        );
        self.record(&mut note, Part::text(text)).await?;
        self.push_notice(note, wrap_up_next).await?;
        Ok(None)
    }

    /// Before a compaction (its hooks cannot stop it).
    pub(super) async fn pre_compact_hook(
        &self,
        trigger: CompactTrigger,
        instructions: Option<&str>,
    ) {
        let Some(hooks) = &self.agent.config.hooks else {
            return;
        };
        if hooks.has(HookEvent::PreCompact, None) {
            let fields = json!({"trigger": trigger.as_str(), "custom_instructions": instructions.unwrap_or("")});
            hooks
                .notify(
                    HookEvent::PreCompact,
                    self.session.id(),
                    fields,
                    self.cancel,
                )
                .await;
        }
    }
}

/// The hook event that may hold a run's end: Stop for the main agent,
/// SubagentStop for a subagent.
pub(super) fn stop_event(depth: u32) -> HookEvent {
    if depth == 0 {
        HookEvent::Stop
    } else {
        HookEvent::SubagentStop
    }
}

/// After the main agent's run: SessionEnd, even when the run was cancelled
/// (the hook has its own timeout).
pub(super) async fn session_end_hook(agent: &Agent, session_id: &str, reason: FinishReason) {
    let Some(hooks) = &agent.config.hooks else {
        return;
    };
    if agent.config.depth == 0 && hooks.has(HookEvent::SessionEnd, None) {
        let reason = serde_json::to_value(reason).unwrap_or_default();
        hooks
            .notify(
                HookEvent::SessionEnd,
                session_id,
                json!({"reason": reason}),
                &CancellationToken::new(),
            )
            .await;
    }
}
