//! Export and import of one session as JSON Lines.
//!
//! # Format (version 1)
//!
//! UTF-8, one JSON object per line, each with a `"type"`:
//!
//! ```text
//! {"type":"session","version":1,"meta":{"id":"…","cwd":"…","provider":"…","model":"…","title":"…","created_at_ms":1700000000000,"updated_at_ms":1700000000000},"state":{…}}
//! {"type":"message","message":{"id":"…","role":"user","parts":[{"type":"text","text":"…"}]}}
//! {"type":"message","message":{"id":"…","role":"assistant","parts":[{"type":"tool_call",…}],"origin":{"kind":"gyre"}}}
//! {"type":"checkpoint","checkpoint":{"id":"…","message_id":"…","call_id":"…","snapshot":"…","created_at_ms":1700000000000}}
//! ```
//!
//! - The first line is the `session` line: the format `version`, the
//!   session's `meta`, and its loop `state` (`null` when it has none).
//!   `meta.parent_id` names the session that spawned this one (a subagent's
//!   parent); it is left out when there is none, and an export without it
//!   (older gyres wrote none) imports as a session without a parent.
//! - Then one `message` line per message, oldest first; `message` is gyre's
//!   message object (`id`, `role`, `parts`, and `origin` when the message is
//!   not plain conversation), exactly as the session store keeps it.
//! - Then one `checkpoint` line per checkpoint, in the order they were made;
//!   each names a message above (`call_id` is left out when there is none).
//!
//! Readers skip lines whose `type` they do not know (newer gyres may add
//! some) and blank lines. An import refuses, naming the line (counted from
//! 1): a line that is not such an object, a `version` newer than it knows,
//! a message or checkpoint before the session line, a second session line,
//! a repeated message or checkpoint id, a checkpoint of a message not above
//! it, and a line longer than [`MAX_LINE`] bytes. Importing a session whose
//! id already exists is [`StoreError::SessionExists`]; a refused import
//! writes nothing.
//!
//! Invariants: export reads the session from one snapshot
//! ([`SessionStore::export_session`]) and import writes it in one
//! transaction ([`SessionStore::import_session`]), keeping its meta
//! unchanged, so export → import → export gives the same lines (minus what
//! the export's filter changed). The reading and writing of lines is
//! synchronous: hand [`export`] and [`import`] buffered writers and readers,
//! and files rather than slow pipes, or use [`write_record`] and
//! [`read_record`] on a blocking thread.

use std::collections::HashSet;
use std::io::{BufRead, Read, Write};

use gyre_protocol::Message;
use serde::{Deserialize, Serialize};

use crate::{Checkpoint, SessionMeta, SessionRecord, SessionStore, StoreError};

/// The format version this build writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;

/// The longest line an import reads (images in tool results make lines
/// long; an unbounded line would be an unbounded buffer).
pub const MAX_LINE: usize = 64 * 1024 * 1024;

/// A line as written: borrowed, so an export copies nothing.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum LineOut<'a> {
    Session {
        version: u32,
        meta: &'a SessionMeta,
        state: &'a Option<serde_json::Value>,
    },
    Message {
        message: &'a Message,
    },
    Checkpoint {
        checkpoint: &'a Checkpoint,
    },
}

/// A line as read.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum LineIn {
    Session {
        version: u32,
        meta: SessionMeta,
        #[serde(default)]
        state: Option<serde_json::Value>,
    },
    Message {
        message: Message,
    },
    Checkpoint {
        checkpoint: Checkpoint,
    },
    #[serde(other)]
    Unknown,
}

/// Writes session `id` of `store` to `out`, each message passed through
/// `filter` first (to redact secrets, say).
pub async fn export(
    store: &dyn SessionStore,
    id: &str,
    out: &mut impl Write,
    filter: &dyn Fn(&mut Message),
) -> Result<(), StoreError> {
    let record = store.export_session(id).await?;
    write_record(&record, out, filter).map_err(|source| StoreError::ExportWrite {
        session_id: id.to_owned(),
        source,
    })
}

/// Reads one exported session from `input` and creates it in `store`; the
/// session's meta.
pub async fn import(
    store: &dyn SessionStore,
    input: impl BufRead,
) -> Result<SessionMeta, StoreError> {
    let record = read_record(input)?;
    store.import_session(&record).await?;
    Ok(record.meta)
}

/// The lines of `record`, each message through `filter`; flushes `out`.
pub fn write_record(
    record: &SessionRecord,
    out: &mut impl Write,
    filter: &dyn Fn(&mut Message),
) -> std::io::Result<()> {
    write_line(
        out,
        &LineOut::Session {
            version: FORMAT_VERSION,
            meta: &record.meta,
            state: &record.state,
        },
    )?;
    for message in &record.messages {
        let mut message = message.clone();
        filter(&mut message);
        write_line(out, &LineOut::Message { message: &message })?;
    }
    for checkpoint in &record.checkpoints {
        write_line(out, &LineOut::Checkpoint { checkpoint })?;
    }
    out.flush()
}

