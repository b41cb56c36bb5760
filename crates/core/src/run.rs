//! The loop of one run, as named steps over the session's explicit state.
//!
//! ```text
//! record prompt ─▶ ┌─ turn: build request (borrowing history) ─▶ stream answer
//!                  │        each completed part: store it, then act on it
//!                  │        (a tool call is validated, checked and started)
//!                  │   collect results in call order, store each
//!                  │   checkpoint: state saved, store synced (turn boundary)
//!                  └─ decide: continue (tools ran) or end (reason)
//! ```
//!
//! Invariants:
//! - Append before act: a part reaches the store before the loop acts on it
//!   (a tool call is stored before it starts; a result before the next request).
//! - Every tool call of a stored assistant message gets exactly one stored
//!   result, also when the run is cancelled or the stream breaks: the history
//!   is always valid to send.
//! - The run ends with exactly one `RunFinished` event, whatever happens.
//! - What carries over from turn to turn lives in `QueryState` (saved at every
//!   turn boundary) and the history; a turn's own outcome (stop reason, error,
//!   cancellation) decides only the transition out of that turn.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use gyre_llm::{ErrorKind, LlmError, ModelEvent, ModelRequest, ToolChoice};
use gyre_protocol::{
    Event, FinishReason, Message, Part, Role, RunError, RunErrorKind, RunSummary, StopReason,
    ToolCall, Usage,
};
use gyre_store::StoreError;
use gyre_tools::{ToolContext, ToolKind};
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::approval::Approver;
use crate::events::EventSink;
use crate::prompt::WRAP_UP_NOTICE;
use crate::scheduler::{Runnable, Scheduler};
use crate::session::{Session, new_id};
use crate::state::Transition;

/// How a run ended.
struct End {
    reason: FinishReason,
    error: Option<RunError>,
}

impl End {
    fn completed() -> Self {
        Self {
            reason: FinishReason::Completed,
            error: None,
        }
    }

    fn with_error(reason: FinishReason, kind: RunErrorKind, message: impl Into<String>) -> Self {
        Self {
            reason,
            error: Some(RunError {
                kind,
                message: message.into(),
            }),
        }
    }

    fn store(err: StoreError) -> Self {
        Self::with_error(
            FinishReason::Failed,
            RunErrorKind::Store,
            format!("the session store failed: {err}"),
        )
    }

    fn cancelled() -> Self {
        Self::with_error(
            FinishReason::Cancelled,
            RunErrorKind::Cancelled,
            "cancelled by the user",
        )
    }

    fn provider(err: &LlmError) -> Self {
        let kind = match err.kind {
            ErrorKind::Auth => RunErrorKind::Auth,
            ErrorKind::ContextOverflow => RunErrorKind::ContextOverflow,
            _ => RunErrorKind::Provider,
        };
        Self::with_error(FinishReason::Failed, kind, err.message.clone())
    }
}

/// What the loop does after a turn.
enum Next {
    Continue,
    End(End),
}

/// Runs the loop to its end and reports it; gives the session back.
pub(crate) async fn drive(
    agent: Arc<Agent>,
    mut session: Session,
    prompt: String,
    events: EventSink,
    approver: Approver,
    cancel: CancellationToken,
) -> Session {
    let started = Instant::now();
    let mut run = RunLoop {
        agent: &agent,
        session: &mut session,
        events: &events,
        approver: &approver,
        cancel: &cancel,
        usage: Usage::default(),
        final_text: String::new(),
    };
    let end = run.run(prompt).await;
    let usage = run.usage;
    let final_text = std::mem::take(&mut run.final_text);
    session.state.transition = Transition::Finished(end.reason);
    // The run is over either way; a store that fails now was reported already.
    if let Ok(state) = serde_json::to_value(&session.state) {
        let _ = agent.store.save_state(session.id(), &state).await;
    }
    let _ = agent.store.sync().await;
    if let Some(error) = &end.error {
        tracing::info!(reason = ?end.reason, kind = ?error.kind, "run ended: {}", error.message);
    }
    events
        .emit(Event::RunFinished(RunSummary {
            reason: end.reason,
            final_text,
            num_turns: session.state.turn_count,
            usage,
            cost_usd: 0.0,
            duration_ms: started.elapsed().as_millis() as u64,
            error: end.error,
        }))
        .await;
    session
}

struct RunLoop<'a> {
    agent: &'a Arc<Agent>,
    session: &'a mut Session,
    events: &'a EventSink,
    approver: &'a Approver,
    cancel: &'a CancellationToken,
    usage: Usage,
    final_text: String,
}

/// A message being recorded part by part: the first part creates it in the
/// store, later parts are appended to it.
struct MessageInProgress {
    message: Message,
}

