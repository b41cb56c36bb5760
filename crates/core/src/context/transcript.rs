//! The history as plain text, for the summarising request.
//!
//! A transcript instead of the native messages: any model can summarise it
//! (the compaction model may differ from the session's, and reasoning
//! signatures or tool pairing rules of one provider do not bind another),
//! and it can be shortened piece by piece when it does not fit.
//!
//! Invariants:
//! - Entries keep the history's order; reasoning is left out (it is the
//!   model's scratch work, and often opaque).
//! - Shortening goes from the middle outward: tool outputs first, then whole
//!   entries; the task at the start and the latest entries go last.

use std::sync::Arc;

use gyre_protocol::{Message, Origin, Part, Role, ToolResultContent};

/// Longest tool-call arguments copied into a transcript (a `write` of a
/// whole file says little a summary needs).
const MAX_ARGUMENT_CHARS: usize = 2_000;
const OMITTED_OUTPUT: &str = "[output omitted to fit the summary request]";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Said,
    ToolOutput,
}

#[derive(Debug, Clone)]
struct Entry {
    kind: Kind,
    heading: String,
    body: String,
    omitted: bool,
}

impl Entry {
    fn bytes(&self) -> u64 {
        if self.omitted && self.kind == Kind::Said {
            return 0;
        }
        (self.heading.len() + self.body.len() + 4) as u64
    }
}

/// How much shortening a transcript needed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Shortened {
    pub outputs: usize,
    pub entries: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct Transcript {
    entries: Vec<Entry>,
}

impl Transcript {
    pub fn of(messages: &[Arc<Message>]) -> Self {
        let mut entries = Vec::new();
        for message in messages {
            let speaker = match (&message.origin, message.role) {
                (Origin::Summary(_), _) => "Summary of the conversation before this point",
                (Origin::Gyre, _) => "Note from gyre",
                (Origin::Conversation, Role::User) => "User",
                (Origin::Conversation, Role::Assistant) => "Assistant",
            };
            for part in &message.parts {
                let said = |heading: String, body: String| Entry {
                    kind: Kind::Said,
                    heading,
                    body,
                    omitted: false,
                };
                match part {
                    Part::Text { text } if !text.trim().is_empty() => {
                        entries.push(said(format!("## {speaker}"), text.clone()))
                    }
                    Part::ToolCall(call) => entries.push(said(
                        format!("## Assistant called `{}`", call.name),
                        shorten(&call.arguments, MAX_ARGUMENT_CHARS),
                    )),
                    Part::ToolResult(result) => entries.push(Entry {
                        kind: Kind::ToolOutput,
                        heading: format!(
                            "## Result of `{}`{}",
                            result.name,
                            if result.is_error { " (error)" } else { "" }
                        ),
                        body: result
                            .content
                            .iter()
                            .map(|c| match c {
                                ToolResultContent::Text { text } => text.as_str(),
                                ToolResultContent::Image { .. } => "[image]",
                            })
                            .collect::<Vec<_>>()
                            .join("\n"),
                        omitted: false,
                    }),
                    Part::Image { .. } => {
                        entries.push(said(format!("## {speaker}"), "[image]".into()))
                    }
                    Part::Text { .. } | Part::Reasoning { .. } => {}
                }
            }
        }
        Self { entries }
    }

    pub fn bytes(&self) -> u64 {
        self.entries.iter().map(Entry::bytes).sum()
    }

    /// Shortens the transcript from the middle outward until it is at most
    /// `target` bytes. `Err` (with what was left out trying) when even the
    /// first and last entries alone do not fit.
    pub fn fit(&mut self, target: u64) -> Result<Shortened, Shortened> {
        let mut shortened = Shortened::default();
        let mut size = self.bytes();
        for kind in [Kind::ToolOutput, Kind::Said] {
            for index in self.middle_out(kind) {
                if size <= target {
                    return Ok(shortened);
                }
                let entry = &mut self.entries[index];
                let before = entry.bytes();
                entry.omitted = true;
                if kind == Kind::ToolOutput {
                    entry.body = OMITTED_OUTPUT.to_string();
                    shortened.outputs += 1;
                } else {
                    shortened.entries += 1;
                }
                size = size - before + entry.bytes();
            }
        }
        if size <= target {
            Ok(shortened)
        } else {
            Err(shortened)
        }
    }

