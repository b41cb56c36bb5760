//! The calls a headless run refused ([`Denials`]): Claude Code's
//! `permission_denials` of the result object (`tool_name`, `tool_use_id`,
//! `tool_input`), and the stderr line a `text` run prints for each, so that
//! a run whose every edit was refused does not look like a success.
//!
//! A refusal is a tool result that core marks with
//! [`gyre_core::permissions::DENIED_PREFIX`] (a deny rule, a mode, a
//! headless ask, a prompt tool's or a person's no); a hook's block or a
//! failing tool is not one. Only the run's own calls count, not its
//! subagents' (each has its own session and result). Pure: no IO here.

use std::collections::HashMap;

use gyre_core::permissions::DENIED_PREFIX;
use gyre_protocol::Event;
use serde_json::{Value, json};

/// One refused call.
#[derive(Debug, Clone, PartialEq)]
pub struct Denial {
    pub tool_name: String,
    pub tool_use_id: String,
    pub tool_input: Value,
    /// Why, as the model was told (it names what would allow the call).
    pub reason: String,
}

impl Denial {
    /// Claude Code's shape of a `permission_denials` entry.
    pub fn json(&self) -> Value {
        json!({
            "tool_name": self.tool_name,
            "tool_use_id": self.tool_use_id,
            "tool_input": self.tool_input,
        })
    }

    /// One line for stderr: the call's target and why it was refused.
    pub fn line(&self) -> String {
        let target = ["command", "file_path", "path", "url", "pattern"]
            .iter()
            .find_map(|key| self.tool_input.get(key).and_then(Value::as_str));
        match target {
            Some(target) => format!(
                "gyre: refused {} `{target}`: {}",
                self.tool_name, self.reason
            ),
            None => format!("gyre: refused {}: {}", self.tool_name, self.reason),
        }
    }
}

/// The refusals of a run, gathered from its events.
#[derive(Debug, Default)]
pub struct Denials {
    /// The run's calls by id, with their input, until their result.
    calls: HashMap<String, Value>,
    denied: Vec<Denial>,
}

impl Denials {
    /// Notes `event`; the refusal it completes, if it is one.
    pub fn observe(&mut self, event: &Event) -> Option<&Denial> {
        match event {
            Event::ToolCallReady { call } => {
                let input = call.arguments_json().unwrap_or(Value::Null);
                self.calls.insert(call.id.clone(), input);
                None
            }
            Event::ToolResult { result, .. } => {
                let input = self.calls.remove(&result.call_id);
                let text = result.text_content();
                let reason = text
                    .strip_prefix(DENIED_PREFIX)
                    .filter(|_| result.is_error)?;
                self.denied.push(Denial {
                    tool_name: result.name.clone(),
                    tool_use_id: result.call_id.clone(),
                    tool_input: input.unwrap_or(Value::Null),
                    reason: reason.to_string(),
                });
                self.denied.last()
            }
            _ => None,
        }
    }

    /// `permission_denials` of the result object.
    pub fn json(&self) -> Value {
        Value::Array(self.denied.iter().map(Denial::json).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gyre_protocol::{Outcome, ToolCall, ToolResult};

    #[test]
    fn refusals_are_gathered_with_their_input_and_other_errors_are_not() {
        let mut denials = Denials::default();
        let call = |id: &str, arguments: &str| Event::ToolCallReady {
            call: ToolCall {
                id: id.into(),
                name: "bash".into(),
                arguments: arguments.into(),
                signature: None,
            },
        };
        let result = |id: &str, text: &str| Event::ToolResult {
            title: String::new(),
            result: ToolResult::text(id, "bash", text, Outcome::Error),
        };
        denials.observe(&call("c1", r#"{"command": "mkdir d"}"#));
        denials.observe(&call("c2", r#"{"command": "false"}"#));
        let line = denials
            .observe(&result("c1", &format!("{DENIED_PREFIX}not allowed")))
            .unwrap()
            .line();
        assert_eq!(line, "gyre: refused bash `mkdir d`: not allowed");
        assert!(denials.observe(&result("c2", "exit code 1")).is_none());
        assert_eq!(
            denials.json(),
            json!([{"tool_name": "bash", "tool_use_id": "c1", "tool_input": {"command": "mkdir d"}}])
        );
    }
}
