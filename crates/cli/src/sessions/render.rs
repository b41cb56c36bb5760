//! How stored sessions are printed: the one-line form of `sessions list`,
//! and the readable form of `sessions show`.
//!
//! Invariants:
//! - A list line begins with the session's full id and holds no line break
//!   (titles are made one line), so `cut -d' ' -f1` gives ids.
//! - Every text printed passes through the redactor: what the store holds
//!   is already redacted where the loop redacts (tool outputs), but titles
//!   and prompts are the user's words and may hold a key.
//! - Times are UTC, to the minute: the same on every machine that reads a
//!   shared (PostgreSQL) store.
//! - `show` prints messages whole but shortens what can be huge: tool
//!   results and reasoning to a few lines, tool call arguments to a bound.

use std::collections::HashMap;
use std::fmt::Write as _;

use gyre_core::{Redactor, short_id};
use gyre_llm::catalog::Pricing;
use gyre_protocol::{Message, Origin, Part, Role, ToolResult, Usage};
use gyre_store::SessionMeta;

/// Lines of a tool result or of reasoning that `show` prints.
const SHORT_LINES: usize = 6;
/// Characters of a tool result or of reasoning that `show` prints.
const SHORT_CHARS: usize = 600;
/// Characters of a tool call's arguments that `show` prints.
const ARGUMENT_CHARS: usize = 2_000;

/// `id  YYYY-MM-DD HH:MM  model  title`, and for a subagent's session
/// `  (subagent of PARENT)` after it.
pub fn list_line(meta: &SessionMeta, redactor: &Redactor) -> String {
    let mut line = format!(
        "{}  {}  {}  {}",
        meta.id,
        utc_minute(meta.updated_at_ms),
        one_line(&meta.model),
        one_line(&redactor.redact(&meta.title)),
    );
    if let Some(parent) = &meta.parent_id {
        let _ = write!(line, "  (subagent of {})", one_line(short_id(parent)));
    }
    line
}

/// The meta (with the parent of a subagent's session), the sessions of its
/// subagents (`children`, oldest first), then every message: its role and
/// id, its text, its tool calls with their arguments, its results shortened.
pub fn show(
    meta: &SessionMeta,
    children: &[SessionMeta],
    messages: &[Message],
    redactor: &Redactor,
    turns: &Turns,
) -> String {
    let mut out = String::new();
    let title = redactor.redact(&meta.title);
    let parent = meta
        .parent_id
        .as_ref()
        .map(|id| ("parent", one_line(short_id(id))));
    let rows = [
        Some(("session", meta.id.clone())),
        parent,
        Some(("title", one_line(&title))),
        Some(("cwd", meta.cwd.clone())),
        Some(("model", format!("{} ({})", meta.model, meta.provider))),
        Some(("created", format!("{} UTC", utc_minute(meta.created_at_ms)))),
        Some(("updated", format!("{} UTC", utc_minute(meta.updated_at_ms)))),
        Some(("messages", messages.len().to_string())),
    ];
    for (name, value) in rows.into_iter().flatten() {
        let _ = writeln!(out, "{name:<9} {value}");
    }
    if !children.is_empty() {
        let _ = writeln!(out, "subagents:");
        for child in children {
            let title = one_line(&redactor.redact(&child.title));
            let _ = writeln!(out, "  {}  {title}", one_line(short_id(&child.id)));
        }
    }
    for message in messages {
        out.push('\n');
        message_block(&mut out, message, redactor);
        if let Some(usage) = turns.usage.get(&message.id) {
            turn_line(&mut out, usage, turns.pricing.as_ref());
        }
    }
    out
}

/// Each turn's usage by its answer's id, and the model's prices: what
/// `show` prints under each answer.
#[derive(Debug, Default)]
pub struct Turns {
    pub usage: HashMap<String, Usage>,
    pub pricing: Option<Pricing>,
}

/// The turn's request: its input split by the prompt cache, its output,
/// and (with prices) what the cache saved on it.
fn turn_line(out: &mut String, usage: &Usage, pricing: Option<&Pricing>) {
    let _ = write!(
        out,
        "  · turn: {} in ({} from the cache, {} written to it, {} uncached), {} out",
        usage.prompt_tokens(),
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.input_tokens,
        usage.output_tokens
    );
    if let Some(pricing) = pricing {
        let _ = write!(
            out,
            "; the cache saved ${:.4}",
            pricing.cache_savings(usage)
        );
    }
    out.push('\n');
}

/// `show`'s text with a `tokens` and a `cache` row after its head: what the
/// session's runs spent, the share of the input the prompt cache served,
/// and (with the model's prices) what the cache saved.
pub fn with_spent(shown: String, usage: &Usage, cost: f64, pricing: Option<&Pricing>) -> String {
    let mut rows = format!(
        "{:<9} {} in ({} read from the cache, {} written to it, {} uncached), {} out\n",
        "tokens",
        usage.prompt_tokens(),
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.input_tokens,
        usage.output_tokens
    );
    let _ = write!(
        rows,
        "{:<9} {:.1} % of the input served from it",
        "cache",
        usage.cache_hit_ratio() * 100.0
    );
    if let Some(pricing) = pricing {
        let _ = write!(rows, "; saved ${:.4}", pricing.cache_savings(usage));
    }
    rows.push('\n');
    if cost > 0.0 {
        let _ = writeln!(rows, "{:<9} ${cost:.4}", "cost");
    }
    // After the head's last row (`messages`), before the subagents and the
    // messages.
    match shown.find("\nsubagents:").or_else(|| shown.find("\n\n")) {
        Some(at) => {
            let (head, rest) = shown.split_at(at + 1);
            format!("{head}{rows}{rest}")
        }
        None => format!("{shown}{rows}"),
    }
}

