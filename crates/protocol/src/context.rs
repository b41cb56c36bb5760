//! What the conversation records about managing the context window: which
//! messages gyre wrote itself, and where a compaction put its boundary.
//!
//! Invariants:
//! - A message's [`Origin`] never changes once stored; most messages are
//!   [`Origin::Conversation`], which is left out of serde forms, so stored
//!   transcripts and snapshots without compaction look as they always did.
//! - A [`Origin::Summary`] message *is* the compact boundary: the model sees
//!   it first, then the messages from [`CompactBoundary::kept_from`] on (which
//!   were stored before it), then everything stored after it.

use serde::{Deserialize, Serialize};

/// Who put a message into the conversation, beyond its role.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// The user's words, the model's answer, or tool results.
    #[default]
    Conversation,
    /// A notice gyre wrote (a reminder, a request to continue), not the
    /// user's words.
    Gyre,
    /// gyre's summary of the conversation before it: a compact boundary.
    Summary(CompactBoundary),
}

impl Origin {
    pub fn is_conversation(&self) -> bool {
        matches!(self, Origin::Conversation)
    }
}

/// Where and why the conversation was compacted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactBoundary {
    pub trigger: CompactTrigger,
    /// Estimated tokens of the context before the compaction.
    pub pre_tokens: u64,
    /// Estimated tokens of the context after it (summary and kept turns).
    pub post_tokens: u64,
    /// The first message kept verbatim after the summary; `None`: none kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_from: Option<String>,
}

/// What started a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactTrigger {
    /// The context passed the compaction threshold before a request.
    Auto,
    /// Asked for: `/compact`, `--compact-first`.
    Manual,
    /// The provider said the request did not fit its context window.
    Overflow,
}

impl CompactTrigger {
    pub fn as_str(self) -> &'static str {
        match self {
            CompactTrigger::Auto => "auto",
            CompactTrigger::Manual => "manual",
            CompactTrigger::Overflow => "overflow",
        }
    }
}