fn write_line(out: &mut impl Write, line: &LineOut<'_>) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, line)?;
    out.write_all(b"\n")
}

/// Parses one exported session, checking everything the import refuses
/// (see the module doc) before anything is written.
pub fn read_record(input: impl BufRead) -> Result<SessionRecord, StoreError> {
    read_limited(input, MAX_LINE)
}

fn read_limited(mut input: impl BufRead, max_line: usize) -> Result<SessionRecord, StoreError> {
    let mut record: Option<SessionRecord> = None;
    let mut message_ids = HashSet::new();
    let mut checkpoint_ids = HashSet::new();
    let mut text = String::new();
    let mut number = 0;
    loop {
        number += 1;
        let refuse = |reason: String| StoreError::ImportLine {
            line: number,
            reason,
        };
        text.clear();
        let limit = u64::try_from(max_line)
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let read = (&mut input)
            .take(limit)
            .read_line(&mut text)
            .map_err(|e| refuse(format!("it could not be read: {e}")))?;
        if read == 0 {
            break;
        }
        if u64::try_from(read).unwrap_or(u64::MAX) == limit && !text.ends_with('\n') {
            return Err(refuse(format!("it is longer than {max_line} bytes")));
        }
        if text.trim().is_empty() {
            continue;
        }
        let line: LineIn = serde_json::from_str(&text)
            .map_err(|e| refuse(format!("it is not a valid export line: {e}")))?;
        match (line, record.as_mut()) {
            (LineIn::Unknown, _) => {}
            (LineIn::Session { version, .. }, _) if version > FORMAT_VERSION => {
                return Err(refuse(format!(
                    "the export has format version {version}, newer than the {FORMAT_VERSION} this gyre reads; upgrade gyre"
                )));
            }
            (LineIn::Session { meta, state, .. }, None) => {
                record = Some(SessionRecord {
                    meta,
                    state,
                    messages: Vec::new(),
                    checkpoints: Vec::new(),
                });
            }
            (LineIn::Session { .. }, Some(_)) => {
                return Err(refuse("a second session line".to_owned()));
            }
            (LineIn::Message { .. } | LineIn::Checkpoint { .. }, None) => {
                return Err(refuse("it comes before the session line".to_owned()));
            }
            (LineIn::Message { message }, Some(record)) => {
                if !message_ids.insert(message.id.clone()) {
                    return Err(refuse(format!("message {} appears twice", message.id)));
                }
                record.messages.push(message);
            }
            (LineIn::Checkpoint { checkpoint }, Some(record)) => {
                if !message_ids.contains(&checkpoint.message_id) {
                    return Err(refuse(format!(
                        "checkpoint {} names message {}, which is not above it",
                        checkpoint.id, checkpoint.message_id
                    )));
                }
                if !checkpoint_ids.insert(checkpoint.id.clone()) {
                    return Err(refuse(format!(
                        "checkpoint {} appears twice",
                        checkpoint.id
                    )));
                }
                record.checkpoints.push(checkpoint);
            }
        }
    }
    record.ok_or(StoreError::ImportLine {
        line: number,
        reason: "the input ended without a session line".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_have_the_documented_shape() {
        let record = SessionRecord {
            meta: SessionMeta {
                id: "s".into(),
                cwd: "/w".into(),
                provider: "p".into(),
                model: "m".into(),
                title: "t".into(),
                created_at_ms: 1,
                updated_at_ms: 2,
                parent_id: None,
            },
            state: None,
            messages: vec![Message::user_text("m1", "hi")],
            checkpoints: vec![Checkpoint {
                id: "c1".into(),
                message_id: "m1".into(),
                call_id: None,
                snapshot: "tree".into(),
                created_at_ms: 3,
            }],
        };
        let mut out = Vec::new();
        write_record(&record, &mut out, &|_| {}).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                r#"{"type":"session","version":1,"meta":{"id":"s","cwd":"/w","provider":"p","model":"m","title":"t","created_at_ms":1,"updated_at_ms":2},"state":null}"#,
                r#"{"type":"message","message":{"id":"m1","role":"user","parts":[{"type":"text","text":"hi"}]}}"#,
                r#"{"type":"checkpoint","checkpoint":{"id":"c1","message_id":"m1","snapshot":"tree","created_at_ms":3}}"#,
            ]
        );
        assert_eq!(read_record(text.as_bytes()).unwrap(), record);
    }

    #[test]
    fn an_overlong_line_is_refused_without_reading_it_all() {
        let mut input = b"{\"type\":\"x\"}\n".to_vec();
        input.extend(std::iter::repeat_n(b' ', 100));
        let err = read_limited(input.as_slice(), 64).unwrap_err();
        assert!(
            matches!(err, StoreError::ImportLine { line: 2, .. }),
            "{err}"
        );
    }
}
