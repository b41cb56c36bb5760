//! How each event of a run changes the transcript: streamed text and
//! reasoning, tool cells by call id, subagents' activity in their `task`
//! cell, notices for context, compaction, retries and the run's end.
//! Each handler touches at most a few cells (see the module above).

use gyre_protocol::{
    Event, FinishReason, Message, Role, RunErrorKind, RunSummary, StopReason, ToolCall, ToolResult,
};
use tokio::time::Instant;

use super::{
    Cell, CellKind, NoticeKind, ReasoningCell, SUBAGENT_RECENT, SubagentActivity, SubagentCall,
    ToolCell, ToolState, Transcript, tool,
};
use crate::render::markdown::StreamingMarkdown;
use crate::render::text::format_tokens;

impl Transcript {
    /// Applies one event of a run.
    pub fn apply(&mut self, event: &Event, now: Instant) {
        self.status.apply(event, now);
        match event {
            Event::TextDelta { text } => self.text_delta(text),
            Event::ReasoningDelta { text } => self.reasoning_delta(text),
            Event::ToolCallStarted { call_id, name } => {
                self.close_streams();
                self.tool_cell(call_id, name, now);
            }
            Event::ToolCallReady { call } => self.tool_ready(call, now),
            Event::ToolProgress { call_id, output } => {
                if let Some(tool) = self.tool_mut(call_id) {
                    tool.tail.push(output);
                }
            }
            Event::ToolResult { title, result } => self.tool_result(title, result, now),
            Event::PermissionRequested { call, .. } => {
                if let Some(tool) = self.tool_mut(&call.id) {
                    tool.state = ToolState::AwaitingPermission;
                }
            }
            Event::MessageAppended { message } => self.message_appended(message),
            Event::TurnCompleted { stop_reason, .. } => {
                self.close_streams();
                if *stop_reason == StopReason::Refusal {
                    self.push_notice(NoticeKind::Warning, "The model refused to answer.");
                }
            }
            Event::TodosUpdated { todos } => self.todos = todos.clone(),
            Event::ContextWarning {
                used_tokens,
                usable_tokens,
                ..
            } => {
                let percent = (used_tokens * 100).checked_div(*usable_tokens).unwrap_or(0);
                self.push_notice(
                    NoticeKind::Warning,
                    format!(
                        "Context {percent}% full ({} of {} tokens); \
                         /compact summarises older turns.",
                        format_tokens(*used_tokens),
                        format_tokens(*usable_tokens)
                    ),
                );
            }
            Event::ContextPruned {
                pruned_results,
                pre_tokens,
                post_tokens,
            } => self.push_notice(
                NoticeKind::Info,
                format!(
                    "Pruned {pruned_results} old tool outputs from the context \
                     ({} → {} tokens).",
                    format_tokens(*pre_tokens),
                    format_tokens(*post_tokens)
                ),
            ),
            Event::CompactionStarted { trigger } => {
                self.push_notice(
                    NoticeKind::Info,
                    format!("Compacting the conversation ({})…", trigger.as_str()),
                );
                self.compaction_notice = Some(self.cells.len() - 1);
            }
            Event::CompactBoundary { boundary, .. } => {
                let text = format!(
                    "Conversation compacted ({}): {} → {} tokens.",
                    boundary.trigger.as_str(),
                    format_tokens(boundary.pre_tokens),
                    format_tokens(boundary.post_tokens)
                );
                self.finish_compaction(NoticeKind::Info, text);
            }
            Event::CompactionFailed { message, .. } => {
                self.finish_compaction(NoticeKind::Error, format!("Compaction failed: {message}"))
            }
            Event::CheckpointFailed { message, .. } => self.push_notice(
                NoticeKind::Warning,
                format!("Checkpoint failed: {message}."),
            ),
            Event::SessionBusy { pid, host } => self.push_notice(
                NoticeKind::Warning,
                format!("Another run (pid {pid} on {host}) is using this session; waiting for it."),
            ),
            Event::RetryScheduled {
                attempt,
                delay_ms,
                reason,
                message,
            } => self.retry_notice(*attempt, *delay_ms, reason, message),
            Event::Subagent {
                call_id,
                task_id,
                agent,
                inner,
            } => self.subagent_event(call_id, task_id, agent, inner),
            Event::TaskNotification {
                agent,
                description,
                reason,
                final_text,
                ..
            } => {
                let (kind, verb) = finish_words(*reason);
                let result = crate::render::text::first_line(final_text);
                let text = if result.is_empty() {
                    format!("Background task {agent} ({description}) {verb}.")
                } else {
                    format!("Background task {agent} ({description}) {verb}: {result}")
                };
                self.push_notice(kind, text);
            }
            Event::RunFinished(summary) => self.run_finished(summary, now),
            _ => {}
        }
    }

