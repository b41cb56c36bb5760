//! History validation and repair: what is sent pairs every tool call with
//! exactly one result (seed 000 pairs them by id), whatever the store holds.
//!
//! The rules, for the history as sent:
//! - every tool call of an assistant message is answered by exactly one
//!   result with its id, in the user message right after it, in call order
//!   and before that message's other parts;
//! - a call id appears once in the whole history;
//! - no other message holds a result.
//!
//! Two forms of the history: the session's `history` is what the store
//! holds (from the last compact boundary, pruned as sent), and
//! [`Validated::sent`] is its repaired form, which requests borrow. Pruning
//! and compaction work on the stored form, so the repaired form is always
//! a function of what a load gives back.
//!
//! Repairs, decided here and applied by `run::repair`:
//! - a missing result becomes an error result ([`MISSING_RESULT`]); it is
//!   stored before it is sent: appended to the user message after the call
//!   (and to the stored form in memory, as the store has it), or as a new
//!   message when the call ends the history;
//! - a result without a call, a second result for a call, and a call whose
//!   id was used before (with its results) are left out of what is sent;
//!   the store keeps them (it holds what happened);
//! - results out of call order, or after other parts, are put in order.
//!
//! Invariants:
//! - The repaired form is a function of the stored form: a session loaded
//!   again is repaired into the same messages, so the same bytes are sent
//!   and the provider's prompt cache survives a resume.
//! - Only what was added since the last check is looked at ([`Validated`]
//!   remembers how far the stored form is checked). Whatever replaces
//!   messages (pruning, compaction, a resume) resets it; a replaced last
//!   message or a shorter history is noticed and resets it too.
//!
//! Trade-off: a call answered by nothing before the next assistant message
//! (two answers in a row, only from an imported or damaged session) gets
//! its made-up results in a message of its own that exists only in the
//! repaired form: the store appends, it cannot insert. The id of that
//! message derives from the answer's, so it is the same after every load.

mod check;

use std::collections::HashSet;
use std::sync::Arc;

use gyre_protocol::{Message, Part};

pub(crate) use check::check;

/// The result given to a call that has none.
pub(crate) const MISSING_RESULT: &str =
    "interrupted before it finished; check the workspace (no result was recorded for this call)";

/// How far a session's stored history is checked, and its repaired form.
#[derive(Debug, Clone, Default)]
pub(crate) struct Validated {
    /// `history[..upto]` is checked; `sent` is its repaired form.
    upto: usize,
    /// `history[upto - 1]` when it was checked, to notice a replacement.
    last: Option<Arc<Message>>,
    /// The ids of the calls in `sent`.
    call_ids: HashSet<String>,
    sent: Vec<Arc<Message>>,
}

impl Validated {
    /// Forgets everything: the next check looks at the whole history.
    pub(crate) fn reset(&mut self) {
        *self = Self::default();
    }

    /// The repaired history, as the last check left it.
    pub(crate) fn sent(&self) -> &[Arc<Message>] {
        &self.sent
    }

    /// Whether `history` still starts with what was checked.
    fn holds_for(&self, history: &[Arc<Message>]) -> bool {
        match (self.upto.checked_sub(1), &self.last) {
            (None, _) => true,
            (Some(at), Some(last)) => history.get(at).is_some_and(|m| Arc::ptr_eq(m, last)),
            (Some(_), None) => false,
        }
    }

    /// Takes in a check whose writes are applied to `history`.
    pub(crate) fn commit(&mut self, checked: Checked, history: &[Arc<Message>]) {
        if checked.from == 0 {
            self.reset();
        }
        self.call_ids.extend(checked.new_call_ids);
        self.sent.extend(checked.tail);
        self.upto = history.len();
        self.last = history.last().cloned();
    }
}

/// One repair, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Repair {
    MissingResult { call_id: String, tool: String },
    ResultWithoutCall { call_id: String },
    DuplicateResult { call_id: String },
    DuplicateCall { call_id: String },
    Reordered { message_id: String },
}

impl std::fmt::Display for Repair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Repair::MissingResult { call_id, tool } => write!(
                f,
                "the call {call_id} (`{tool}`) had no result: an error result was added"
            ),
            Repair::ResultWithoutCall { call_id } => {
                write!(f, "a result for {call_id} answers no call: left out")
            }
            Repair::DuplicateResult { call_id } => {
                write!(f, "a second result for {call_id}: left out")
            }
            Repair::DuplicateCall { call_id } => {
                write!(
                    f,
                    "the call id {call_id} was used before: the call left out"
                )
            }
            Repair::Reordered { message_id } => {
                write!(
                    f,
                    "the results of message {message_id} were put in call order"
                )
            }
        }
    }
}

/// What must be stored before the repaired history is sent; applied to the
/// stored form in memory the same way.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Write {
    /// A part appended to the stored message at `index` of the history.
    Part {
        index: usize,
        message_id: String,
        part: Part,
    },
    /// A new message appended to the session.
    Message(Arc<Message>),
}

impl Write {
    /// Applies the write to the stored form in memory.
    pub(crate) fn apply(&self, history: &mut Vec<Arc<Message>>) {
        match self {
            Write::Part { index, part, .. } => {
                if let Some(slot) = history.get_mut(*index) {
                    Arc::make_mut(slot).parts.push(part.clone());
                }
            }
            Write::Message(message) => history.push(message.clone()),
        }
    }
}

/// The outcome of a check.
#[derive(Debug)]
pub(crate) struct Checked {
    /// Where the check started in the stored form (0: from scratch).
    from: usize,
    /// The repaired form of `history[from..]`, writes included.
    tail: Vec<Arc<Message>>,
    new_call_ids: Vec<String>,
    /// To store first (append before act), then apply in memory.
    pub writes: Vec<Write>,
    pub repairs: Vec<Repair>,
}
