//! One attempt at the model's answer: the request is sent, the stream is
//! read, each completed part is stored and acted on (a tool call is
//! validated, checked and started at once).
//!
//! Invariants:
//! - What is sent is the history's repaired form, made current (and what
//!   it made up stored) right before the request (`run::repair`).
//! - A part is stored before it is acted on; parts still streaming when the
//!   attempt ends (failure, cancellation) are never stored.
//! - Reading stops at the first of: the stream's end, an error, the run's
//!   cancellation. Dropping the stream aborts the HTTP request.
//! - Whether to retry is not decided here (see `run::turn`): an attempt only
//!   reports what happened, including whether any tool was started, because
//!   a started tool must never be run twice.

use std::sync::Arc;

use futures::StreamExt;
use gyre_llm::{ErrorKind, LlmError, ModelEvent, ModelRequest, ToolChoice};
use gyre_protocol::{Event, Part, Role, StopReason, ToolCall, Usage};
use gyre_store::StoreError;
use gyre_tools::{ToolContext, ToolKind};

use super::checkpoints::AnswerCheckpoint;
use super::decide::GuardSaid;
use super::{MessageInProgress, RunLoop};
use crate::scheduler::{Runnable, Scheduler};

/// What one attempt produced.
pub(super) struct Attempt {
    pub answer: MessageInProgress,
    pub usage: Usage,
    pub stop: Option<StopReason>,
    pub failure: Option<LlmError>,
    pub cancelled: bool,
    /// The size of what was sent, to calibrate token estimates.
    pub request_bytes: u64,
    /// What the loop guard said of the calls.
    pub guard: GuardSaid,
}

/// Whether this is the last allowed turn (tools disabled).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ToolUse {
    Offered,
    WrapUp,
}

