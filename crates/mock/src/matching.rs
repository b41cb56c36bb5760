//! What a request looks like to a script, and the choice of the step that
//! answers it.
//!
//! Invariants:
//! - Only the request itself is looked at (never earlier requests), so several
//!   conversations may share one server; the one piece of server state is how
//!   often each step has answered (`times`).
//! - The choice and the use count are updated under one lock, so two
//!   concurrent requests never both take the last use of a step.

use serde_json::Value;

use crate::script::{Reply, Script, When};
use crate::server::Api;

/// The facts about a request that [`When`] conditions test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestFacts {
    /// Assistant messages in the history.
    pub turn: u32,
    /// Anthropic `tool_result` blocks in user messages / OpenAI `tool` messages.
    pub tool_results: u32,
    /// The text of the last message: string content, text blocks and tool
    /// result content, joined by newlines.
    pub last_message_text: String,
}

impl RequestFacts {
    pub fn of(api: Api, body: &Value) -> Self {
        let messages: &[Value] = body
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let turn = messages
            .iter()
            .filter(|m| role(m) == Some("assistant"))
            .count();
        let tool_results: usize = match api {
            Api::Anthropic => messages
                .iter()
                .filter(|m| role(m) == Some("user"))
                .filter_map(|m| m.get("content").and_then(Value::as_array))
                .map(|blocks| {
                    blocks
                        .iter()
                        .filter(|b| block_type(b) == Some("tool_result"))
                        .count()
                })
                .sum(),
            Api::OpenAiChat => messages.iter().filter(|m| role(m) == Some("tool")).count(),
        };
        let mut last_message_text = String::new();
        if let Some(content) = messages.last().and_then(|m| m.get("content")) {
            collect_text(content, &mut last_message_text);
        }
        Self {
            turn: saturating_u32(turn),
            tool_results: saturating_u32(tool_results),
            last_message_text,
        }
    }
}

fn saturating_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

fn block_type(block: &Value) -> Option<&str> {
    block.get("type").and_then(Value::as_str)
}

/// Appends the text of a message's `content` (or a tool result's): a string,
/// or an array of blocks whose `text` and nested `content` count.
fn collect_text(content: &Value, out: &mut String) {
    match content {
        Value::String(text) => push_line(out, text),
        Value::Array(blocks) => {
            for block in blocks {
                if let Some(text) = block.get("text").and_then(Value::as_str) {
                    push_line(out, text);
                }
                if block_type(block) == Some("tool_result")
                    && let Some(inner) = block.get("content")
                {
                    collect_text(inner, out);
                }
            }
        }
        _ => {}
    }
}

fn push_line(out: &mut String, text: &str) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(text);
}

impl When {
    pub(crate) fn matches(&self, facts: &RequestFacts, raw_body: &str) -> bool {
        self.turn.is_none_or(|t| t == facts.turn)
            && self.tool_results.is_none_or(|n| n == facts.tool_results)
            && self
                .last_message_contains
                .as_deref()
                .is_none_or(|s| facts.last_message_text.contains(s))
            && self
                .body_contains
                .as_deref()
                .is_none_or(|s| raw_body.contains(s))
    }
}

/// A script with the use count of each step.
#[derive(Debug, Default)]
pub(crate) struct ScriptState {
    script: Script,
    used: Vec<u32>,
}

impl ScriptState {
    pub fn new(script: Script) -> Self {
        let used = vec![0; script.steps.len()];
        Self { script, used }
    }

    /// The reply of the first matching step that is not used up, counting the
    /// use; `None` when no step answers.
    pub fn take_reply(&mut self, facts: &RequestFacts, raw_body: &str) -> Option<Reply> {
        let (index, step) = self.script.steps.iter().enumerate().find(|(i, step)| {
            let used = self.used.get(*i).copied().unwrap_or(0);
            step.times.is_none_or(|times| used < times) && step.when.matches(facts, raw_body)
        })?;
        if let Some(used) = self.used.get_mut(index) {
            *used = used.saturating_add(1);
        }
        Some(step.reply.clone())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::script::{Item, Step, StreamReply};

    #[test]
    fn anthropic_facts_count_assistants_and_tool_result_blocks() {
        let body = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "first"},
                {"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "second"}]},
                {"type": "text", "text": "and more"}
            ]}
        ]});
        let facts = RequestFacts::of(Api::Anthropic, &body);
        assert_eq!(facts.turn, 1);
        assert_eq!(facts.tool_results, 2);
        assert_eq!(facts.last_message_text, "first\nsecond\nand more");
    }

    #[test]
    fn openai_facts_count_tool_messages() {
        let body = json!({"messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "tool", "tool_call_id": "c", "content": "out"},
            {"role": "tool", "tool_call_id": "d", "content": "put"}
        ]});
        let facts = RequestFacts::of(Api::OpenAiChat, &body);
        assert_eq!((facts.turn, facts.tool_results), (1, 2));
        assert_eq!(facts.last_message_text, "put");
        // A body without messages is turn 0, not an error.
        let empty = RequestFacts::of(Api::OpenAiChat, &json!({}));
        assert_eq!((empty.turn, empty.tool_results), (0, 0));
    }

    #[test]
    fn steps_are_used_up_in_order() {
        let limited = Step {
            times: Some(1),
            ..Step::on_turn(0, vec![Item::Text("once".into())])
        };
        let fallback = Step::on_turn(0, vec![Item::Text("again".into())]);
        let mut state = ScriptState::new(Script {
            steps: vec![limited, fallback],
        });
        let facts = RequestFacts::of(Api::Anthropic, &json!({"messages": []}));
        let text = |reply: Option<Reply>| match reply {
            Some(Reply::Stream(StreamReply { items, .. })) => items,
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(
            text(state.take_reply(&facts, "")),
            vec![Item::Text("once".into())]
        );
        assert_eq!(
            text(state.take_reply(&facts, "")),
            vec![Item::Text("again".into())]
        );
        assert_eq!(
            text(state.take_reply(&facts, "")),
            vec![Item::Text("again".into())]
        );
        let later = RequestFacts { turn: 3, ..facts };
        assert!(state.take_reply(&later, "").is_none());
    }
}