    fn text_delta(&mut self, text: &str) {
        if let Some(index) = self.open_reasoning.take()
            && let Some(cell) = self.cells.get_mut(index)
        {
            if let CellKind::Reasoning(r) = &mut cell.kind {
                r.streaming = false;
            }
            cell.touch();
        }
        self.streamed_text = true;
        let index = match self.open_text {
            Some(index) => index,
            None => {
                let index = self.push(CellKind::Assistant(StreamingMarkdown::new()));
                self.open_text = Some(index);
                index
            }
        };
        let palette = self.palette;
        if let Some(cell) = self.cells.get_mut(index) {
            if let CellKind::Assistant(md) = &mut cell.kind {
                md.push(text, palette);
            }
            cell.touch();
        }
    }

    fn reasoning_delta(&mut self, text: &str) {
        if self.open_text.is_some() {
            self.close_streams();
        }
        let index = match self.open_reasoning {
            Some(index) => index,
            None => {
                let index = self.push(CellKind::Reasoning(ReasoningCell {
                    text: String::new(),
                    streaming: true,
                }));
                self.open_reasoning = Some(index);
                index
            }
        };
        if let Some(cell) = self.cells.get_mut(index) {
            if let CellKind::Reasoning(r) = &mut cell.kind {
                r.text.push_str(text);
            }
            cell.touch();
        }
    }

    fn tool_cell(&mut self, call_id: &str, name: &str, now: Instant) -> usize {
        if let Some(&index) = self.tools.get(call_id) {
            return index;
        }
        let index = self.push(CellKind::Tool(Box::new(ToolCell::new(name, now))));
        self.tools.insert(call_id.to_string(), index);
        index
    }

    fn tool_ready(&mut self, call: &ToolCall, now: Instant) {
        self.close_streams();
        self.tool_cell(&call.id, &call.name, now);
        let Some(tool) = self.tool_mut(&call.id) else {
            return;
        };
        tool.summary = tool::summarize_call(call);
        tool.diff = tool::edit_preview(call);
        if tool.state == ToolState::Pending {
            tool.state = ToolState::Running;
            tool.started = now;
        }
        if call.name == "task" {
            let agent = call
                .arguments_json()
                .and_then(|a| a.get("agent")?.as_str().map(str::to_string))
                .unwrap_or_default();
            tool.subagent.get_or_insert_with(|| SubagentActivity {
                agent,
                ..SubagentActivity::default()
            });
        }
    }

    pub(super) fn tool_result(&mut self, title: &str, result: &ToolResult, now: Instant) {
        let index = self.tool_cell(&result.call_id, &result.name, now);
        let Some(Cell {
            kind: CellKind::Tool(tool),
            ..
        }) = self.cells.get_mut(index)
        else {
            return;
        };
        tool.state = tool::classify_result(result);
        tool.ended = Some(now);
        self.last_output = Some((result.call_id.clone(), result.text_content()));
        tool.outcome = tool::outcome_line(title, result);
        // A finished call keeps its output tail only when it went wrong.
        if tool.state == ToolState::Done {
            tool.tail.clear();
        }
        if let Some(cell) = self.cells.get_mut(index) {
            cell.touch();
        }
    }

    fn message_appended(&mut self, message: &Message) {
        if message.role != Role::Assistant {
            return;
        }
        self.close_streams();
        if !std::mem::take(&mut self.streamed_text) {
            let text = message.text();
            if !text.trim().is_empty() {
                let mut md = StreamingMarkdown::new();
                md.push(&text, self.palette);
                md.finish(self.palette);
                self.push(CellKind::Assistant(md));
            }
        }
    }

