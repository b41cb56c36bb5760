//! A human-readable view of a run's events, as they stream: text as it
//! arrives, one line per tool call and per result. Coloured on a terminal,
//! plain otherwise (and with `NO_COLOR`).

use std::io::Write;

use gyre_protocol::{Event, ToolCall};
use owo_colors::{OwoColorize, Stream::Stdout};

#[derive(Debug, Default)]
pub struct HumanView {
    at_line_start: bool,
}

impl HumanView {
    pub fn new() -> Self {
        Self {
            at_line_start: true,
        }
    }

    pub fn show(&mut self, event: &Event) {
        let mut out = std::io::stdout().lock();
        match event {
            Event::TextDelta { text } => {
                let _ = write!(out, "{text}");
                self.at_line_start = text.ends_with('\n');
            }
            Event::ToolCallReady { call } => {
                self.end_line(&mut out);
                let _ = writeln!(
                    out,
                    "{} {}",
                    "●".if_supports_color(Stdout, |t| t.cyan()),
                    describe(call).if_supports_color(Stdout, |t| t.bold())
                );
            }
            Event::ToolResult { title, result } => {
                self.end_line(&mut out);
                let line = format!("  ⎿ {title}");
                if result.is_error {
                    let _ = writeln!(out, "{}", line.if_supports_color(Stdout, |t| t.red()));
                } else {
                    let _ = writeln!(out, "{}", line.if_supports_color(Stdout, |t| t.dimmed()));
                }
            }
            Event::RetryScheduled {
                delay_ms, reason, ..
            } => {
                self.end_line(&mut out);
                let _ = writeln!(out, "  (retrying in {} s: {reason})", delay_ms / 1000);
            }
            Event::CompactBoundary { boundary, .. } => {
                self.end_line(&mut out);
                let _ = writeln!(
                    out,
                    "  (compacted the conversation: {} → {} tokens)",
                    boundary.pre_tokens, boundary.post_tokens
                );
            }
            Event::CompactionFailed { message, .. } => {
                self.end_line(&mut out);
                let _ = writeln!(out, "  (could not compact the conversation: {message})");
            }
            Event::RunFinished(_) => self.end_line(&mut out),
            _ => {}
        }
        let _ = out.flush();
    }

    fn end_line(&mut self, out: &mut impl Write) {
        if !self.at_line_start {
            let _ = writeln!(out);
            self.at_line_start = true;
        }
    }
}

/// `read lib/math.sh`, `bash sh test.sh`: the tool and its main argument.
fn describe(call: &ToolCall) -> String {
    let args = call.arguments_json().unwrap_or_default();
    let main = ["command", "file_path", "pattern", "path", "url"]
        .iter()
        .find_map(|k| args.get(k).and_then(|v| v.as_str()));
    match main {
        Some(arg) => format!("{} {}", call.name, arg),
        None => call.name.clone(),
    }
}
