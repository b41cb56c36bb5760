//! Pruning: outputs of old tool calls become short markers in what is sent.
//!
//! Invariants:
//! - Only tool results are touched, and only in messages before the protected
//!   recent part; calls, text and reasoning stay as they were.
//! - A step prunes everything prunable up to one message (the watermark); the
//!   pruned set only grows, and a message once pruned is sent the same way
//!   until the next compaction, so requests between steps share their prefix.
//! - A result is pruned once: its marker is recognised and left alone.
//! - Small outputs are kept: a marker would save nothing.

use std::sync::Arc;

use gyre_protocol::{Message, Part, Role, ToolResult, ToolResultContent};

use super::message_bytes;

/// How a pruned output begins, so it is never pruned twice.
pub(crate) const PRUNED_PREFIX: &str = "[output pruned from the context";
/// Outputs smaller than this stay.
const MIN_PRUNABLE_BYTES: u64 = 512;

/// Where a prune step would move the watermark, and what it would save.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PrunePlan {
    /// Index of the first message with an output to prune: the step's
    /// change point (everything from it on is sent anew).
    pub first: usize,
    /// Index of the last message whose outputs are pruned.
    pub through: usize,
    pub results: u32,
    pub saved_bytes: u64,
}

/// Plans a step that prunes every output before the most recent
/// `protect_bytes` of history, and never one of the latest tool round (the
/// model has not seen those yet); `None` when it would save less than
/// `min_gain_bytes`.
pub(crate) fn plan_pruning(
    history: &[Arc<Message>],
    protect_bytes: u64,
    min_gain_bytes: u64,
) -> Option<PrunePlan> {
    let mut protected = 0u64;
    let mut first_protected = history.len();
    for (index, message) in history.iter().enumerate().rev() {
        protected += message_bytes(message);
        if protected > protect_bytes {
            break;
        }
        first_protected = index;
    }
    let latest_answer = history.iter().rposition(|m| m.role == Role::Assistant);
    let first_protected = first_protected.min(latest_answer.unwrap_or(history.len()));
    let through = first_protected.checked_sub(1)?;
    let (mut results, mut saved_bytes, mut first) = (0u32, 0u64, None);
    for (index, message) in history[..=through].iter().enumerate() {
        for result in message.tool_results() {
            if let Some(size) = prunable_size(result) {
                results += 1;
                saved_bytes += size.saturating_sub(marker_len());
                first.get_or_insert(index);
            }
        }
    }
    (results > 0 && saved_bytes >= min_gain_bytes).then_some(PrunePlan {
        first: first.unwrap_or(through),
        through,
        results,
        saved_bytes,
    })
}

/// Where the next prune step would begin: the message before the first one
/// holding an output that may still be pruned (outputs are pruned oldest
/// first, so every later step changes the prompt from there on). A cache
/// entry that ends there is what that step reads; `None` when no output is
/// left to prune or the first one is in the first message.
pub(crate) fn next_change_point(history: &[Arc<Message>]) -> Option<usize> {
    let first = history
        .iter()
        .position(|m| m.tool_results().any(|r| prunable_size(r).is_some()))?;
    first.checked_sub(1)
}

/// The bytes of the latest round: the last model answer and what followed
/// it (its tool results). How much the next round is expected to add.
pub(crate) fn latest_round_bytes(history: &[Arc<Message>]) -> u64 {
    let from = history
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .unwrap_or(0);
    history[from..].iter().map(|m| message_bytes(m)).sum()
}

/// Prunes every prunable output in `history[..=through]`; returns how many.
pub(crate) fn apply_pruning(history: &mut [Arc<Message>], through: usize) -> u32 {
    let end = through.saturating_add(1).min(history.len());
    let mut pruned = 0;
    for slot in &mut history[..end] {
        let count = slot
            .tool_results()
            .filter(|r| prunable_size(r).is_some())
            .count() as u32;
        if count == 0 {
            continue;
        }
        let mut message = Message::clone(slot);
        for part in &mut message.parts {
            if let Part::ToolResult(result) = part
                && let Some(size) = prunable_size(result)
            {
                result.content = vec![ToolResultContent::Text {
                    text: marker(size, line_count(result)),
                }];
            }
        }
        *slot = Arc::new(message);
        pruned += count;
    }
    pruned
}

