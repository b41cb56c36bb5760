//! Compaction, the decisions: where the history is cut, what the summarising
//! request says, and what the summary message holds. The effects (the
//! request, the store, the events) are in `run::compaction`.
//!
//! Invariants:
//! - The kept part starts with a model answer, so the summary (a user-side
//!   message) and the kept part alternate roles, and no kept tool result
//!   loses its call.
//! - Something besides an earlier summary is always summarised; otherwise
//!   there is nothing to compact.
//! - The todo list goes into the summary message itself: it survives any
//!   number of compactions.

use std::sync::Arc;

use gyre_protocol::{CompactBoundary, Message, Origin, Part, Role, Todo, TodoStatus};

use super::message_bytes;
use super::transcript::Transcript;
use crate::prompt::{COMPACTION_INSTRUCTIONS, CONTINUE_AFTER_SUMMARY, SUMMARY_PREAMBLE};

/// Why a compaction did not happen; the history is unchanged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum CompactError {
    #[error("there is nothing to compact yet: the recent turns are all that is left")]
    NothingToCompact,
    #[error(
        "the summary request did not fit the model's context window, even with {outputs} tool outputs and {entries} messages left out of it"
    )]
    TooLarge { outputs: usize, entries: usize },
    #[error("the summary request failed: {0}")]
    Provider(String),
    #[error("the model's summary was empty")]
    EmptySummary,
    #[error(
        "the summary would not make the conversation smaller ({pre} tokens before, {post} after); it is left as it was"
    )]
    WouldNotShrink { pre: u64, post: u64 },
    #[error("cancelled")]
    Cancelled,
}

/// Where to cut `history`: the index of the first message kept verbatim,
/// the earliest model answer from which at most `keep_bytes` follow (the
/// history's length when nothing can be kept).
pub(crate) fn split_point(
    history: &[Arc<Message>],
    keep_bytes: u64,
) -> Result<usize, CompactError> {
    let mut tail = 0u64;
    let mut split = history.len();
    for (index, message) in history.iter().enumerate().rev() {
        tail += message_bytes(message);
        if tail > keep_bytes {
            break;
        }
        if message.role == Role::Assistant {
            split = index;
        }
    }
    let summarised = &history[..split];
    let only_a_summary = summarised.iter().all(|m| m.compact_boundary().is_some());
    if summarised.is_empty() || only_a_summary {
        return Err(CompactError::NothingToCompact);
    }
    Ok(split)
}

/// The one user message of a summarising request.
pub(crate) fn request_text(
    transcript: &Transcript,
    todos: &[Todo],
    instructions: Option<&str>,
) -> String {
    let mut text = String::with_capacity(transcript.bytes() as usize + 2_048);
    text.push_str("<transcript>\n");
    text.push_str(&transcript.render());
    text.push_str("</transcript>\n\n");
    if !todos.is_empty() {
        text.push_str("The agent's todo list now:\n");
        text.push_str(&todo_lines(todos));
        text.push('\n');
    }
    text.push_str(COMPACTION_INSTRUCTIONS);
    if let Some(extra) = instructions.map(str::trim).filter(|s| !s.is_empty()) {
        text.push_str("\n\nThe user adds: ");
        text.push_str(extra);
    }
    text
}

/// The message that asks for a summary after the conversation itself (the
/// cached form: the request is the conversation as last sent, then this, so
/// the provider serves the conversation from its prompt cache). `kept`: how
/// many of the last messages stay verbatim after the summary.
pub(crate) fn cached_request_text(
    kept: usize,
    todos: &[Todo],
    instructions: Option<&str>,
) -> String {
    let mut text = String::with_capacity(4_096);
    text.push_str(
        "<system-reminder>gyre is compacting this conversation to fit the context window. Do \
         not call any tool now: answer with the summary only, for the agent that continues from \
         it (the conversation itself will be gone). Be precise: exact file paths, names, \
         commands, error messages and values. Never add anything the conversation does not \
         show.\n\n",
    );
    if kept > 0 {
        text.push_str(&format!(
            "The last {kept} messages above stay verbatim after your summary: summarise what \
             comes before them.\n\n"
        ));
    }
    text.push_str(
        &COMPACTION_INSTRUCTIONS
            .replacen("the transcript above", "the conversation above", 1)
            .replacen("when the transcript ends", "when the conversation ends", 1),
    );
    if !todos.is_empty() {
        text.push_str("\n\nThe agent's todo list now:\n");
        text.push_str(&todo_lines(todos));
    }
    if let Some(extra) = instructions.map(str::trim).filter(|s| !s.is_empty()) {
        text.push_str("\n\nThe user adds: ");
        text.push_str(extra);
    }
    text.push_str("</system-reminder>");
    text
}

/// Whether the model is told to carry on after the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterSummary {
    /// The kept turns or a new prompt follow.
    Nothing,
    /// The run goes on and nothing verbatim follows.
    Continue,
}

/// The summary message: gyre's preamble, the summary, the todo list.
pub(crate) fn summary_message(
    id: String,
    summary: &str,
    todos: &[Todo],
    after: AfterSummary,
    boundary: CompactBoundary,
) -> Message {
    let mut text = format!("{SUMMARY_PREAMBLE}\n\n{}", summary.trim());
    if todos.iter().any(|t| t.status != TodoStatus::Cancelled) {
        text.push_str("\n\n<todos>\n");
        text.push_str(&todo_lines(todos));
        text.push_str("</todos>");
    }
    if after == AfterSummary::Continue {
        text.push_str("\n\n");
        text.push_str(CONTINUE_AFTER_SUMMARY);
    }
    Message::new(id, Role::User, vec![Part::text(text)]).with_origin(Origin::Summary(boundary))
}

