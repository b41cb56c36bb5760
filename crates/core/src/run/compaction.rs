//! Compaction, the effects: the summarising request (with retries, and
//! shortened from the middle when it does not fit), the summary stored as
//! the compact boundary, the history replaced, the frontends told.
//!
//! Invariants:
//! - The summary is stored (and synced) before the history is replaced: a
//!   crash leaves the old context or the new one, never half of either.
//! - A failed compaction changes nothing but the run's usage: the history,
//!   the store and the state are as they were, and the session stays usable.
//! - The summarising request streams no deltas to the frontends; its usage
//!   and cost count towards the run's.
//! - Cached form first: when the session's own model summarises and the
//!   conversation fits, the request is the conversation as last sent (same
//!   system, tools and messages) followed by the instruction, so the
//!   provider serves it from its prompt cache. Otherwise (another summary
//!   model, an overflow, a conversation too large, or no summary in the
//!   answer) the transcript form: gyre's summariser prompt, no tools, the
//!   history as one plain-text transcript, shortened to fit.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use gyre_llm::{ErrorKind, LlmError, ModelEvent, ModelRequest, ModelStream, ToolChoice};
use gyre_protocol::{CompactBoundary, CompactTrigger, Event, Message, Part, Role, ToolSpec, Usage};
use gyre_store::StoreError;

use super::RunLoop;
use crate::context::compact::{
    AfterSummary, cached_request_text, request_text, split_point, summary_message,
};
use crate::context::transcript::{Shortened, Transcript};
use crate::context::{CompactError, message_bytes};
use crate::id::new_id;
use crate::prompt::COMPACTION_SYSTEM_PROMPT;
use crate::retry::{RetryDecision, reason_of};

/// The longest summary asked for.
const SUMMARY_MAX_TOKENS: u32 = 8_192;
/// Room planned for a summary when choosing how much to keep verbatim.
const SUMMARY_ALLOWANCE_TOKENS: u64 = 1_000;
/// Times the transcript is shortened further after the provider still said
/// it did not fit.
const MAX_OVERFLOW_SHRINKS: u32 = 3;

/// What one summarising request produced.
enum Asked {
    Summary(String),
    Overflow,
    Failed(CompactError),
}