/// The output's size when it may be pruned.
fn prunable_size(result: &ToolResult) -> Option<u64> {
    if is_pruned(result) {
        return None;
    }
    let size: u64 = result
        .content
        .iter()
        .map(|c| match c {
            ToolResultContent::Text { text } => text.len() as u64,
            ToolResultContent::Image { data, .. } => data.len() as u64,
        })
        .sum();
    (size >= MIN_PRUNABLE_BYTES).then_some(size)
}

fn is_pruned(result: &ToolResult) -> bool {
    matches!(result.content.as_slice(), [ToolResultContent::Text { text }] if text.starts_with(PRUNED_PREFIX))
}

fn line_count(result: &ToolResult) -> usize {
    result
        .content
        .iter()
        .map(|c| match c {
            ToolResultContent::Text { text } => text.lines().count(),
            ToolResultContent::Image { .. } => 0,
        })
        .sum()
}

fn marker(bytes: u64, lines: usize) -> String {
    format!(
        "{PRUNED_PREFIX} to save space ({bytes} bytes, {lines} lines); run the tool again if you need it]"
    )
}

fn marker_len() -> u64 {
    marker(1_000_000, 10_000).len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use gyre_protocol::{Outcome, ToolCall};

    fn turn(i: usize, output_len: usize) -> [Arc<Message>; 2] {
        let id = format!("c{i}");
        let call = Message::new(
            format!("a{i}"),
            Role::Assistant,
            vec![Part::ToolCall(ToolCall::new(&id, "bash", "{}"))],
        );
        let result = Message::new(
            format!("r{i}"),
            Role::User,
            vec![Part::ToolResult(ToolResult::text(
                &id,
                "bash",
                "line\n".repeat(output_len / 5),
                Outcome::Success,
            ))],
        );
        [Arc::new(call), Arc::new(result)]
    }

    fn history(outputs: &[usize]) -> Vec<Arc<Message>> {
        let mut history = vec![Arc::new(Message::user_text("p", "do it"))];
        for (i, len) in outputs.iter().enumerate() {
            history.extend(turn(i, *len));
        }
        history
    }

    #[test]
    fn old_outputs_go_recent_ones_stay() {
        let mut history = history(&[10_000, 10_000, 100, 10_000, 10_000]);
        let plan = plan_pruning(&history, 15_000, 1_000).unwrap();
        // The last result (and its call) is protected.
        assert_eq!(history[plan.through].id, "r3");
        assert_eq!(history[plan.first].id, "r0", "the first output pruned");
        assert_eq!(plan.results, 3, "the 100-byte output is not worth a marker");
        assert_eq!(apply_pruning(&mut history, plan.through), 3);
        let text = history[2].tool_results().next().unwrap().text_content();
        assert!(
            text.starts_with(PRUNED_PREFIX) && text.contains("2000 lines"),
            "{text}"
        );
        let output = |i: usize| history[i].tool_results().next().unwrap().text_content();
        assert!(output(6).starts_with("line"), "small: kept");
        assert!(output(8).starts_with(PRUNED_PREFIX));
        assert!(output(10).starts_with("line"), "recent: protected");
        // Ids and calls are untouched; nothing is pruned twice.
        assert_eq!(history[2].id, "r0");
        assert_eq!(history[1].tool_calls().count(), 1);
        assert_eq!(plan_pruning(&history, 15_000, 1_000), None);
        assert_eq!(apply_pruning(&mut history, plan.through), 0);
    }

    #[test]
    fn a_step_too_small_is_not_taken() {
        let history = history(&[600, 10_000]);
        assert_eq!(plan_pruning(&history, 10_500, 5_000), None);
        assert!(plan_pruning(&history, 10_500, 10).is_some());
        // Everything protected: nothing to prune.
        assert_eq!(plan_pruning(&history, 1_000_000, 0), None);
        // The latest round is protected even when it alone is over budget.
        let plan = plan_pruning(&history, 0, 0).unwrap();
        assert_eq!(history[plan.through].id, "r0");
    }
}
