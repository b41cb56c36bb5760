//! A generated session history of a given size, shaped like a coding
//! session: tasks that start with a user prompt, go through 3–8 rounds of an
//! assistant message (short text and one tool call) and a user message with
//! its tool result (1–8 KB of numbered code-like lines, now and then an
//! error), and end with an assistant answer.
//!
//! Invariants:
//! - Deterministic (see `rng`): the same size gives the same history.
//! - Valid as gyre stores it: roles alternate user/assistant, every tool
//!   call is answered by exactly one result with its id in the next message,
//!   ids are unique, arguments are valid JSON, and the history ends with an
//!   assistant answer (so a new prompt can follow it).
//! - The text needs what real text needs on the wire: quotes, backslashes,
//!   tabs, newlines and non-ASCII characters (JSON escapes, UTF-8).
//! - Its size ([`text_bytes`]) counts what the model reads: text, call names
//!   and arguments, result text; not ids or JSON framing.
//!
//! [`rounds`] makes the other shape the `store` group writes: one prompt and
//! then a given number of rounds (assistant text and one call, a ~2 KB
//! result), with no closing answer, so the caller decides how it ends.

use gyre_protocol::{Message, Outcome, Part, Role, ToolCall, ToolResult};
use serde_json::json;

use crate::rng::Rng;

const PROSE: &[&str] = &[
    "the",
    "test",
    "fails",
    "because",
    "parser",
    "returns",
    "an",
    "error",
    "when",
    "input",
    "is",
    "empty",
    "so",
    "I",
    "will",
    "check",
    "`Result`",
    "handling",
    "in",
    "the",
    "module",
    "and",
    "then",
    "run",
    "cargo",
    "test",
    "again",
    "—",
    "naïve",
    "café",
    "path\\to\\file",
    "\"quoted\"",
    "it",
    "looks",
    "like",
    "config",
    "value",
    "is",
    "read",
    "twice",
    "→",
    "fix",
    "that",
    "first",
];

const CODE: &[&str] = &[
    "fn parse(input: &str) -> Result<Config, Error> {",
    "    let value = input.trim();",
    "    if value.is_empty() {",
    "        return Err(Error::Empty(\"config\".into()));",
    "    }",
    "\tlog::debug!(\"parsed {} bytes → {:?}\", n, kind);",
    "    let path = r\"C:\\Users\\dev\\file.txt\";",
    "    // naïve: the café's menu is read twice",
    "    match self.state { State::Ready => {}, _ => unreachable!() }",
    "impl<T: Clone> Cache<T> for Store {",
    "    assert_eq!(parse(\"a = 1\")?, Config { a: 1 });",
    "error[E0308]: mismatched types --> src/parser.rs:42:17",
    "test parser::tests::empty_input ... FAILED",
    "}",
    "",
];

const PATHS: &[&str] = &[
    "src/parser.rs",
    "src/config.rs",
    "src/main.rs",
    "crates/core/src/run.rs",
    "tests/it/parser.rs",
    "README.md",
];

/// A history whose [`text_bytes`] is at least `target_bytes` (it stops at
/// the end of the task that reaches it).
pub fn generate(target_bytes: usize, seed: u64) -> Vec<Message> {
    let mut rng = Rng::new(seed);
    let mut ids = Ids::default();
    let mut messages = Vec::new();
    let mut size = 0;
    while size < target_bytes {
        let task = task(&mut rng, &mut ids);
        size += task.iter().map(text_bytes_of).sum::<usize>();
        messages.extend(task);
    }
    messages
}

/// A prompt and `count` rounds, each an assistant message (text and one
/// tool call) and a user message with its result of 1.5–2.5 KB (an error
/// now and then, as in [`generate`]).
pub fn rounds(count: usize, seed: u64) -> Vec<Message> {
    let mut rng = Rng::new(seed);
    let mut ids = Ids::default();
    let mut out = Vec::with_capacity(1 + 2 * count);
    out.push(Message::new(
        ids.message(),
        Role::User,
        vec![Part::text(prose(&mut rng, 100, 400))],
    ));
    for _ in 0..count {
        out.extend(round(&mut rng, &mut ids, (1_500, 2_500)));
    }
    out
}

/// The text the model reads: text parts, call names and arguments, result
/// text.
pub fn text_bytes(messages: &[Message]) -> usize {
    messages.iter().map(text_bytes_of).sum()
}

fn text_bytes_of(message: &Message) -> usize {
    message
        .parts
        .iter()
        .map(|part| match part {
            Part::Text { text } | Part::Reasoning { text, .. } => text.len(),
            Part::ToolCall(call) => call.name.len() + call.arguments.len(),
            Part::ToolResult(result) => result.text_content().len(),
            Part::Image { data, .. } => data.len(),
        })
        .sum()
}

#[derive(Default)]
struct Ids {
    messages: usize,
    calls: usize,
}

impl Ids {
    fn message(&mut self) -> String {
        self.messages += 1;
        format!("bench-msg-{:07}", self.messages)
    }
    fn call(&mut self) -> String {
        self.calls += 1;
        format!("toolu_bench{:07}", self.calls)
    }
}