impl RunLoop<'_> {
    /// Compacts the history. `Ok(Err(_))`: it could not be done (the
    /// frontends were told why); the history is unchanged.
    pub(super) async fn compact(
        &mut self,
        trigger: CompactTrigger,
        instructions: Option<&str>,
    ) -> Result<Result<(), CompactError>, StoreError> {
        self.pre_compact_hook(trigger, instructions).await;
        self.events.emit(Event::CompactionStarted { trigger }).await;
        let mut pre_tokens = self.estimate().await;
        if trigger == CompactTrigger::Overflow
            && let Some(budget) = self.budget()
        {
            // The provider refused the request: it counted at least the
            // window, whatever the estimate says.
            pre_tokens = pre_tokens.max(budget.window);
        }
        self.validate_history().await?;
        let outcome = match self.summarise(trigger, pre_tokens, instructions).await {
            Ok((summary, split)) => self.install(trigger, pre_tokens, &summary, split).await?,
            Err(error) => Err(error),
        };
        self.compaction_failure = outcome.as_ref().err().cloned();
        if let Err(error) = &outcome {
            tracing::info!(?trigger, "compaction failed: {error}");
            self.events
                .emit(Event::CompactionFailed {
                    trigger,
                    message: error.to_string(),
                })
                .await;
        }
        Ok(outcome)
    }

    /// Asks for a summary of the history before the kept recent turns;
    /// returns it and where the kept part starts.
    async fn summarise(
        &mut self,
        trigger: CompactTrigger,
        pre_tokens: u64,
        instructions: Option<&str>,
    ) -> Result<(String, usize), CompactError> {
        let meter = self.meter();
        let budget = self.budget();
        let to_bytes = |tokens: u64| (tokens as f64 * meter.bytes_per_token) as u64;
        let keep = budget.map_or(pre_tokens / 4, |b| b.keep_recent);
        let split = if trigger == CompactTrigger::Manual {
            split_point(&self.session.history, to_bytes(keep))?
        } else {
            self.split_that_shrinks(pre_tokens, keep)?
        };
        match self
            .summarise_cached(trigger, pre_tokens, split, instructions)
            .await
        {
            Some(Ok(summary)) => return Ok((summary, split)),
            Some(Err(error)) => return Err(error),
            None => {}
        }
        let mut transcript = Transcript::of(&self.session.history[..split]);
        let todos = self.session.tools.todos.snapshot();
        let max_output = self.agent.config.max_output_tokens.min(SUMMARY_MAX_TOKENS);
        let mut shortened = Shortened::default();
        if let Some(budget) = budget {
            let framing = request_text(&Transcript::of(&[]), &todos, instructions).len()
                + COMPACTION_SYSTEM_PROMPT.len();
            // The window less the margin, the summary's output and the
            // request's own text.
            let room = (budget.usable + u64::from(self.agent.config.max_output_tokens))
                .min(budget.window)
                .saturating_sub(u64::from(max_output))
                .saturating_sub(meter.tokens(framing as u64));
            shortened = fit(&mut transcript, to_bytes(room))?;
        }
        let mut shrinks = 0;
        loop {
            let text = request_text(&transcript, &todos, instructions);
            match self.ask_with_transcript(text, max_output).await {
                Asked::Summary(summary) => return Ok((summary, split)),
                Asked::Failed(error) => return Err(error),
                Asked::Overflow if shrinks < MAX_OVERFLOW_SHRINKS => {
                    shrinks += 1;
                    let target = transcript.bytes() * 2 / 3;
                    let smaller = fit(&mut transcript, target)?;
                    shortened.outputs += smaller.outputs;
                    shortened.entries += smaller.entries;
                }
                Asked::Overflow => {
                    return Err(CompactError::TooLarge {
                        outputs: shortened.outputs,
                        entries: shortened.entries,
                    });
                }
            }
        }
    }

    /// Where to cut: the recent `keep` tokens stay verbatim, unless the
    /// kept part and a summary would be no smaller than the history now
    /// (`pre_tokens`); then fewer turns are kept (half as many tokens at a
    /// time, down to none).
    fn split_that_shrinks(&self, pre_tokens: u64, keep: u64) -> Result<usize, CompactError> {
        let meter = self.meter();
        let history = &self.session.history;
        let to_bytes = |tokens: u64| (tokens as f64 * meter.bytes_per_token) as u64;
        let fixed = meter.tokens(meter.fixed_bytes);
        let tokens_of = |messages: &[Arc<Message>]| {
            meter.tokens(messages.iter().map(|m| message_bytes(m)).sum())
        };
        let mut keep = keep;
        loop {
            let split = split_point(history, to_bytes(keep))?;
            let kept = tokens_of(&history[split..]);
            // A summary is planned at half of what it replaces, at most
            // the allowance.
            let allowance = SUMMARY_ALLOWANCE_TOKENS.min(tokens_of(&history[..split]) / 2);
            if fixed + allowance + kept < pre_tokens || split == history.len() || keep == 0 {
                return Ok(split);
            }
            keep /= 2;
        }
    }

    /// The cached form (see the module doc); `None` when it does not apply
    /// or gave no summary, so the transcript form is asked.
    async fn summarise_cached(
        &mut self,
        trigger: CompactTrigger,
        pre_tokens: u64,
        split: usize,
        instructions: Option<&str>,
    ) -> Option<Result<String, CompactError>> {
        let config = &self.agent.config;
        let same_model = config
            .context
            .compaction_model
            .as_ref()
            .is_none_or(|m| m == &config.model);
        let budget = self.budget()?;
        if !config.context.cached_compaction || !same_model || trigger == CompactTrigger::Overflow {
            return None;
        }
        let (sent, kept) = self.cached_prefix(split);
        let todos = self.session.tools.todos.snapshot();
        let text = cached_request_text(kept, &todos, instructions);
        let max_output = config.max_output_tokens.min(SUMMARY_MAX_TOKENS);
        let room = (budget.usable + u64::from(config.max_output_tokens))
            .min(budget.window)
            .saturating_sub(u64::from(max_output));
        let meter = self.meter();
        if pre_tokens + meter.tokens(text.len() as u64 + 64) > room {
            return None;
        }
        let mut messages = sent;
        messages.push(Arc::new(Message::new(
            new_id(),
            Role::User,
            vec![Part::text(text)],
        )));
        let system = config.system_prompt.clone();
        let tools = self.tools.specs.clone();
        match self
            .ask_for_summary(&system, &messages, &tools, max_output)
            .await
        {
            Asked::Summary(summary) => Some(Ok(summary)),
            Asked::Failed(CompactError::Cancelled) => Some(Err(CompactError::Cancelled)),
            Asked::Failed(error) => {
                tracing::info!(
                    "the cached summary request failed ({error}); asking with a transcript"
                );
                None
            }
            Asked::Overflow => None,
        }
    }

    /// What a cached summary request sends before its instruction, and how
    /// many of those messages stay verbatim: the last main request's
    /// messages when they are still the start of what is sent and reach the
    /// split (the provider has cached exactly that, so only the instruction
    /// is written; kept turns after it need no summary); otherwise
    /// everything as sent now.
    fn cached_prefix(&self, split: usize) -> (Vec<Arc<Message>>, usize) {
        let sent = self.session.validated.sent();
        let first_kept = self.session.history.get(split).map(|m| m.id.as_str());
        let split_in_sent = first_kept
            .and_then(|id| sent.iter().position(|m| m.id == id))
            .unwrap_or(sent.len());
        let upto = match &self.session.last_request {
            Some((len, last))
                if *len >= split_in_sent
                    && sent
                        .get(len.wrapping_sub(1))
                        .is_some_and(|m| Arc::ptr_eq(m, last)) =>
            {
                *len
            }
            _ => sent.len(),
        };
        (sent[..upto].to_vec(), upto - split_in_sent.min(upto))
    }

    /// The transcript form's request: gyre's summariser prompt, no tools.
    async fn ask_with_transcript(&mut self, text: String, max_output: u32) -> Asked {
        let messages = [Arc::new(Message::new(
            new_id(),
            Role::User,
            vec![Part::text(text)],
        ))];
        self.ask_for_summary(COMPACTION_SYSTEM_PROMPT, &messages, &[], max_output)
            .await
    }

    /// One summarising request, asked again after transient failures.
    async fn ask_for_summary(
        &mut self,
        system: &str,
        messages: &[Arc<Message>],
        tools: &[ToolSpec],
        max_output: u32,
    ) -> Asked {
        let config = &self.agent.config;
        let model = config
            .context
            .compaction_model
            .clone()
            .unwrap_or_else(|| config.model.clone());
        let mut failures = 0u32;
        let mut waited = Duration::ZERO;
        loop {
            let stream = self.agent.client.stream(&ModelRequest {
                model: &model,
                system,
                messages,
                tools,
                tool_choice: ToolChoice::Auto,
                max_output_tokens: max_output,
                cache_key: Some(self.session.id()),
                cache_points: &[],
                sampling: &gyre_llm::Sampling::NONE,
            });
            let read = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return Asked::Failed(CompactError::Cancelled),
                read = read_text(stream) => read,
            };
            let (text, usage, failure) = read;
            self.account(&usage);
            let Some(error) = failure else {
                let summary = text.trim();
                return if summary.is_empty() {
                    Asked::Failed(CompactError::EmptySummary)
                } else {
                    Asked::Summary(summary.to_string())
                };
            };
            if error.kind == ErrorKind::ContextOverflow {
                return Asked::Overflow;
            }
            failures += 1;
            let delay = match self.agent.config.retry.decide(&error, failures, waited) {
                RetryDecision::Wait(delay) => delay,
                RetryDecision::GiveUp(_) => {
                    return Asked::Failed(CompactError::Provider(error.message));
                }
            };
            self.events
                .emit(Event::RetryScheduled {
                    attempt: failures,
                    delay_ms: delay.as_millis() as u64,
                    reason: reason_of(&error).to_string(),
                    message: error.message.clone(),
                })
                .await;
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return Asked::Failed(CompactError::Cancelled),
                _ = tokio::time::sleep(delay) => {}
            }
            waited += delay;
        }
    }

    /// Stores the summary, then replaces the history with it and the kept
    /// turns, saves the state and tells the frontends. An automatic
    /// compaction, or one after an overflow of a known window, that would
    /// not make the history smaller changes nothing
    /// ([`CompactError::WouldNotShrink`]); one the user asked for
    /// (`/compact`) is done as asked.
    async fn install(
        &mut self,
        trigger: CompactTrigger,
        pre_tokens: u64,
        summary: &str,
        split: usize,
    ) -> Result<Result<(), CompactError>, StoreError> {
        let kept = &self.session.history[split..];
        let after = if kept.is_empty() && trigger != CompactTrigger::Manual {
            AfterSummary::Continue
        } else {
            AfterSummary::Nothing
        };
        let todos = self.session.tools.todos.snapshot();
        let mut boundary = CompactBoundary {
            trigger,
            pre_tokens,
            post_tokens: 0,
            kept_from: kept.first().map(|m| m.id.clone()),
        };
        let draft = summary_message(new_id(), summary, &todos, after, boundary.clone());
        let meter = self.meter();
        let kept_bytes: u64 = kept.iter().map(|m| message_bytes(m)).sum();
        boundary.post_tokens = meter.tokens(meter.fixed_bytes + message_bytes(&draft) + kept_bytes);
        // Known to grow only against a count: an automatic compaction's
        // estimate, or an overflow's window (without a window, what the
        // provider refused is unknown).
        let measured = match trigger {
            CompactTrigger::Auto => true,
            CompactTrigger::Overflow => self.budget().is_some(),
            CompactTrigger::Manual => false,
        };
        if measured && boundary.post_tokens >= pre_tokens {
            return Ok(Err(CompactError::WouldNotShrink {
                pre: pre_tokens,
                post: boundary.post_tokens,
            }));
        }
        let message = Arc::new(draft.with_origin(gyre_protocol::Origin::Summary(boundary.clone())));

        self.store
            .append_message(self.session.id(), &message)
            .await?;
        self.first_message.get_or_insert_with(|| message.id.clone());
        let mut history = Vec::with_capacity(self.session.history.len() - split + 1);
        history.push(message.clone());
        history.extend(self.session.history.drain(split..));
        self.session.history = history;
        self.session.cache_point = None;
        self.session.baseline = None;
        self.session.validated.reset();
        let context = &mut self.session.state.context;
        context.warned = false;
        context.compactions += 1;
        self.checkpoint().await?;

        self.events
            .emit(Event::MessageAppended {
                message: message.clone(),
            })
            .await;
        self.events
            .emit(Event::CompactBoundary {
                message_id: message.id.clone(),
                boundary,
            })
            .await;
        Ok(Ok(()))
    }
}

/// Shortens `transcript` to `target` bytes, or says it cannot be done.
fn fit(transcript: &mut Transcript, target: u64) -> Result<Shortened, CompactError> {
    transcript
        .fit(target)
        .map_err(|tried| CompactError::TooLarge {
            outputs: tried.outputs,
            entries: tried.entries,
        })
}

/// Reads a summarising answer: its text, its usage, and the error that
/// ended it early, if any.
async fn read_text(mut stream: ModelStream) -> (String, Usage, Option<LlmError>) {
    let mut text = String::new();
    let mut usage = Usage::default();
    let mut finished = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(ModelEvent::PartCompleted(Part::Text { text: part })) => text.push_str(&part),
            Ok(ModelEvent::Usage(latest)) => usage = latest,
            Ok(ModelEvent::Finished(_)) => finished = true,
            Ok(_) => {}
            Err(error) => return (text, usage, Some(error)),
        }
    }
    let failure = (!finished).then(|| {
        LlmError::new(
            ErrorKind::Stream,
            None,
            "the summary ended before it was complete",
        )
    });
    (text, usage, failure)
}
