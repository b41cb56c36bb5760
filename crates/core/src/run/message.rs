//! A message the loop records part by part (append before act): the first
//! part creates it in the store, later parts are appended to it, and only a
//! message with parts joins the history.

use std::sync::Arc;

use gyre_protocol::{Message, Origin, Role};

use crate::id::new_id;

/// A message being recorded part by part: the first part creates it in the
/// store, later parts are appended to it.
pub(super) struct MessageInProgress {
    pub(super) message: Message,
    /// Whether the message is in the store (parts are appended to it).
    pub(super) stored: bool,
}

impl MessageInProgress {
    pub(super) fn new(role: Role) -> Self {
        Self {
            message: Message::new(new_id(), role, Vec::new()),
            stored: false,
        }
    }

    /// A user-side message of gyre's own (a reminder, a request to go on).
    pub(super) fn notice() -> Self {
        Self {
            message: Message::new(new_id(), Role::User, Vec::new()).with_origin(Origin::Gyre),
            stored: false,
        }
    }

    /// A message already stored, to append parts to.
    pub(super) fn stored(message: Message) -> Self {
        Self {
            message,
            stored: true,
        }
    }

    /// The message's id once it is stored.
    pub(super) fn stored_id(&self) -> Option<&str> {
        self.stored.then_some(self.message.id.as_str())
    }

    pub(super) fn finish(self) -> Option<Arc<Message>> {
        (!self.message.parts.is_empty()).then(|| Arc::new(self.message))
    }
}