    fn retry_notice(&mut self, attempt: u32, delay_ms: u64, reason: &str, message: &str) {
        let what = if message.is_empty() { reason } else { message };
        let text = format!(
            "Request failed: {}. Retry {attempt} in {}.",
            what.trim_end_matches('.'),
            format_delay(delay_ms)
        );
        let last = self.cells.len().checked_sub(1);
        match self
            .retry_notice
            .filter(|i| Some(*i) == last)
            .and_then(|i| self.cells.get_mut(i))
        {
            Some(cell) => {
                cell.kind = CellKind::Notice {
                    kind: NoticeKind::Warning,
                    text,
                };
                cell.touch();
            }
            None => {
                self.push_notice(NoticeKind::Warning, text);
                self.retry_notice = Some(self.cells.len() - 1);
            }
        }
    }

    fn finish_compaction(&mut self, kind: NoticeKind, text: String) {
        match self
            .compaction_notice
            .take()
            .and_then(|i| self.cells.get_mut(i))
        {
            Some(cell) => {
                cell.kind = CellKind::Notice { kind, text };
                cell.touch();
            }
            None => self.push_notice(kind, text),
        }
    }

    fn subagent_event(&mut self, call_id: &str, task_id: &str, agent: &str, inner: &Event) {
        let Some(tool) = self.tool_mut(call_id) else {
            return;
        };
        let activity = tool.subagent.get_or_insert_with(SubagentActivity::default);
        if activity.agent.is_empty() {
            activity.agent = agent.to_string();
        }
        if activity.task_id.is_empty() {
            activity.task_id = task_id.to_string();
        }
        apply_to_activity(activity, inner);
    }

    fn run_finished(&mut self, summary: &RunSummary, now: Instant) {
        self.close_streams();
        // Calls the run left without a result were stopped with it.
        for &index in self.tools.values() {
            if let Some(cell) = self.cells.get_mut(index)
                && let CellKind::Tool(tool) = &mut cell.kind
                && !tool.state.is_finished()
            {
                tool.state = ToolState::Interrupted;
                tool.ended = Some(now);
                cell.touch();
            }
        }
        if let Some(error) = &summary.error {
            let kind = match error.kind {
                RunErrorKind::Cancelled => NoticeKind::Info,
                _ => NoticeKind::Error,
            };
            self.push_notice(kind, error.message.clone());
        } else if summary.reason == FinishReason::Cancelled {
            self.push_notice(NoticeKind::Info, "Interrupted.");
        } else if summary.reason != FinishReason::Completed {
            let (kind, verb) = finish_words(summary.reason);
            self.push_notice(kind, format!("The run {verb}."));
        }
    }
}

/// A subagent's event as its `task` cell shows it: its tool calls, in
/// brief. Nested subagents are flattened into the outermost cell.
fn apply_to_activity(activity: &mut SubagentActivity, inner: &Event) {
    match inner {
        Event::ToolCallReady { call } => {
            activity.calls += 1;
            if activity.recent.len() == SUBAGENT_RECENT {
                activity.recent.pop_front();
            }
            activity.recent.push_back(SubagentCall {
                call_id: call.id.clone(),
                name: call.name.clone(),
                summary: tool::summarize_call(call),
                state: ToolState::Running,
            });
        }
        Event::ToolResult { result, .. } => {
            if let Some(call) = activity
                .recent
                .iter_mut()
                .find(|c| c.call_id == result.call_id)
            {
                call.state = tool::classify_result(result);
            }
        }
        Event::RunFinished(summary) => activity.finished = Some(summary.reason),
        Event::Subagent { inner, .. } => apply_to_activity(activity, inner),
        _ => {}
    }
}

/// The notice kind and verb for how a run ended.
fn finish_words(reason: FinishReason) -> (NoticeKind, &'static str) {
    match reason {
        FinishReason::Completed => (NoticeKind::Info, "finished"),
        FinishReason::MaxTurns => (NoticeKind::Warning, "stopped at the turn limit"),
        FinishReason::Budget => (NoticeKind::Warning, "stopped at its budget"),
        FinishReason::LoopGuard => (NoticeKind::Warning, "was stopped by the loop guard"),
        FinishReason::Failed => (NoticeKind::Error, "failed"),
        FinishReason::Cancelled => (NoticeKind::Info, "was cancelled"),
    }
}

/// A retry's wait for a person: "800 ms", "1.5 s", "12 s".
fn format_delay(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..10_000 if !ms.is_multiple_of(1_000) => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} s", ms / 1000),
    }
}