fn message_block(out: &mut String, message: &Message, redactor: &Redactor) {
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let origin = match &message.origin {
        Origin::Conversation => String::new(),
        Origin::Gyre => " (gyre's notice)".to_owned(),
        Origin::Summary(boundary) => format!(
            " (summary of the conversation before it: {} → {} tokens)",
            boundary.pre_tokens, boundary.post_tokens
        ),
    };
    let _ = writeln!(out, "── {role} {}{origin}", message.id);
    for part in &message.parts {
        match part {
            Part::Text { text } => indented(out, "", &redactor.redact(text)),
            Part::Reasoning { redacted: true, .. } => {
                let _ = writeln!(out, "  (reasoning hidden by the provider)");
            }
            Part::Reasoning { text, .. } => {
                indented(out, "(reasoning) ", &shorten(&redactor.redact(text)));
            }
            Part::ToolCall(call) => {
                let arguments = redactor.redact(call.arguments.trim());
                let _ = writeln!(
                    out,
                    "  → {} {} [{}]",
                    call.name,
                    cut_chars(&arguments, ARGUMENT_CHARS),
                    call.id
                );
            }
            Part::ToolResult(result) => result_lines(out, result, redactor),
            Part::Image { media_type, data } => {
                let _ = writeln!(out, "  [image {media_type}, {} bytes]", data.len() / 4 * 3);
            }
        }
    }
}

fn result_lines(out: &mut String, result: &ToolResult, redactor: &Redactor) {
    let status = if result.is_error { " (error)" } else { "" };
    let images = result.content.len()
        - result
            .content
            .iter()
            .filter(|c| matches!(c, gyre_protocol::ToolResultContent::Text { .. }))
            .count();
    let _ = writeln!(out, "  ← {}{status} [{}]", result.name, result.call_id);
    let text = result.text_content();
    if !text.trim().is_empty() {
        indented(out, "  ", &shorten(&redactor.redact(&text)));
    }
    if images > 0 {
        let _ = writeln!(out, "    [{images} image(s)]");
    }
}

/// `text` indented by two spaces, the first line after `lead`.
fn indented(out: &mut String, lead: &str, text: &str) {
    let pad = " ".repeat(lead.chars().count());
    for (index, line) in text.trim_end().lines().enumerate() {
        let lead = if index == 0 { lead } else { pad.as_str() };
        let _ = writeln!(out, "  {lead}{line}");
    }
}

/// The first lines of `text`, at most [`SHORT_CHARS`], saying how much is
/// left out.
fn shorten(text: &str) -> String {
    let text = text.trim_end();
    let total = text.lines().count();
    let kept: Vec<&str> = text.lines().take(SHORT_LINES).collect();
    let mut short = cut_chars(&kept.join("\n"), SHORT_CHARS);
    if total > kept.len() {
        let _ = write!(short, "\n… ({} more lines)", total - kept.len());
    }
    short
}

