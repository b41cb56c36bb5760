//! What a tool call looks like in one line: a summary of its arguments, how
//! its result ended, and the diff an edit makes.
//!
//! Arguments are parsed once, when the call is ready; the cell keeps the
//! summary and a bounded diff, never the raw arguments (a `write` of a large
//! file would otherwise stay in memory twice).

use gyre_protocol::{ToolCall, ToolResult};
use serde_json::Value;

use crate::render::diff::DiffPreview;
use crate::render::text::{first_line, truncate_chars};
use crate::transcript::ToolState;

/// Characters kept of a one-line summary (the view cuts it to the width).
const SUMMARY_CHARS: usize = 200;

/// One line saying what `call` does: the command, the path, the pattern.
pub fn summarize_call(call: &ToolCall) -> String {
    let Some(args) = call.arguments_json() else {
        return truncate_chars(first_line(&call.arguments), SUMMARY_CHARS);
    };
    let field = |name: &str| args.get(name).and_then(Value::as_str);
    let text = match call.name.as_str() {
        "bash" => field("command").map(str::to_string),
        "read" | "write" | "edit" | "multi_edit" => field("file_path").map(str::to_string),
        "grep" => field("pattern").map(|p| match field("path") {
            Some(path) => format!("{p}  in {path}"),
            None => p.to_string(),
        }),
        "glob" => field("pattern").map(str::to_string),
        "ls" => Some(field("path").unwrap_or(".").to_string()),
        "web_fetch" => field("url").map(str::to_string),
        "task" => field("description").map(|d| match field("agent") {
            Some(agent) => format!("{agent}: {d}"),
            None => d.to_string(),
        }),
        "todo_write" => args
            .get("todos")
            .and_then(Value::as_array)
            .map(|todos| format!("{} items", todos.len())),
        "bash_output" | "kill_shell" | "task_output" => field("id")
            .or_else(|| field("shell_id"))
            .or_else(|| field("task_id"))
            .map(str::to_string),
        _ => None,
    };
    let text = text.unwrap_or_else(|| generic_summary(&args));
    truncate_chars(first_line(&text), SUMMARY_CHARS)
}

/// `key=value` pairs of the scalar arguments, for tools without a rule.
fn generic_summary(args: &Value) -> String {
    let Some(map) = args.as_object() else {
        return String::new();
    };
    let mut out = String::new();
    for (key, value) in map {
        let value = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => continue,
        };
        if !out.is_empty() {
            out.push_str(", ");
        }
        out.push_str(key);
        out.push('=');
        out.push_str(first_line(&value));
        if out.len() > SUMMARY_CHARS {
            break;
        }
    }
    out
}

/// How a result ended. The loop words refusals and cancellations in fixed
/// ways (`permission denied: …`, `interrupted: …`, and the tools' `the
/// call was cancelled` when Esc or an abort stopped it), which is all a
/// result says about them.
pub fn classify_result(result: &ToolResult) -> ToolState {
    if !result.is_error {
        return ToolState::Done;
    }
    let text = result.text_content();
    let text = text.trim_start();
    if text.starts_with("permission denied") {
        ToolState::Denied
    } else if text.starts_with("interrupted") || text.starts_with("the call was cancelled") {
        ToolState::Interrupted
    } else {
        ToolState::Failed
    }
}

/// One line saying how the call ended: the loop's title, else the first
/// line of the result.
pub fn outcome_line(title: &str, result: &ToolResult) -> String {
    let line = if title.trim().is_empty() {
        result.text_content()
    } else {
        title.to_string()
    };
    // The cell's header already names the tool.
    let line = first_line(&line);
    let line = [" refused: ", " failed: "]
        .iter()
        .find_map(|verb| line.strip_prefix(&result.name)?.strip_prefix(verb))
        .unwrap_or(line);
    truncate_chars(line, SUMMARY_CHARS)
}

/// An outcome line split before the language servers' count that `edit`,
/// `multi_edit` and `write` append to their title (`… · 2 errors, 1
/// warning`); `None` when it has none.
pub fn diagnostics_count(line: &str) -> Option<(&str, &str)> {
    let at = line.rfind(" · ")?;
    let count = &line[at..];
    let words = count.trim_start_matches(" · ");
    let counts = words.split(", ").all(|part| {
        let mut it = part.splitn(2, ' ');
        let number = it.next().is_some_and(|n| n.parse::<usize>().is_ok());
        number && matches!(it.next(), Some("error" | "errors" | "warning" | "warnings"))
    });
    counts.then(|| (&line[..at], count))
}

/// The diff an edit call makes, computed from its arguments alone (the old
/// file is not at hand: a `write` shows its whole content as added).
pub(crate) fn edit_preview(call: &ToolCall) -> Option<DiffPreview> {
    let args = call.arguments_json()?;
    let str_of = |v: &Value, name: &str| v.get(name).and_then(Value::as_str).map(str::to_string);
    match call.name.as_str() {
        "edit" => {
            let old = str_of(&args, "old_string")?;
            let new = str_of(&args, "new_string")?;
            Some(DiffPreview::from_edits([(old.as_str(), new.as_str())]))
        }
        "multi_edit" => {
            let edits = args.get("edits")?.as_array()?;
            let pairs: Vec<(String, String)> = edits
                .iter()
                .filter_map(|e| Some((str_of(e, "old_string")?, str_of(e, "new_string")?)))
                .collect();
            Some(DiffPreview::from_edits(
                pairs.iter().map(|(o, n)| (o.as_str(), n.as_str())),
            ))
        }
        "write" => {
            let content = str_of(&args, "content")?;
            Some(DiffPreview::from_written(&content))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::diagnostics_count;

    #[test]
    fn the_language_servers_count_is_split_off_an_edits_outcome() {
        assert_eq!(
            diagnostics_count("edit calc.py (1 replacement) · 2 errors, 1 warning"),
            Some(("edit calc.py (1 replacement)", " · 2 errors, 1 warning"))
        );
        assert_eq!(diagnostics_count("edit calc.py (1 replacement)"), None);
        assert_eq!(diagnostics_count("read a · b.txt (3 lines)"), None);
    }
}