    /// Indices of not-yet-omitted entries of `kind`, nearest the middle first.
    /// The first entry (the task) and the last two are never candidates for
    /// whole removal.
    fn middle_out(&self, kind: Kind) -> Vec<usize> {
        let len = self.entries.len();
        let middle = len / 2;
        let mut indices: Vec<usize> = (0..len)
            .filter(|&i| {
                let entry = &self.entries[i];
                entry.kind == kind
                    && !entry.omitted
                    && (kind == Kind::ToolOutput || (i > 0 && i + 2 < len))
            })
            .collect();
        indices.sort_by_key(|&i| (i.abs_diff(middle), i));
        indices
    }

    pub fn render(&self) -> String {
        let mut out = String::with_capacity(self.bytes() as usize + 64);
        let mut skipped = 0usize;
        for entry in &self.entries {
            if entry.omitted && entry.kind == Kind::Said {
                skipped += 1;
                continue;
            }
            if skipped > 0 {
                out.push_str(&format!(
                    "[… {skipped} entries omitted to fit the summary request …]\n\n"
                ));
                skipped = 0;
            }
            out.push_str(&entry.heading);
            out.push('\n');
            out.push_str(&entry.body);
            out.push_str("\n\n");
        }
        if skipped > 0 {
            out.push_str(&format!(
                "[… {skipped} entries omitted to fit the summary request …]\n"
            ));
        }
        out
    }
}

fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}… [{} more bytes]", &text[..cut], text.len() - cut),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gyre_protocol::{Outcome, ToolCall, ToolResult};

    fn history() -> Vec<Arc<Message>> {
        let mut history = vec![Arc::new(Message::user_text("p", "fix the parser"))];
        for i in 0..5 {
            history.push(Arc::new(Message::new(
                format!("a{i}"),
                Role::Assistant,
                vec![
                    Part::Reasoning {
                        text: "secret thoughts".into(),
                        signature: None,
                        redacted: false,
                    },
                    Part::text(format!("step {i}")),
                    Part::ToolCall(ToolCall::new(
                        format!("c{i}"),
                        "bash",
                        r#"{"command":"make"}"#,
                    )),
                ],
            )));
            history.push(Arc::new(Message::new(
                format!("r{i}"),
                Role::User,
                vec![Part::ToolResult(ToolResult::text(
                    format!("c{i}"),
                    "bash",
                    format!("output {i} ").repeat(100),
                    Outcome::Success,
                ))],
            )));
        }
        history
    }

    #[test]
    fn the_transcript_keeps_order_and_leaves_reasoning_out() {
        let text = Transcript::of(&history()).render();
        assert!(text.starts_with("## User\nfix the parser\n\n## Assistant\nstep 0\n\n## Assistant called `bash`\n{\"command\":\"make\"}\n\n## Result of `bash`\noutput 0"));
        assert!(!text.contains("secret"));
        assert!(text.find("step 3").unwrap() < text.find("output 3").unwrap());
    }

    #[test]
    fn outputs_go_first_from_the_middle() {
        let mut transcript = Transcript::of(&history());
        let whole = transcript.bytes();
        let shortened = transcript.fit(whole - 1_500).unwrap();
        assert_eq!(
            shortened,
            Shortened {
                outputs: 2,
                entries: 0
            }
        );
        let text = transcript.render();
        // Outputs 2 and 1 sit nearest the middle; the first and last stay.
        assert!(!text.contains("output 2") && !text.contains("output 1"));
        assert!(
            text.contains("output 0") && text.contains("output 3") && text.contains("output 4")
        );
        assert!(text.contains(OMITTED_OUTPUT));
    }

    #[test]
    fn then_whole_entries_and_the_task_stays_to_the_end() {
        let mut transcript = Transcript::of(&history());
        let shortened = transcript.fit(450).unwrap();
        assert_eq!(shortened.outputs, 5);
        assert!(shortened.entries > 0);
        let text = transcript.render();
        assert!(text.starts_with("## User\nfix the parser"), "{text}");
        assert!(text.contains("entries omitted"));
        assert!(transcript.bytes() <= 450);
        // Nothing can make it fit in 10 bytes.
        let failed = Transcript::of(&history()).fit(10).unwrap_err();
        assert_eq!(failed.outputs, 5);
    }
}
