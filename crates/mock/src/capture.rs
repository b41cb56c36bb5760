//! Values a scripted tool call takes from the request it answers, for
//! conversations whose next call needs an id the agent made up (a
//! subagent's task id, say).
//!
//! In a tool call's `arguments`, a string value `"$after:PREFIX"` is
//! replaced by the id that follows the last occurrence of `PREFIX` in the
//! raw request body: the run of ASCII letters, digits, `-` and `_` right
//! after it. With no occurrence the value is left as written, so a script
//! that expects one fails visibly in the agent, not here.

use serde_json::Value;

use crate::script::{Item, Reply};

const MARKER: &str = "$after:";

/// `reply` with every `$after:` value of its tool calls resolved against
/// `raw_body`.
pub(crate) fn resolve(mut reply: Reply, raw_body: &str) -> Reply {
    if let Reply::Stream(stream) = &mut reply {
        for item in &mut stream.items {
            if let Item::ToolCall { arguments, .. } = item {
                resolve_value(arguments, raw_body);
            }
        }
    }
    reply
}

fn resolve_value(value: &mut Value, raw_body: &str) {
    match value {
        Value::String(text) => {
            if let Some(prefix) = text.strip_prefix(MARKER)
                && let Some(id) = id_after(raw_body, prefix)
            {
                *text = id.to_string();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| resolve_value(v, raw_body)),
        Value::Object(map) => map.values_mut().for_each(|v| resolve_value(v, raw_body)),
        _ => {}
    }
}

fn id_after<'a>(raw_body: &'a str, prefix: &str) -> Option<&'a str> {
    let start = raw_body.rfind(prefix)? + prefix.len();
    let rest = &raw_body[start..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::StreamReply;
    use serde_json::json;

    #[test]
    fn ids_are_taken_from_the_last_occurrence() {
        let reply = Reply::Stream(StreamReply {
            items: vec![Item::ToolCall {
                id: None,
                name: "task".into(),
                arguments: json!({"resume": "$after:task_id: ", "keep": "$after:absent", "n": 1}),
                fragments: None,
            }],
            ..StreamReply::default()
        });
        let body = r#"{"x":"(task_id: old-1; …)","y":"(task_id: 0199ab_c-d; more)"}"#;
        let Reply::Stream(resolved) = resolve(reply, body) else {
            panic!("a stream reply");
        };
        let Item::ToolCall { arguments, .. } = &resolved.items[0] else {
            panic!("a tool call");
        };
        assert_eq!(
            arguments,
            &json!({"resume": "0199ab_c-d", "keep": "$after:absent", "n": 1})
        );
    }
}