fn todo_lines(todos: &[Todo]) -> String {
    let mut out = String::new();
    for todo in todos {
        let status = match todo.status {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
            TodoStatus::Cancelled => "cancelled",
        };
        out.push_str(&format!("- [{status}] {}\n", todo.content));
    }
    out
}

/// The model-visible history of stored `messages`: from the last summary on
/// (the summary, the messages it kept, everything after it).
pub(crate) fn visible_from_boundary(messages: Vec<Message>) -> Vec<Arc<Message>> {
    let Some(at) = messages
        .iter()
        .rposition(|m| m.compact_boundary().is_some())
    else {
        return messages.into_iter().map(Arc::new).collect();
    };
    let kept_from = messages[at]
        .compact_boundary()
        .and_then(|b| b.kept_from.as_deref())
        .and_then(|id| messages[..at].iter().position(|m| m.id == id))
        .unwrap_or(at);
    let mut messages: Vec<Option<Message>> = messages.into_iter().map(Some).collect();
    let mut visible = Vec::with_capacity(messages.len() - kept_from);
    visible.extend(messages[at].take().map(Arc::new));
    for slot in &mut messages[kept_from..] {
        visible.extend(slot.take().map(Arc::new));
    }
    visible
}

#[cfg(test)]
mod tests {
    use super::*;
    use gyre_protocol::{CompactTrigger, Outcome, ToolCall, ToolResult};

    fn history() -> Vec<Arc<Message>> {
        let mut history = vec![Arc::new(Message::user_text("p", "task"))];
        for i in 0..4 {
            history.push(Arc::new(Message::new(
                format!("a{i}"),
                Role::Assistant,
                vec![Part::ToolCall(ToolCall::new(format!("c{i}"), "bash", "{}"))],
            )));
            history.push(Arc::new(Message::new(
                format!("r{i}"),
                Role::User,
                vec![Part::ToolResult(ToolResult::text(
                    format!("c{i}"),
                    "bash",
                    "x".repeat(1_000),
                    Outcome::Success,
                ))],
            )));
        }
        history
    }

    fn boundary(kept_from: Option<&str>) -> CompactBoundary {
        CompactBoundary {
            trigger: CompactTrigger::Auto,
            pre_tokens: 10,
            post_tokens: 5,
            kept_from: kept_from.map(str::to_string),
        }
    }

    #[test]
    fn the_cut_keeps_whole_recent_turns() {
        let history = history();
        // Room for two turns (about 1.1 kB each): the kept part starts at a call.
        let split = split_point(&history, 2_400).unwrap();
        assert_eq!(history[split].id, "a2");
        // No room at all: everything is summarised.
        assert_eq!(split_point(&history, 0).unwrap(), history.len());
        // Room for everything: nothing to summarise but the prompt, which is
        // still a compaction; an earlier summary alone is not.
        assert_eq!(split_point(&history, u64::MAX).unwrap(), 1);
        let summary = Arc::new(summary_message(
            "s".into(),
            "before",
            &[],
            AfterSummary::Nothing,
            boundary(None),
        ));
        let compacted = vec![summary, history[7].clone(), history[8].clone()];
        assert_eq!(
            split_point(&compacted, u64::MAX),
            Err(CompactError::NothingToCompact)
        );
    }

    #[test]
    fn the_cached_form_asks_about_the_conversation_above() {
        let todos = vec![Todo {
            content: "write tests".into(),
            status: TodoStatus::Pending,
        }];
        let text = cached_request_text(3, &todos, Some(" keep the API "));
        assert!(text.contains("Summarise the conversation above so that the work can continue"));
        assert!(text.contains("The last 3 messages above stay verbatim"));
        assert!(text.contains("- [pending] write tests"));
        assert!(text.contains("The user adds: keep the API"));
        assert!(!text.contains("transcript"), "{text}");
        assert!(!cached_request_text(0, &[], None).contains("stay verbatim"));
    }

    #[test]
    fn the_summary_carries_todos_and_the_boundary() {
        let todos = vec![Todo {
            content: "write tests".into(),
            status: TodoStatus::InProgress,
        }];
        let message = summary_message(
            "s".into(),
            " did things ",
            &todos,
            AfterSummary::Continue,
            boundary(Some("a2")),
        );
        let text = message.text();
        assert!(text.starts_with(SUMMARY_PREAMBLE));
        assert!(text.contains("\n\ndid things\n\n<todos>\n- [in_progress] write tests\n</todos>"));
        assert!(text.ends_with(CONTINUE_AFTER_SUMMARY));
        assert_eq!(
            message
                .compact_boundary()
                .and_then(|b| b.kept_from.as_deref()),
            Some("a2")
        );
    }

    #[test]
    fn the_visible_history_starts_at_the_last_summary() {
        let stored: Vec<Message> = history().iter().map(|m| Message::clone(m)).collect();
        let mut all = stored.clone();
        all.push(summary_message(
            "s1".into(),
            "one",
            &[],
            AfterSummary::Nothing,
            boundary(Some("a3")),
        ));
        all.push(Message::user_text("n", "next"));
        let visible = visible_from_boundary(all);
        let ids: Vec<&str> = visible.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["s1", "a3", "r3", "n"]);
        // Without a summary, everything; without kept turns, the summary on.
        assert_eq!(visible_from_boundary(stored.clone()).len(), stored.len());
        let mut none_kept = stored;
        none_kept.push(summary_message(
            "s2".into(),
            "two",
            &[],
            AfterSummary::Continue,
            boundary(None),
        ));
        let ids: Vec<String> = visible_from_boundary(none_kept)
            .iter()
            .map(|m| m.id.clone())
            .collect();
        assert_eq!(ids, ["s2"]);
    }
}
