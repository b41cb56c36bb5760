//! The diff a permission request for `write`, `edit` or `multi_edit`
//! shows: the whole file before and after, so the editor can show it in
//! place.
//!
//! Invariants: pure (the caller reads the file); the replacement is the
//! plain one (exact text; `replace_all` replaces every occurrence, else the
//! first); when the text cannot be worked out this way (no file, an
//! `old_string` the tool will match leniently), the replaced snippets are
//! shown instead, never nothing.

use std::path::Path;

use agent_client_protocol::v1::schema::{Diff, ToolCallContent};
use gyre_protocol::ToolCall;
use serde_json::Value;

/// The diff of `call` on the file at `path`, whose text is `before`.
pub fn whole(call: &ToolCall, path: &Path, before: Option<&str>) -> Vec<ToolCallContent> {
    let Some(args) = call.arguments_json() else {
        return Vec::new();
    };
    let text =
        |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    let edits: Vec<(String, String, bool)> = match call.name.as_str() {
        "write" => {
            let Some(content) = text(&args, "content") else {
                return Vec::new();
            };
            return vec![
                Diff::new(path, content)
                    .old_text(before.map(str::to_string))
                    .into(),
            ];
        }
        "edit" => match (text(&args, "old_string"), text(&args, "new_string")) {
            (Some(old), Some(new)) => vec![(old, new, replace_all(&args))],
            _ => return Vec::new(),
        },
        "multi_edit" => args
            .get("edits")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|e| {
                Some((
                    text(e, "old_string")?,
                    text(e, "new_string")?,
                    replace_all(e),
                ))
            })
            .collect(),
        _ => return Vec::new(),
    };
    if let Some(before) = before
        && let Some(after) = apply(before, &edits)
    {
        return vec![Diff::new(path, after).old_text(before.to_string()).into()];
    }
    edits
        .into_iter()
        .map(|(old, new, _)| Diff::new(path, new).old_text(old).into())
        .collect()
}

fn replace_all(args: &Value) -> bool {
    args.get("replace_all")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// `before` with `edits` applied in order; `None` when one does not match
/// exactly.
fn apply(before: &str, edits: &[(String, String, bool)]) -> Option<String> {
    let mut text = before.to_string();
    for (old, new, all) in edits {
        if old.is_empty() || !text.contains(old.as_str()) {
            return None;
        }
        text = if *all {
            text.replace(old.as_str(), new)
        } else {
            text.replacen(old.as_str(), new, 1)
        };
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wire(content: &[ToolCallContent]) -> Value {
        serde_json::to_value(content).unwrap()
    }

    #[test]
    fn an_edit_shows_the_whole_file_before_and_after() {
        let call = ToolCall::new(
            "c",
            "edit",
            json!({"file_path": "a", "old_string": "b", "new_string": "B"}).to_string(),
        );
        let shown = wire(&whole(&call, Path::new("/w/a"), Some("abc b\n")));
        assert_eq!(
            shown,
            json!([{"type": "diff", "path": "/w/a", "oldText": "abc b\n", "newText": "aBc b\n"}])
        );
        // Not matched exactly: the snippet.
        let shown = wire(&whole(&call, Path::new("/w/a"), Some("xyz\n")));
        assert_eq!(shown[0]["oldText"], "b");
    }

    #[test]
    fn multi_edit_applies_in_order_and_write_of_a_new_file_has_no_old_text() {
        let call = ToolCall::new(
            "c",
            "multi_edit",
            json!({"file_path": "a", "edits": [
                {"old_string": "1", "new_string": "2"},
                {"old_string": "2", "new_string": "3", "replace_all": true}]})
            .to_string(),
        );
        let shown = wire(&whole(&call, Path::new("/w/a"), Some("1 2\n")));
        assert_eq!(shown[0]["newText"], "3 3\n");
        let write = ToolCall::new(
            "c",
            "write",
            json!({"file_path": "n", "content": "x"}).to_string(),
        );
        assert_eq!(
            wire(&whole(&write, Path::new("/w/n"), None)),
            json!([{"type": "diff", "path": "/w/n", "newText": "x"}])
        );
    }
}
