//! The background subagents of one session: what is running, what ended,
//! and which ends the model has not been told of yet.
//!
//! Invariants:
//! - Each ended task is delivered to the model exactly once
//!   ([`BackgroundTasks::take_finished`]), in the order the tasks ended.
//! - At most [`MAX_REMEMBERED`] tasks are remembered; the oldest delivered
//!   ones are forgotten first (their sessions stay in the store, where
//!   `task_output` still finds them).
//! - The lock is a std mutex held for a few statements, never across an
//!   await; waiters are woken through a [`Notify`].

use std::collections::VecDeque;
use std::sync::Mutex;

use gyre_protocol::{FinishReason, RunSummary};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// How many background tasks a session remembers at once.
pub const MAX_REMEMBERED: usize = 64;

/// One background task, as `task_output` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskInfo {
    /// The subagent's session id.
    pub id: String,
    pub agent: String,
    pub description: String,
    pub state: TaskState,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TaskState {
    Running,
    Finished(RunSummary),
    /// Started by an earlier process that ended before the task did; its
    /// transcript is stored and `task` with `resume` continues it.
    Interrupted,
}

#[derive(Debug)]
struct Entry {
    info: TaskInfo,
    cancel: CancellationToken,
    delivered: bool,
}

/// A session's background tasks.
#[derive(Debug, Default)]
pub struct BackgroundTasks {
    entries: Mutex<Inner>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct Inner {
    entries: Vec<Entry>,
    /// Ended, not yet delivered, in the order they ended.
    ended: VecDeque<String>,
}

impl BackgroundTasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a task that has just started.
    pub fn started(&self, id: &str, agent: &str, description: &str, cancel: CancellationToken) {
        let mut inner = self.lock();
        if inner.entries.len() >= MAX_REMEMBERED
            && let Some(oldest) = inner.entries.iter().position(|e| e.delivered)
        {
            inner.entries.remove(oldest);
        }
        inner.entries.push(Entry {
            info: TaskInfo {
                id: id.to_string(),
                agent: agent.to_string(),
                description: description.to_string(),
                state: TaskState::Running,
            },
            cancel,
            delivered: false,
        });
    }

    /// Records a task's end and wakes whoever waits for one.
    pub fn finished(&self, id: &str, summary: RunSummary) {
        {
            let mut inner = self.lock();
            let Some(entry) = inner.entries.iter_mut().find(|e| e.info.id == id) else {
                return;
            };
            entry.info.state = TaskState::Finished(summary);
            inner.ended.push_back(id.to_string());
        }
        self.changed.notify_waiters();
    }

    /// Records a task that an earlier process started and that ended (or
    /// was cut off) without the model being told: it is delivered like a
    /// task that ended here.
    pub fn ended_elsewhere(&self, id: &str, agent: &str, description: &str, state: TaskState) {
        let mut inner = self.lock();
        inner.entries.push(Entry {
            info: TaskInfo {
                id: id.to_string(),
                agent: agent.to_string(),
                description: description.to_string(),
                state,
            },
            cancel: CancellationToken::new(),
            delivered: false,
        });
        inner.ended.push_back(id.to_string());
    }

    /// The task `id`, if remembered.
    pub fn get(&self, id: &str) -> Option<TaskInfo> {
        self.lock()
            .entries
            .iter()
            .find(|e| e.info.id == id)
            .map(|e| e.info.clone())
    }

    /// Whether the task `id` is remembered and still running.
    pub fn is_running(&self, id: &str) -> bool {
        self.get(id)
            .is_some_and(|info| info.state == TaskState::Running)
    }

    /// How many tasks are still running.
    pub fn running(&self) -> usize {
        self.lock()
            .entries
            .iter()
            .filter(|e| e.info.state == TaskState::Running)
            .count()
    }

    /// Whether a task still runs or ended without being delivered (a
    /// [`BackgroundTasks::wait_for_one`] would return true).
    pub fn pending(&self) -> bool {
        let inner = self.lock();
        !inner.ended.is_empty()
            || inner
                .entries
                .iter()
                .any(|e| e.info.state == TaskState::Running)
    }

