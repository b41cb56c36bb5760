//! The mock server's scripts for each scenario (JSON, the format of
//! `gyre mock-server --script`).
//!
//! Every step after the first also requires the previous tool result to
//! contain what the tool should have produced (`last_message_contains`). A tool
//! that failed therefore makes the next request match no step, the mock answers
//! 400 and the run fails loudly, instead of timing a session whose tools were
//! silently erroring.

use serde_json::{Value, json};

/// The file the 3-step task reads, and its content.
pub const TASK_NOTES_FILE: &str = "notes.txt";
pub const TASK_NOTES_TEXT: &str = "bench notes: build the thing\n";
/// The file the task's bash step writes, and what it must contain.
pub const TASK_OUTPUT_FILE: &str = "out.txt";
pub const TASK_OUTPUT_TEXT: &str = "built\n";
/// The answer that ends every scripted session.
pub const FINAL_ANSWER: &str = "Done.";

/// The small file each turn of a long session reads, and its content.
pub const SMALL_FILE: &str = "small.txt";
pub const SMALL_FILE_TEXT: &str = "a small file for the loop benchmark\n";

/// Read a file, run a bash command that writes a file, answer.
pub fn three_step_task() -> Value {
    json!({"steps": [
        {"when": {"turn": 0}, "reply": {"items": [
            {"text": "Let me read the notes."},
            {"tool_call": {"name": "read", "arguments": {"file_path": TASK_NOTES_FILE}}}
        ]}},
        {"when": {"turn": 1, "last_message_contains": "build the thing"}, "reply": {"items": [
            {"tool_call": {"name": "bash", "arguments": {
                "command": format!("echo built > {TASK_OUTPUT_FILE}")
            }}}
        ]}},
        {"when": {"turn": 2}, "reply": {"items": [{"text": FINAL_ANSWER}]}}
    ]})
}

/// `read_turns` turns that each read [`SMALL_FILE`], then a final text answer:
/// `read_turns + 1` model requests in all. Each read's `limit` (past the
/// file's end) differs, so the loop guard sees work, not one call repeated.
pub fn read_loop(read_turns: u32) -> Value {
    let mut steps: Vec<Value> = (0..read_turns)
        .map(|turn| {
            let read = json!({"items": [
                {"tool_call": {"name": "read", "arguments": {"file_path": SMALL_FILE, "limit": 1000 + turn}}}
            ]});
            json!({"when": when_after_read(turn), "reply": read})
        })
        .collect();
    steps.push(json!({
        "when": when_after_read(read_turns),
        "reply": {"items": [{"text": FINAL_ANSWER}]}
    }));
    json!({ "steps": steps })
}

fn when_after_read(turn: u32) -> Value {
    if turn == 0 {
        json!({"turn": 0})
    } else {
        json!({"turn": turn, "last_message_contains": "loop benchmark"})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gyre_mock::{Item, Reply, Script};

    fn parse(script: &Value) -> Script {
        Script::from_json_str(&script.to_string()).expect("the mock accepts the script")
    }

    fn items(step: &gyre_mock::Step) -> &[Item] {
        match &step.reply {
            Reply::Stream(reply) => &reply.items,
            Reply::Http(_) => panic!("a model answer"),
        }
    }

    #[test]
    fn the_task_script_reads_runs_bash_then_answers() {
        let script = parse(&three_step_task());
        assert_eq!(script.steps.len(), 3);
        let turns: Vec<_> = script.steps.iter().map(|s| s.when.turn).collect();
        assert_eq!(turns, [Some(0), Some(1), Some(2)]);
        assert!(
            items(&script.steps[0])
                .iter()
                .any(|i| matches!(i, Item::ToolCall { name, .. } if name == "read"))
        );
        assert!(matches!(
            &items(&script.steps[1])[0],
            Item::ToolCall { name, arguments, .. }
                if name == "bash" && arguments["command"] == "echo built > out.txt"
        ));
        assert_eq!(items(&script.steps[2]), [Item::Text(FINAL_ANSWER.into())]);
        assert!(TASK_NOTES_TEXT.contains("build the thing"));
    }

    #[test]
    fn the_read_loop_has_one_step_per_turn_and_ends_with_text() {
        let script = parse(&read_loop(49));
        assert_eq!(script.steps.len(), 50);
        for (turn, step) in script.steps.iter().enumerate() {
            assert_eq!(step.when.turn, Some(turn as u32));
            if turn > 0 {
                let wanted = step.when.last_message_contains.as_deref().expect("guarded");
                assert!(SMALL_FILE_TEXT.contains(wanted));
            }
        }
        assert!(script.steps[..49].iter().all(|s| matches!(
            items(s),
            [Item::ToolCall { name, .. }] if name == "read"
        )));
        assert_eq!(items(&script.steps[49]), [Item::Text(FINAL_ANSWER.into())]);

        let one_turn = parse(&read_loop(0));
        assert_eq!(one_turn.steps.len(), 1);
        assert_eq!(one_turn.steps[0].when.last_message_contains, None);
    }
}
