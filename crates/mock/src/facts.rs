//! What a request looks like to a script: its API, turn number, tool results
//! and last message text, read from the body of each wire API.
//!
//! "Turn" means the same in every API: the number of earlier model answers in
//! the history. Anthropic and Chat histories hold one assistant message per
//! answer, so those are counted. A Responses answer is several input items
//! (reasoning, a message, function calls) and a Gemini answer may be split
//! over consecutive `model` contents, so there a run of consecutive model
//! items counts as one answer. Bodies missing the expected fields are turn 0
//! with no tool results, never an error: matching must not reject what the
//! provider might accept.

use serde_json::Value;

use crate::server::Api;

/// The facts about a request that [`crate::When`] conditions test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestFacts {
    pub api: Api,
    /// Earlier model answers in the history.
    pub turn: u32,
    /// Anthropic `tool_result` blocks in user messages, OpenAI Chat `tool`
    /// messages, Responses `*_call_output` items, Gemini `functionResponse`
    /// parts.
    pub tool_results: u32,
    /// The text of the last message: string content, text blocks and parts,
    /// and tool result content, joined by newlines.
    pub last_message_text: String,
}

impl RequestFacts {
    pub fn of(api: Api, body: &Value) -> Self {
        let (turn, tool_results, last_message_text) = match api {
            Api::Anthropic | Api::OpenAiChat => messages_facts(api, body),
            Api::OpenAiResponses => responses_facts(body),
            Api::Gemini => gemini_facts(body),
        };
        Self {
            api,
            turn: saturating_u32(turn),
            tool_results: saturating_u32(tool_results),
            last_message_text,
        }
    }
}

fn saturating_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn array<'a>(body: &'a Value, key: &str) -> &'a [Value] {
    body.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn str_field<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The number of runs of consecutive items for which `is_model` holds.
fn model_runs<'a>(
    items: impl Iterator<Item = &'a Value>,
    is_model: impl Fn(&Value) -> bool,
) -> usize {
    let mut runs = 0;
    let mut in_run = false;
    for item in items {
        let model = is_model(item);
        if model && !in_run {
            runs += 1;
        }
        in_run = model;
    }
    runs
}

fn messages_facts(api: Api, body: &Value) -> (usize, usize, String) {
    let messages = array(body, "messages");
    let turn = messages
        .iter()
        .filter(|m| str_field(m, "role") == Some("assistant"))
        .count();
    let tool_results = if api == Api::Anthropic {
        messages
            .iter()
            .filter(|m| str_field(m, "role") == Some("user"))
            .map(|m| {
                array(m, "content")
                    .iter()
                    .filter(|b| str_field(b, "type") == Some("tool_result"))
                    .count()
            })
            .sum()
    } else {
        messages
            .iter()
            .filter(|m| str_field(m, "role") == Some("tool"))
            .count()
    };
    let mut text = String::new();
    if let Some(content) = messages.last().and_then(|m| m.get("content")) {
        collect_text(content, &mut text);
    }
    (turn, tool_results, text)
}

fn responses_facts(body: &Value) -> (usize, usize, String) {
    let items = match body.get("input") {
        Some(Value::String(text)) => return (0, 0, text.clone()),
        _ => array(body, "input"),
    };
    // An item without a type is a message (the easy input form).
    let kind = |item: &Value| str_field(item, "type").unwrap_or("message").to_string();
    let turn = model_runs(items.iter(), |item| {
        let kind = kind(item);
        (kind == "message" && str_field(item, "role") == Some("assistant"))
            || kind == "reasoning"
            || kind.ends_with("_call")
    });
    let tool_results = items
        .iter()
        .filter(|item| kind(item).ends_with("_call_output"))
        .count();
    let mut text = String::new();
    if let Some(last) = items.last() {
        let content = if kind(last).ends_with("_call_output") {
            last.get("output")
        } else {
            last.get("content")
        };
        if let Some(content) = content {
            collect_text(content, &mut text);
        }
    }
    (turn, tool_results, text)
}

fn gemini_facts(body: &Value) -> (usize, usize, String) {
    let contents = array(body, "contents");
    let turn = model_runs(contents.iter(), |c| str_field(c, "role") == Some("model"));
    let tool_results = contents
        .iter()
        .filter(|c| str_field(c, "role") != Some("model"))
        .map(|c| {
            array(c, "parts")
                .iter()
                .filter(|p| p.get("functionResponse").is_some())
                .count()
        })
        .sum();
    let mut text = String::new();
    for part in contents
        .last()
        .map(|c| array(c, "parts"))
        .unwrap_or_default()
    {
        if let Some(part_text) = str_field(part, "text") {
            push_line(&mut text, part_text);
        }
        if let Some(response) = part.pointer("/functionResponse/response") {
            collect_strings(response, &mut text);
        }
    }
    (turn, tool_results, text)
}

/// Appends the text of a message's `content` (or a tool result's): a string,
/// or an array of blocks whose `text` and nested tool result `content` count.
fn collect_text(content: &Value, out: &mut String) {
    match content {
        Value::String(text) => push_line(out, text),
        Value::Array(blocks) => {
            for block in blocks {
                if let Some(text) = str_field(block, "text") {
                    push_line(out, text);
                }
                if str_field(block, "type") == Some("tool_result")
                    && let Some(inner) = block.get("content")
                {
                    collect_text(inner, out);
                }
            }
        }
        _ => {}
    }
}

/// Appends every string inside `value` (a Gemini function response is any
/// JSON object).
fn collect_strings(value: &Value, out: &mut String) {
    match value {
        Value::String(text) => push_line(out, text),
        Value::Array(values) => values.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

fn push_line(out: &mut String, text: &str) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(text);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
    fn responses_facts_count_runs_of_model_items() {
        let body = json!({"input": [
            {"role": "user", "content": "hi"},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
            {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "one"},
            {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "two"}]},
            {"type": "function_call", "call_id": "c3", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c3", "output": "three"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go on"}]}
        ]});
        let facts = RequestFacts::of(Api::OpenAiResponses, &body);
        assert_eq!((facts.turn, facts.tool_results), (2, 3));
        assert_eq!(facts.last_message_text, "go on");
        let tool_last = json!({"input": [
            {"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "c2", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "two"}]}
        ]});
        let facts = RequestFacts::of(Api::OpenAiResponses, &tool_last);
        assert_eq!((facts.turn, facts.tool_results), (1, 1));
        assert_eq!(facts.last_message_text, "two");
        let plain = RequestFacts::of(Api::OpenAiResponses, &json!({"input": "just text"}));
        assert_eq!(
            (plain.turn, plain.last_message_text.as_str()),
            (0, "just text")
        );
    }

    #[test]
    fn gemini_facts_count_model_contents_and_function_responses() {
        let body = json!({"contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "a", "args": {}}}, {"functionCall": {"name": "b", "args": {}}}]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "a", "response": {"output": "alpha"}}},
                {"functionResponse": {"name": "b", "response": {"error": {"message": "beta"}}}}
            ]}
        ]});
        let facts = RequestFacts::of(Api::Gemini, &body);
        assert_eq!((facts.turn, facts.tool_results), (1, 2));
        assert_eq!(facts.last_message_text, "alpha\nbeta");
        let split_answer = json!({"contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": [{"text": "a"}]},
            {"role": "model", "parts": [{"text": "b"}]},
            {"role": "user", "parts": [{"text": "more"}]}
        ]});
        let facts = RequestFacts::of(Api::Gemini, &split_answer);
        assert_eq!((facts.turn, facts.last_message_text.as_str()), (1, "more"));
    }
}
