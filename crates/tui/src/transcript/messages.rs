//! A stored session's messages as cells (for `/resume`).
//!
//! Durations are unknown for stored calls, so their cells show none; a call
//! the history left without a result shows as interrupted. gyre's own notes
//! (reminders, requests to continue) are not shown; a compaction summary is
//! shown as one notice.

use std::sync::Arc;

use gyre_protocol::{Message, Origin, Part, Role};
use tokio::time::Instant;

use super::{Cell, CellKind, NoticeKind, ReasoningCell, ToolCell, ToolState, Transcript, tool};
use crate::render::markdown::StreamingMarkdown;
use crate::render::text::format_tokens;

pub(super) fn replay(transcript: &mut Transcript, messages: &[Arc<Message>]) {
    let now = Instant::now();
    let palette = transcript.palette;
    for message in messages {
        match (&message.origin, message.role) {
            (Origin::Summary(boundary), _) => transcript.push_notice(
                NoticeKind::Info,
                format!(
                    "Conversation compacted ({}): {} → {} tokens.",
                    boundary.trigger.as_str(),
                    format_tokens(boundary.pre_tokens),
                    format_tokens(boundary.post_tokens)
                ),
            ),
            (Origin::Gyre, _) => {}
            (Origin::Conversation, Role::User) => {
                for part in &message.parts {
                    match part {
                        Part::Text { text } if !text.trim().is_empty() => {
                            transcript.push_user(text)
                        }
                        Part::ToolResult(result) => {
                            transcript.tool_result(&result.title, result, now);
                            if let Some(&index) = transcript.tools.get(&result.call_id)
                                && let Some(Cell {
                                    kind: CellKind::Tool(tool),
                                    ..
                                }) = transcript.cells.get_mut(index)
                            {
                                tool.ended = None;
                            }
                        }
                        _ => {}
                    }
                }
            }
            (Origin::Conversation, Role::Assistant) => {
                for part in &message.parts {
                    match part {
                        Part::Text { text } if !text.trim().is_empty() => {
                            let mut md = StreamingMarkdown::new();
                            md.push(text, palette);
                            md.finish(palette);
                            transcript.push(CellKind::Assistant(md));
                        }
                        Part::Reasoning { text, .. } if !text.trim().is_empty() => {
                            transcript.push(CellKind::Reasoning(ReasoningCell {
                                text: text.clone(),
                                streaming: false,
                            }));
                        }
                        Part::ToolCall(call) => {
                            let mut cell = ToolCell::new(&call.name, now);
                            cell.summary = tool::summarize_call(call);
                            cell.diff = tool::edit_preview(call);
                            cell.state = ToolState::Running;
                            let index = transcript.push(CellKind::Tool(Box::new(cell)));
                            transcript.tools.insert(call.id.clone(), index);
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    // Calls without a result were cut off when the session stopped.
    for (_, index) in transcript.tools.drain() {
        if let Some(Cell {
            kind: CellKind::Tool(tool),
            ..
        }) = transcript.cells.get_mut(index)
            && !tool.state.is_finished()
        {
            tool.state = ToolState::Interrupted;
            tool.outcome = "interrupted before it finished".into();
        }
    }
}