    /// The tasks that ended since the last call, in the order they ended;
    /// each is returned once.
    pub fn take_finished(&self) -> Vec<TaskInfo> {
        let mut inner = self.lock();
        let ended: Vec<String> = inner.ended.drain(..).collect();
        let mut out = Vec::with_capacity(ended.len());
        for id in ended {
            if let Some(entry) = inner.entries.iter_mut().find(|e| e.info.id == id) {
                entry.delivered = true;
                out.push(entry.info.clone());
            }
        }
        out
    }

    /// Waits until a running task ends (returns at once when one ended and
    /// was not delivered yet); false when none is running or waiting.
    pub async fn wait_for_one(&self) -> bool {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            // Registered before the check, so an end in between is not missed.
            changed.as_mut().enable();
            {
                let inner = self.lock();
                if !inner.ended.is_empty() {
                    return true;
                }
                if !inner
                    .entries
                    .iter()
                    .any(|e| e.info.state == TaskState::Running)
                {
                    return false;
                }
            }
            changed.await;
        }
    }

    /// Waits until the task `id` is no longer running (at once when it is
    /// not remembered or already ended).
    pub async fn wait_until_ended(&self, id: &str) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if !self.is_running(id) {
                return;
            }
            changed.await;
        }
    }

    /// Counts an ended task as delivered (its result was read otherwise).
    pub fn mark_delivered(&self, id: &str) {
        let mut inner = self.lock();
        inner.ended.retain(|ended| ended != id);
        if let Some(entry) = inner.entries.iter_mut().find(|e| e.info.id == id) {
            entry.delivered = true;
        }
    }

    /// Cancels every running task (the run that started them is over).
    pub fn cancel_all(&self) {
        for entry in self.lock().entries.iter() {
            if entry.info.state == TaskState::Running {
                entry.cancel.cancel();
            }
        }
    }
}

/// A word for how a subagent's run ended.
pub fn status_word(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Completed => "completed",
        FinishReason::MaxTurns => "stopped at its turn limit",
        FinishReason::Budget => "stopped at its budget",
        FinishReason::LoopGuard => "stopped by the loop guard",
        FinishReason::Failed => "failed",
        FinishReason::Cancelled => "cancelled",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gyre_protocol::Usage;

    fn summary(text: &str) -> RunSummary {
        RunSummary {
            reason: FinishReason::Completed,
            final_text: text.into(),
            num_turns: 1,
            usage: Usage::default(),
            cost_usd: 0.0,
            duration_ms: 1,
            error: None,
        }
    }

    #[tokio::test]
    async fn ends_are_delivered_once_in_order() {
        let tasks = BackgroundTasks::default();
        assert!(!tasks.wait_for_one().await);
        tasks.started("a", "explore", "first", CancellationToken::new());
        tasks.started("b", "explore", "second", CancellationToken::new());
        assert_eq!(tasks.running(), 2);
        tasks.finished("b", summary("B"));
        tasks.finished("a", summary("A"));
        assert!(tasks.wait_for_one().await);
        let ids: Vec<String> = tasks.take_finished().into_iter().map(|t| t.id).collect();
        assert_eq!(ids, ["b", "a"]);
        assert!(tasks.take_finished().is_empty());
        assert!(!tasks.wait_for_one().await);
    }

    #[tokio::test]
    async fn a_waiter_wakes_when_a_task_ends() {
        let tasks = std::sync::Arc::new(BackgroundTasks::default());
        tasks.started("a", "build", "x", CancellationToken::new());
        let waiter = tokio::spawn({
            let tasks = tasks.clone();
            async move { tasks.wait_for_one().await }
        });
        tokio::task::yield_now().await;
        tasks.finished("a", summary("done"));
        assert!(waiter.await.unwrap());
    }

    #[test]
    fn cancel_all_reaches_running_tasks() {
        let tasks = BackgroundTasks::default();
        let running = CancellationToken::new();
        let done = CancellationToken::new();
        tasks.started("a", "build", "x", running.clone());
        tasks.started("b", "build", "y", done.clone());
        tasks.finished("b", summary(""));
        tasks.cancel_all();
        assert!(running.is_cancelled());
        assert!(!done.is_cancelled());
    }
}