fn task(rng: &mut Rng, ids: &mut Ids) -> Vec<Message> {
    let mut out = vec![Message::new(
        ids.message(),
        Role::User,
        vec![Part::text(prose(rng, 100, 400))],
    )];
    for _ in 0..rng.range(3, 9) {
        out.extend(round(rng, ids, (1_000, 8_000)));
    }
    out.push(Message::new(
        ids.message(),
        Role::Assistant,
        vec![Part::text(prose(rng, 300, 1_500))],
    ));
    out
}

/// An assistant message (text and one call) and the user message with its
/// result, of `result_len.0..result_len.1` bytes unless it is an error.
fn round(rng: &mut Rng, ids: &mut Ids, result_len: (usize, usize)) -> [Message; 2] {
    let (name, arguments) = call_arguments(rng);
    let call = ToolCall::new(ids.call(), name, arguments);
    let outcome = if rng.range(0, 20) == 0 {
        Outcome::Error
    } else {
        Outcome::Success
    };
    let output = match outcome {
        Outcome::Error => format!("Error: {}", prose(rng, 60, 200)),
        Outcome::Success => {
            let len = rng.range(result_len.0, result_len.1);
            numbered_lines(rng, len)
        }
    };
    let result = ToolResult::text(&call.id, name, output, outcome);
    [
        Message::new(
            ids.message(),
            Role::Assistant,
            vec![Part::text(prose(rng, 80, 500)), Part::ToolCall(call)],
        ),
        Message::new(ids.message(), Role::User, vec![Part::ToolResult(result)]),
    ]
}

/// Words until the text is `low..high` bytes long (about).
fn prose(rng: &mut Rng, low: usize, high: usize) -> String {
    let len = rng.range(low, high);
    let mut text = String::with_capacity(len + 16);
    while text.len() < len {
        if !text.is_empty() {
            text.push(if rng.range(0, 12) == 0 { '\n' } else { ' ' });
        }
        let word = *rng.pick(PROSE);
        text.push_str(word);
    }
    text
}

/// `read`-style output: numbered lines up to about `len` bytes.
fn numbered_lines(rng: &mut Rng, len: usize) -> String {
    let mut text = String::with_capacity(len + 100);
    let mut line = rng.range(1, 400);
    while text.len() < len {
        text.push_str(&format!("{line:>6}\t{}\n", rng.pick(CODE)));
        line += 1;
    }
    text
}

fn call_arguments(rng: &mut Rng) -> (&'static str, String) {
    let path = *rng.pick(PATHS);
    let (name, arguments) = match rng.range(0, 4) {
        0 => ("read", json!({"file_path": path})),
        1 => (
            "grep",
            json!({"pattern": "fn parse\\(", "path": "src", "output_mode": "content"}),
        ),
        2 => (
            "bash",
            json!({"command": "cargo test -p parser 2>&1 | tail -n 40", "timeout_ms": 120000}),
        ),
        _ => (
            "edit",
            json!({
                "file_path": path,
                "old_string": rng.pick(CODE),
                "new_string": format!("{}\n    // checked", rng.pick(CODE)),
            }),
        ),
    };
    (name, arguments.to_string())
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn reaches_its_size_and_is_a_valid_history() {
        let history = generate(200_000, 1);
        let size = text_bytes(&history);
        assert!((200_000..260_000).contains(&size), "{size}");
        assert_eq!(history, generate(200_000, 1));
        assert_eq!(history.first().map(|m| m.role), Some(Role::User));
        assert_eq!(history.last().map(|m| m.role), Some(Role::Assistant));
        for pair in history.windows(2) {
            assert_ne!(pair[0].role, pair[1].role, "roles alternate");
            let calls: Vec<&str> = pair[0].tool_calls().map(|c| c.id.as_str()).collect();
            let results: Vec<&str> = pair[1].tool_results().map(|r| r.call_id.as_str()).collect();
            assert_eq!(calls, results, "every call answered in the next message");
        }
        let ids: HashSet<&str> = history.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids.len(), history.len());
        for call in history.iter().flat_map(|m| m.tool_calls()) {
            assert!(call.arguments_json().is_some(), "{}", call.arguments);
        }
        let all: String = history.iter().map(|m| format!("{m:?}")).collect();
        assert!(all.contains('é') && all.contains("\\t") && all.contains("\\\""));
    }

    #[test]
    fn rounds_are_a_prompt_then_call_and_result_pairs() {
        let history = rounds(50, 2);
        assert_eq!(history.len(), 101);
        assert_eq!(history, rounds(50, 2));
        assert_eq!(history[0].role, Role::User);
        for pair in history[1..].chunks(2) {
            assert_eq!(pair[0].role, Role::Assistant);
            assert_eq!(pair[0].parts.len(), 2);
            let calls: Vec<&str> = pair[0].tool_calls().map(|c| c.id.as_str()).collect();
            let results: Vec<&str> = pair[1].tool_results().map(|r| r.call_id.as_str()).collect();
            assert_eq!(calls, results);
        }
        let per_round = (text_bytes(&history) - text_bytes(&history[..1])) / 50;
        assert!((1_500..3_500).contains(&per_round), "{per_round}");
    }
}
