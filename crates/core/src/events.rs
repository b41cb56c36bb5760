//! The sending side of a run's event stream.
//!
//! The channel is bounded: a slow consumer slows the loop down rather than
//! letting events pile up in memory. Progress chunks of running tools are the
//! one exception to "every event arrives": they are display-only and are
//! dropped, not queued, when the consumer is behind.

use gyre_protocol::Event;
use tokio::sync::mpsc;

/// How many events may wait for the consumer.
pub const EVENT_BUFFER: usize = 1024;

#[derive(Clone, Debug)]
pub struct EventSink {
    tx: mpsc::Sender<Event>,
}

impl EventSink {
    pub fn channel() -> (EventSink, mpsc::Receiver<Event>) {
        let (tx, rx) = mpsc::channel(EVENT_BUFFER);
        (EventSink { tx }, rx)
    }

    /// Sends an event, waiting for room. A consumer that went away is not an
    /// error: the run goes on and is recorded in the store.
    pub async fn emit(&self, event: Event) {
        let _ = self.tx.send(event).await;
    }

    /// Sends a display-only event if there is room.
    pub fn emit_if_room(&self, event: Event) {
        let _ = self.tx.try_send(event);
    }
}