impl MessageInProgress {
    fn new(role: Role) -> Self {
        Self {
            message: Message::new(new_id(), role, Vec::new()),
        }
    }

    fn finish(self) -> Option<Arc<Message>> {
        (!self.message.parts.is_empty()).then(|| Arc::new(self.message))
    }
}

impl RunLoop<'_> {
    async fn run(&mut self, prompt: String) -> End {
        self.events
            .emit(Event::RunStarted {
                session_id: self.session.id().to_string(),
                model: self.agent.config.model.clone(),
                cwd: self.agent.workspace.root().display().to_string(),
                tools: self.agent.tool_names(),
            })
            .await;
        self.session.state.start_run();

        let mut prompt_message = MessageInProgress::new(Role::User);
        if let Err(err) = self.record(&mut prompt_message, Part::text(prompt)).await {
            return End::store(err);
        }
        if self.is_last_allowed_turn(1)
            && let Err(err) = self
                .record(&mut prompt_message, Part::text(WRAP_UP_NOTICE))
                .await
        {
            return End::store(err);
        }
        self.push_message(prompt_message).await;

        loop {
            if self.cancel.is_cancelled() {
                return End::cancelled();
            }
            let turn = self.session.state.turn_count + 1;
            self.session.state.turn_count = turn;
            let next = match self.turn(turn).await {
                Ok(next) => next,
                Err(err) => return End::store(err),
            };
            if let Err(err) = self.checkpoint().await {
                return End::store(err);
            }
            match next {
                Next::Continue => {}
                Next::End(end) => return end,
            }
        }
    }

    fn is_last_allowed_turn(&self, turn: u32) -> bool {
        self.agent.config.max_turns.is_some_and(|max| turn >= max)
    }

    /// One model request and the tool calls it makes.
    async fn turn(&mut self, turn: u32) -> Result<Next, StoreError> {
        let wrap_up = self.is_last_allowed_turn(turn);
        self.events.emit(Event::TurnStarted { turn }).await;
        let config = &self.agent.config;
        let mut stream = self.agent.client.stream(&ModelRequest {
            model: &config.model,
            system: &config.system_prompt,
            messages: &self.session.history,
            tools: &self.agent.tool_specs,
            tool_choice: if wrap_up {
                ToolChoice::None
            } else {
                ToolChoice::Auto
            },
            max_output_tokens: config.max_output_tokens,
            cache_key: Some(self.session.id()),
        });

        let mut scheduler = Scheduler::new(
            config.read_only_concurrency,
            self.approver.clone(),
            self.cancel.clone(),
        );
        let mut answer = MessageInProgress::new(Role::Assistant);
        let mut usage = Usage::default();
        let mut stop: Option<StopReason> = None;
        let mut failure: Option<LlmError> = None;
        let mut cancelled = false;

        loop {
            let item = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {
                    cancelled = true;
                    break;
                }
                item = stream.next() => item,
            };
            let event = match item {
                None => break,
                Some(Err(err)) => {
                    failure = Some(err);
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
                    self.events
                        .emit(Event::ToolCallStarted { call_id: id, name })
                        .await
                }
                ModelEvent::PartCompleted(part) => {
                    let call = match &part {
                        Part::ToolCall(call) => Some(call.clone()),
                        _ => None,
                    };
                    self.record(&mut answer, part).await?;
                    if let Some(call) = call {
                        self.events
                            .emit(Event::ToolCallReady { call: call.clone() })
                            .await;
                        self.schedule(&mut scheduler, call, wrap_up);
                    }
                }
                ModelEvent::Usage(latest) => usage = latest,
                ModelEvent::Finished(reason) => stop = Some(reason),
            }
        }
        // Closing the stream aborts the request if it is still running.
        drop(stream);
        if failure.is_none() && !cancelled && stop.is_none() {
            failure = Some(LlmError {
                kind: ErrorKind::Stream,
                status: None,
                message: "the model's answer ended before it was complete".into(),
            });
        }

        let answer_text = answer.message.text();
        let called_tools = !scheduler.is_empty();
        self.push_message(answer).await;
        self.usage.add(&usage);
        self.session.state.usage.add(&usage);
        self.events
            .emit(Event::TurnCompleted {
                turn,
                usage,
                stop_reason: stop.unwrap_or(StopReason::Error),
                cost_usd: None,
            })
            .await;
        if !answer_text.trim().is_empty() {
            self.final_text = answer_text;
        }

        let continues = called_tools && !wrap_up && failure.is_none() && !cancelled;
        if called_tools {
            self.collect_results(
                &mut scheduler,
                continues && self.is_last_allowed_turn(turn + 1),
            )
            .await?;
        }

        if cancelled || self.cancel.is_cancelled() {
            return Ok(Next::End(End::cancelled()));
        }
        if let Some(err) = failure {
            return Ok(Next::End(End::provider(&err)));
        }
        if wrap_up {
            let max = self.agent.config.max_turns.unwrap_or(turn);
            return Ok(Next::End(End::with_error(
                FinishReason::MaxTurns,
                RunErrorKind::Limit,
                format!("reached the limit of {max} turns (--max-turns)"),
            )));
        }
        if continues {
            self.session.state.transition = if self.is_last_allowed_turn(turn + 1) {
                Transition::WrapUp
            } else {
                Transition::ToolRound
            };
            return Ok(Next::Continue);
        }
        Ok(Next::End(match stop {
            Some(StopReason::ContextOverflow) => End::with_error(
                FinishReason::Failed,
                RunErrorKind::ContextOverflow,
                "the conversation no longer fits the model's context window",
            ),
            Some(StopReason::Error) => End::with_error(
                FinishReason::Failed,
                RunErrorKind::Provider,
                "the provider reported an error in its answer",
            ),
            _ => End::completed(),
        }))
    }

    /// Validates a completed tool call, checks permission and starts it; or
    /// records why it will not run.
    fn schedule(&self, scheduler: &mut Scheduler, call: ToolCall, wrap_up: bool) {
        if wrap_up {
            let message = "tools are disabled in this last allowed turn; answer with text";
            return scheduler.refuse(call, message.into());
        }
        let Some(tool) = self.agent.tools.get(&call.name) else {
            let message = format!(
                "unknown tool `{}`; the available tools are: {}",
                call.name,
                self.agent.tool_names().join(", ")
            );
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
        let kind: ToolKind = tool.kind(&arguments);
        let decision = self
            .agent
            .config
            .permissions
            .check(&call.name, kind, &arguments);
        let progress_events = self.events.clone();
        let progress_call = call.id.clone();
        let ctx = ToolContext {
            workspace: self.agent.workspace.clone(),
            session_id: self.session.id().to_string(),
            call_id: call.id.clone(),
            cancel: self.cancel.child_token(),
            progress: Some(Arc::new(move |chunk: &str| {
                progress_events.emit_if_room(Event::ToolProgress {
                    call_id: progress_call.clone(),
                    output: chunk.to_string(),
                })
            })),
            session: self.session.tools.clone(),
            images: self.agent.config.images,
            output: self.agent.config.tool_output.clone(),
        };
        scheduler.submit(Runnable {
            call,
            tool,
            arguments,
            kind,
            decision,
            ctx,
        });
    }

    /// Records every result in call order, then the results message.
    async fn collect_results(
        &mut self,
        scheduler: &mut Scheduler,
        wrap_up_next: bool,
    ) -> Result<(), StoreError> {
        let mut results = MessageInProgress::new(Role::User);
        while let Some(finished) = scheduler.next_in_order().await {
            self.events
                .emit(Event::ToolResult {
                    title: finished.title.clone(),
                    result: finished.result.clone(),
                })
                .await;
            self.record(&mut results, Part::ToolResult(finished.result.clone()))
                .await?;
        }
        if wrap_up_next {
            self.record(&mut results, Part::text(WRAP_UP_NOTICE))
                .await?;
        }
        self.push_message(results).await;
        Ok(())
    }

    /// Stores a part (creating its message with the first one), then keeps it.
    async fn record(
        &mut self,
        message: &mut MessageInProgress,
        part: Part,
    ) -> Result<(), StoreError> {
        let store = &self.agent.store;
        let session_id = self.session.id();
        if message.message.parts.is_empty() {
            let first = Message::new(message.message.id.clone(), message.message.role, vec![part]);
            store.append_message(session_id, &first).await?;
            message.message = first;
        } else {
            store
                .append_part(session_id, &message.message.id, &part)
                .await?;
            message.message.parts.push(part);
        }
        Ok(())
    }

    /// Adds a recorded message to the history and tells the frontends.
    async fn push_message(&mut self, message: MessageInProgress) {
        if let Some(message) = message.finish() {
            self.session.history.push(message.clone());
            self.events.emit(Event::MessageAppended { message }).await;
        }
    }

    /// The turn boundary: state saved, everything synced to disk.
    async fn checkpoint(&mut self) -> Result<(), StoreError> {
        let state = serde_json::to_value(&self.session.state).unwrap_or_default();
        self.agent
            .store
            .save_state(self.session.id(), &state)
            .await?;
        self.agent.store.sync().await
    }
}