impl RunLoop<'_> {
    /// Sends the request and reads the answer, scheduling tool calls on
    /// `scheduler` as they complete.
    pub(super) async fn attempt(
        &mut self,
        tool_use: ToolUse,
        scheduler: &mut Scheduler,
    ) -> Result<Attempt, StoreError> {
        self.validate_history().await?;
        let config = &self.agent.config;
        let messages = self.session.validated.sent();
        let (with_drafts, draft_usage) = match tool_use {
            ToolUse::Offered => self.with_drafts(messages).await,
            ToolUse::WrapUp => (None, Usage::default()),
        };
        let messages = with_drafts.as_deref().unwrap_or(messages);
        let request_bytes = self.meter().request_bytes(messages);
        let last_request = messages.last().map(|m| (messages.len(), m.clone()));
        // Where the step just taken changed the prompt (this request reads
        // the entry there), then where the next one will.
        let next_point = self.cache_point(messages);
        let cache_points: Vec<usize> = self
            .session
            .cache_point
            .filter(|&p| Some(p) != next_point && p < messages.len())
            .into_iter()
            .chain(next_point)
            .collect();
        let mut stream = self.agent.client.stream(&ModelRequest {
            model: &config.model,
            system: &config.system_prompt,
            messages,
            tools: &self.tools.specs,
            tool_choice: match tool_use {
                ToolUse::Offered => ToolChoice::Auto,
                ToolUse::WrapUp => ToolChoice::None,
            },
            max_output_tokens: config.max_output_tokens,
            cache_key: Some(self.session.id()),
            cache_points: &cache_points,
            sampling: &config.sampling,
        });
        let mut attempt = Attempt {
            answer: MessageInProgress::new(Role::Assistant),
            usage: Usage::default(),
            stop: None,
            failure: None,
            cancelled: false,
            request_bytes,
            guard: GuardSaid::default(),
        };
        self.session.last_request = last_request;
        self.session.cache_point = next_point;
        let mut checkpoint = AnswerCheckpoint::default();
        loop {
            let item = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {
                    attempt.cancelled = true;
                    break;
                }
                item = stream.next() => item,
            };
            let event = match item {
                None => break,
                Some(Err(err)) => {
                    attempt.failure = Some(err);
                    break;
                }
                Some(Ok(event)) => event,
            };
            match event {
                ModelEvent::TextDelta(text) => self.events.emit(Event::TextDelta { text }).await,
                ModelEvent::ReasoningDelta(text) => {
                    self.events.emit(Event::ReasoningDelta { text }).await
                }
                ModelEvent::ToolCallStarted { id, name } => {
                    // The sandbox's one-time probe overlaps the call's
                    // streaming rather than delaying its start.
                    if name == "bash" {
                        self.agent.config.sandbox.prewarm(&self.agent.workspace);
                    }
                    // A call that may change files: snapshot them while the
                    // model still streams.
                    if let Some(checkpointer) = &self.agent.config.checkpoints
                        && self.may_change_files(&name)
                    {
                        checkpoint.start(checkpointer);
                    }
                    self.events
                        .emit(Event::ToolCallStarted { call_id: id, name })
                        .await
                }
                ModelEvent::PartCompleted(part) => {
                    let call = match &part {
                        Part::ToolCall(call) => Some(call.clone()),
                        _ => None,
                    };
                    self.record(&mut attempt.answer, part).await?;
                    if let Some(call) = call {
                        self.events
                            .emit(Event::ToolCallReady { call: call.clone() })
                            .await;
                        let message_id = attempt.answer.message.id.clone();
                        let at = Some((message_id.as_str(), &mut checkpoint));
                        self.schedule(scheduler, call, tool_use, at, &mut attempt.guard);
                    }
                }
                ModelEvent::Usage(latest) => attempt.usage = latest,
                ModelEvent::Finished(reason) => attempt.stop = Some(reason),
            }
        }
        // Closing the stream aborts the request if it is still running.
        drop(stream);
        attempt.usage.add(&draft_usage);
        if attempt.failure.is_none() && !attempt.cancelled && attempt.stop.is_none() {
            attempt.failure = Some(LlmError::new(
                ErrorKind::Stream,
                None,
                "the model's answer ended before it was complete",
            ));
        }
        Ok(attempt)
    }

    /// Validates a completed tool call, checks permission and starts it; or
    /// records why it will not run.
    /// Whether a call to `name` may change files (for some arguments).
    fn may_change_files(&self, name: &str) -> bool {
        self.tools.registry.get(name).is_some_and(|tool| {
            tool.kind(&serde_json::Value::Object(Default::default())) == ToolKind::Mutating
        })
    }

    /// `checkpoint_at`: the stored message holding the call and its
    /// checkpoint, when a mutating call should be checkpointed first.
    pub(super) fn schedule(
        &mut self,
        scheduler: &mut Scheduler,
        call: ToolCall,
        tool_use: ToolUse,
        checkpoint_at: Option<(&str, &mut AnswerCheckpoint)>,
        said: &mut GuardSaid,
    ) {
        if tool_use == ToolUse::WrapUp {
            let message = "tools are disabled in this last allowed turn; answer with text";
            return scheduler.refuse(call, message.into());
        }
        let Some(tool) = self.tools.registry.get(&call.name) else {
            let config = &self.agent.config;
            let whose = if config.agent_name == crate::agents::DEFAULT_AGENT && config.depth == 0 {
                "the available tools are".to_string()
            } else {
                format!("the `{}` agent's tools are", config.agent_name)
            };
            let message =
                crate::subagent::unknown_tool_reason(&call.name, config).unwrap_or_else(|| {
                    format!(
                        "unknown tool `{}`; {whose}: {}",
                        call.name,
                        self.tools.names().join(", ")
                    )
                });
            return scheduler.refuse(call, message);
        };
        let arguments = match call.arguments_json() {
            Some(value) if value.is_object() => value,
            Some(_) => {
                let message = format!(
                    "the arguments of `{}` must be a JSON object matching its schema",
                    call.name
                );
                return scheduler.refuse(call, message);
            }
            None => {
                let detail = serde_json::from_str::<serde_json::Value>(&call.arguments)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                let message = format!(
                    "the arguments of `{}` are not valid JSON ({detail}); send one JSON object matching its schema",
                    call.name
                );
                return scheduler.refuse(call, message);
            }
        };
        if let Err(error) = self.tools.registry.validate(&call.name, &arguments) {
            return scheduler.refuse(call, error.to_string());
        }
        let guarded = self.guard(&call, &arguments, said);
        let kind: ToolKind = tool.kind(&arguments);
        let decision =
            self.approver
                .check(&self.agent.config.permissions, &call.name, kind, &arguments);
        let decision = guarded.apply(decision);
        let progress_events = self.events.clone();
        let progress_call = call.id.clone();
        let redactor = self.agent.config.redactor.clone();
        let progress_redactor = redactor.clone();
        let ctx = ToolContext {
            workspace: self.agent.workspace.clone(),
            session_id: self.session.id().to_string(),
            call_id: call.id.clone(),
            cancel: self.cancel.child_token(),
            progress: Some(Arc::new(move |chunk: &str| {
                progress_events.emit_if_room(Event::ToolProgress {
                    call_id: progress_call.clone(),
                    output: progress_redactor.redact(chunk).into_owned(),
                })
            })),
            session: self.session.tools.clone(),
            images: self.agent.config.images,
            output: self.agent.config.tool_output.clone(),
            sandbox: self.agent.config.sandbox.clone(),
            loop_scope: Some(self.scope.clone()),
            processes: self.processes_of(&call.id),
            fs: self.agent.config.workspace_fs.clone(),
            diagnostics: self.agent.config.diagnostics.clone(),
        };
        let before = match (kind, checkpoint_at, &self.agent.config.checkpoints) {
            (ToolKind::Mutating, Some((message_id, checkpoint)), Some(checkpointer)) => checkpoint
                .before_first_change(
                    checkpointer,
                    self.store.clone(),
                    self.session.id().to_string(),
                    message_id.to_string(),
                    call.id.clone(),
                    self.events.clone(),
                ),
            _ => None,
        };
        scheduler.submit(Runnable {
            call,
            tool,
            arguments,
            kind,
            decision,
            ctx,
            redactor,
            before,
            hooks: self.agent.config.hooks.clone(),
            lease: self.flight.as_ref().map(|f| f.lease.clone()),
        });
    }
}