/// At most `max` characters of `text`, `…` marking a cut.
fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Line breaks and other control characters as spaces.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// `YYYY-MM-DD HH:MM` in UTC.
pub fn utc_minute(ms: i64) -> String {
    let minutes = ms.div_euclid(60_000);
    let (days, minute) = (minutes.div_euclid(1_440), minutes.rem_euclid(1_440));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        minute / 60,
        minute % 60
    )
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gyre_protocol::{Outcome, ToolCall};

    #[test]
    fn the_head_tells_what_the_cache_served_and_saved() {
        let shown = "session   s1\nmessages  2\n\n── user m1\n  hi\n".to_owned();
        let usage = Usage {
            input_tokens: 1_000,
            output_tokens: 200,
            reasoning_tokens: 0,
            cache_read_tokens: 8_000,
            cache_write_tokens: 1_000,
        };
        let pricing = Pricing {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        };
        let text = with_spent(shown, &usage, 0.05, Some(&pricing));
        assert_eq!(
            text,
            "session   s1\nmessages  2\n\
             tokens    10000 in (8000 read from the cache, 1000 written to it, 1000 uncached), 200 out\n\
             cache     80.0 % of the input served from it; saved $0.0209\n\
             cost      $0.0500\n\n── user m1\n  hi\n"
        );
        // Without prices: no saving; with subagents: before their list.
        let shown = "session   s1\nsubagents:\n  c1  t\n\n── user m1\n".to_owned();
        let text = with_spent(shown, &usage, 0.0, None);
        assert!(text.contains("served from it\nsubagents:"), "{text}");
        assert!(!text.contains("saved") && !text.contains("cost"), "{text}");
    }

    #[test]
    fn times_are_utc_minutes() {
        assert_eq!(utc_minute(0), "1970-01-01 00:00");
        assert_eq!(utc_minute(1_700_000_000_000), "2023-11-14 22:13");
        assert_eq!(utc_minute(951_782_400_000), "2000-02-29 00:00");
        assert_eq!(utc_minute(1_709_251_199_999), "2024-02-29 23:59");
        assert_eq!(utc_minute(-60_000), "1969-12-31 23:59");
    }

    fn meta(title: &str) -> SessionMeta {
        SessionMeta {
            id: "s-1".into(),
            cwd: "/w".into(),
            provider: "anthropic".into(),
            model: "m".into(),
            title: title.into(),
            created_at_ms: 0,
            updated_at_ms: 1_700_000_000_000,
            parent_id: None,
        }
    }

    #[test]
    fn list_lines_are_one_line_and_redacted() {
        let redactor = Redactor::new(vec!["hunter2-hunter2".into()], &[]).unwrap();
        let line = list_line(&meta("use hunter2-hunter2\tnow\n"), &redactor);
        assert_eq!(line, "s-1  2023-11-14 22:13  m  use [REDACTED] now ");
    }

    #[test]
    fn subagent_sessions_name_their_parent_and_parents_their_children() {
        let redactor = Redactor::new(vec!["hunter2-hunter2".into()], &[]).unwrap();
        let child = |id: &str, title: &str| SessionMeta {
            id: id.into(),
            parent_id: Some("s-1".into()),
            ..meta(title)
        };
        let line = list_line(&child("c-1", "look"), &redactor);
        assert_eq!(line, "c-1  2023-11-14 22:13  m  look  (subagent of s-1)");

        let children = [child("c-1", "look around"), child("c-2", "hunter2-hunter2")];
        let text = show(&meta("t"), &children, &[], &redactor, &Turns::default());
        assert!(!text.contains("parent"), "{text}");
        assert!(
            text.ends_with("messages  0\nsubagents:\n  c-1  look around\n  c-2  [REDACTED]\n"),
            "{text}"
        );
        let text = show(&children[0], &[], &[], &redactor, &Turns::default());
        assert!(
            text.starts_with("session   c-1\nparent    s-1\ntitle     look around\n"),
            "{text}"
        );
        assert!(!text.contains("subagents"), "{text}");
    }

    #[test]
    fn show_prints_calls_with_arguments_and_shortens_results() {
        let long: String = (1..=20).map(|n| format!("line {n}\n")).collect();
        let messages = [
            Message::user_text("u1", "read it"),
            Message::new(
                "a1",
                Role::Assistant,
                vec![
                    Part::text("Reading."),
                    Part::ToolCall(ToolCall::new("c1", "read", r#"{"file_path":"a.txt"}"#)),
                ],
            ),
            Message::new(
                "u2",
                Role::User,
                vec![Part::ToolResult(ToolResult::text(
                    "c1",
                    "read",
                    long,
                    Outcome::Error,
                ))],
            ),
        ];
        let text = show(
            &meta("t"),
            &[],
            &messages,
            &Redactor::disabled(),
            &Turns::default(),
        );
        assert!(text.starts_with("session   s-1\ntitle     t\n"), "{text}");
        assert!(text.contains("messages  3\n"), "{text}");
        assert!(text.contains("── user u1\n  read it\n"), "{text}");
        assert!(
            text.contains("  → read {\"file_path\":\"a.txt\"} [c1]\n"),
            "{text}"
        );
        assert!(
            text.contains("  ← read (error) [c1]\n    line 1\n"),
            "{text}"
        );
        assert!(
            text.contains("    line 6\n    … (14 more lines)\n"),
            "{text}"
        );
        assert!(!text.contains("line 7"), "{text}");
    }

    #[test]
    fn each_answer_says_what_its_turn_used_and_the_cache_saved() {
        let messages = [
            Message::user_text("u1", "go"),
            Message::new("a1", Role::Assistant, vec![Part::text("done")]),
        ];
        let usage = Usage {
            input_tokens: 30,
            output_tokens: 5,
            reasoning_tokens: 0,
            cache_read_tokens: 9_000,
            cache_write_tokens: 700,
        };
        let mut turns = Turns::default();
        turns.usage.insert("a1".into(), usage);
        let text = show(&meta("t"), &[], &messages, &Redactor::disabled(), &turns);
        let line =
            "  · turn: 9730 in (9000 from the cache, 700 written to it, 30 uncached), 5 out\n";
        assert!(
            text.contains(&format!("── assistant a1\n  done\n{line}")),
            "{text}"
        );
        assert!(!text.contains("── user u1\n  go\n  ·"), "{text}");
        // With prices: 9,000 reads at $3 less $0.30, less 700 writes at
        // $3.75 less $3, per million.
        turns.pricing = Some(Pricing {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        });
        let text = show(&meta("t"), &[], &messages, &Redactor::disabled(), &turns);
        assert!(text.contains("5 out; the cache saved $0.0238\n"), "{text}");
    }
}
