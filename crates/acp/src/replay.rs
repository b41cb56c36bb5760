//! A stored conversation as the `session/update`s an editor shows when it
//! loads the session (`session/load`).
//!
//! Invariants:
//! - Every message of the store is replayed, the turns before a compact
//!   boundary too: the editor shows what the user saw, not what the model
//!   is sent. gyre's own notices and summaries are not the conversation and
//!   are left out.
//! - Each tool call appears once as a `tool_call` and ends with its final
//!   status (`completed` / `failed`, with its result or diff); a call the
//!   store holds no result for (a run that was killed) ends `failed`.

use std::path::PathBuf;

use agent_client_protocol::v1::schema::SessionUpdate;
use gyre_protocol::{Message, Part, Role};

use super::updates::{Updates, agent_text, agent_thought, interrupted, user_text};

/// The updates that replay `messages` (in store order).
pub fn replay(messages: &[Message], root: PathBuf) -> Vec<SessionUpdate> {
    let mut updates = Updates::new(root);
    let mut out = Vec::new();
    for message in messages.iter().filter(|m| m.origin.is_conversation()) {
        for part in &message.parts {
            match (message.role, part) {
                (Role::User, Part::Text { text }) if !text.is_empty() => out.push(user_text(text)),
                (Role::Assistant, Part::Text { text }) if !text.is_empty() => {
                    out.push(agent_text(text))
                }
                (
                    Role::Assistant,
                    Part::Reasoning {
                        text,
                        redacted: false,
                        ..
                    },
                ) if !text.is_empty() => out.push(agent_thought(text)),
                (_, Part::ToolCall(call)) => out.push(updates.whole(call)),
                (_, Part::ToolResult(result)) => out.push(updates.finished(result)),
                _ => {}
            }
        }
    }
    out.extend(updates.unanswered().iter().map(|id| interrupted(id)));
    out
}

#[cfg(test)]
mod tests {

    use super::*;
    use gyre_protocol::{Origin, Outcome, ToolCall, ToolResult};
    use serde_json::{Value, json};

    #[test]
    fn a_conversation_replays_in_order_with_final_statuses() {
        let messages = vec![
            Message::user_text("u1", "fix it"),
            Message::new(
                "a1",
                Role::Assistant,
                vec![
                    Part::Reasoning {
                        text: "hmm".into(),
                        signature: None,
                        redacted: false,
                    },
                    Part::text("Writing."),
                    Part::ToolCall(ToolCall::new(
                        "c1",
                        "write",
                        json!({"file_path": "a.txt", "content": "A"}).to_string(),
                    )),
                    Part::ToolCall(ToolCall::new("c2", "bash", r#"{"command":"sleep 30"}"#)),
                ],
            ),
            Message::new(
                "u2",
                Role::User,
                vec![Part::ToolResult(ToolResult::text(
                    "c1",
                    "write",
                    "wrote a.txt",
                    Outcome::Success,
                ))],
            ),
            Message::user_text("n1", "<system-reminder>go on</system-reminder>")
                .with_origin(Origin::Gyre),
        ];
        let wire: Vec<Value> = replay(&messages, PathBuf::from("/w"))
            .iter()
            .map(|u| serde_json::to_value(u).unwrap())
            .collect();
        let kinds: Vec<&str> = wire
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_thought_chunk",
                "agent_message_chunk",
                "tool_call",
                "tool_call",
                "tool_call_update",
                "tool_call_update"
            ]
        );
        assert_eq!(wire[0]["content"]["text"], "fix it");
        assert_eq!(wire[3]["title"], "Write a.txt");
        assert_eq!(wire[5]["toolCallId"], "c1");
        assert_eq!(wire[5]["status"], "completed");
        assert_eq!(wire[5]["content"][0]["type"], "diff");
        // The bash call never got a result: it ends failed.
        assert_eq!(wire[6]["toolCallId"], "c2");
        assert_eq!(wire[6]["status"], "failed");
    }
}
