//! Tools that join after a session started: an MCP server's tools, once the
//! server is up.
//!
//! A [`LateTools`] is shared by everything that offers tools in a session
//! (the main agent and its subagents) and by whatever starts the sources
//! (the MCP client). Sources add and remove their tools at any time; the
//! loop takes a [`LateSnapshot`] at each turn boundary and offers the
//! built-in tools followed by the snapshot's tools, so what one request
//! offers never changes under it.
//!
//! Invariants:
//! - Tools keep their join order: a source's tools stay where they first
//!   joined (a source that adds again replaces its tools in place), and a
//!   new source goes last. Appending keeps the cached prefix of requests
//!   (tools, then system prompt, then history) intact as long as possible.
//! - The generation counts changes: it grows by one with each change of
//!   the tools (an add that changes nothing is no change), so a reader
//!   compares two numbers to know whether to look again.
//! - Every method is synchronous and holds the lock only to copy or swap a
//!   few pointers: a snapshot is an `Arc`, taken without copying a tool.
//! - Each tool's argument validator is compiled once, whatever the number
//!   of snapshots and registries made from it.
//!
//! Sources also report their state ([`McpServerStatus`]): the latest per
//! source is kept (for whoever looks later), and every report is broadcast
//! to the current watchers (bounded; a watcher that falls behind loses the
//! oldest reports, never blocks a source).

use std::sync::{Arc, Mutex, MutexGuard};

use gyre_protocol::{McpServerState, McpServerStatus};
use tokio::sync::broadcast;

use crate::Tool;
use crate::registry::Entry;

/// Status reports a watcher may fall behind by before it loses the oldest.
const STATUS_BACKLOG: usize = 64;

/// The shared, changing set of late tools. See the module docs.
pub struct LateTools {
    state: Mutex<State>,
    statuses: broadcast::Sender<McpServerStatus>,
}

struct State {
    snapshot: Arc<LateSnapshot>,
    /// The latest status of each source that reported one, in the order
    /// they first reported.
    statuses: Vec<McpServerStatus>,
}

/// The late tools at one moment: cheap to clone (an `Arc`), never changes.
#[derive(Clone, Default)]
pub struct LateSnapshot {
    generation: u64,
    sources: Vec<SourceTools>,
}

#[derive(Clone)]
struct SourceTools {
    source: String,
    entries: Vec<Entry>,
}

/// What changed for one source between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LateChange {
    pub source: String,
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

impl std::fmt::Debug for LateTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let snapshot = self.snapshot();
        f.debug_struct("LateTools")
            .field("generation", &snapshot.generation)
            .field("tools", &snapshot.names())
            .finish()
    }
}

impl std::fmt::Debug for LateSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LateSnapshot")
            .field("generation", &self.generation)
            .field("tools", &self.names())
            .finish()
    }
}

impl Default for LateTools {
    fn default() -> Self {
        Self {
            state: Mutex::new(State {
                snapshot: Arc::default(),
                statuses: Vec::new(),
            }),
            statuses: broadcast::channel(STATUS_BACKLOG).0,
        }
    }
}

impl LateTools {
    /// An empty set, shared.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets `source`'s tools: in place of its earlier ones if it had some,
    /// else after every other source's. Tools with a name already taken
    /// (by another source, or twice in `tools`) are left out, the first
    /// one kept. Returns whether anything changed.
    pub fn add(&self, source: &str, tools: Vec<Arc<dyn Tool>>) -> bool {
        let mut state = self.lock();
        let current = &state.snapshot;
        let taken = |name: &str| {
            current
                .sources
                .iter()
                .filter(|s| s.source != source)
                .any(|s| s.entries.iter().any(|e| e.name() == name))
        };
        let old = current.sources.iter().find(|s| s.source == source);
        let mut entries: Vec<Entry> = Vec::with_capacity(tools.len());
        for tool in tools {
            let name = tool.spec().name.as_str();
            if taken(name) || entries.iter().any(|e| e.name() == name) {
                tracing::warn!(source, tool = name, "a late tool's name is taken; left out");
                continue;
            }
            // An unchanged tool keeps its entry (and compiled validator).
            let kept = old
                .and_then(|o| o.entries.iter().find(|e| e.name() == name))
                .filter(|e| e.tool.spec() == tool.spec());
            entries.push(kept.cloned().unwrap_or_else(|| Entry::new(tool)));
        }
        if let Some(old) = old
            && old.entries.len() == entries.len()
            && old
                .entries
                .iter()
                .zip(&entries)
                .all(|(a, b)| a.tool.spec() == b.tool.spec())
        {
            return false;
        }
        let mut next = LateSnapshot::clone(current);
        next.generation += 1;
        let tools = SourceTools {
            source: source.to_string(),
            entries,
        };
        match next.sources.iter_mut().find(|s| s.source == source) {
            Some(slot) => *slot = tools,
            None => next.sources.push(tools),
        }
        state.snapshot = Arc::new(next);
        true
    }

    /// Removes `source`'s tools; returns their names.
    pub fn remove(&self, source: &str) -> Vec<String> {
        let mut state = self.lock();
        let Some(at) = state
            .snapshot
            .sources
            .iter()
            .position(|s| s.source == source)
        else {
            return Vec::new();
        };
        let mut next = LateSnapshot::clone(&state.snapshot);
        next.generation += 1;
        let gone = next.sources.remove(at);
        state.snapshot = Arc::new(next);
        gone.entries.iter().map(|e| e.name().to_string()).collect()
    }

    /// The tools now.
    pub fn snapshot(&self) -> Arc<LateSnapshot> {
        self.lock().snapshot.clone()
    }

    /// The generation now (see the module docs).
    pub fn generation(&self) -> u64 {
        self.lock().snapshot.generation
    }

    /// Records `status` as its source's latest and tells the watchers.
    pub fn report(&self, status: McpServerStatus) {
        let mut state = self.lock();
        match state
            .statuses
            .iter_mut()
            .find(|s| s.server == status.server)
        {
            Some(slot) => *slot = status.clone(),
            None => state.statuses.push(status.clone()),
        }
        // Sent under the lock, so that `watch` sees each report exactly
        // once: in the list or on the channel. No watcher is no error.
        let _ = self.statuses.send(status);
    }

    /// The latest status of each source that reported one.
    pub fn statuses(&self) -> Vec<McpServerStatus> {
        self.lock().statuses.clone()
    }

    /// Waits until no source is starting (each reported ready, failed or
    /// crashed): a headless run's first request then offers every server's
    /// tools. Returns at once when none is starting; the caller bounds the
    /// wait (a source's own start is bounded by its timeout).
    pub async fn wait_started(&self) {
        let (statuses, mut reports) = self.watch();
        let starting = |status: &McpServerStatus| status.status == McpServerState::Starting;
        let mut waiting: Vec<String> = statuses
            .iter()
            .filter(|s| starting(s))
            .map(|s| s.server.clone())
            .collect();
        while !waiting.is_empty() {
            match reports.recv().await {
                Ok(status) => {
                    waiting.retain(|name| *name != status.server);
                    if starting(&status) {
                        waiting.push(status.server);
                    }
                }
                // Fell behind: the latest statuses say who still starts.
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    waiting = self
                        .statuses()
                        .iter()
                        .filter(|s| starting(s))
                        .map(|s| s.server.clone())
                        .collect();
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    /// The latest statuses and a receiver of every report after them.
    pub fn watch(&self) -> (Vec<McpServerStatus>, broadcast::Receiver<McpServerStatus>) {
        let state = self.lock();
        (state.statuses.clone(), self.statuses.subscribe())
    }
}

impl LateSnapshot {
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn is_empty(&self) -> bool {
        self.sources.iter().all(|s| s.entries.is_empty())
    }

    /// Every tool with its source, in join order.
    pub fn tools(&self) -> impl Iterator<Item = (&str, &Arc<dyn Tool>)> {
        self.sources
            .iter()
            .flat_map(|s| s.entries.iter().map(|e| (s.source.as_str(), &e.tool)))
    }

    /// Every tool's name, in join order.
    pub fn names(&self) -> Vec<String> {
        self.tools().map(|(_, t)| t.spec().name.clone()).collect()
    }

    pub(crate) fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.sources.iter().flat_map(|s| s.entries.iter())
    }

    /// What changed from `older` to this snapshot, per source, counting
    /// only the tools `keep` accepts (an agent's selection): sources in
    /// this snapshot's order, then sources that left; sources whose kept
    /// tools did not change are left out.
    pub fn changes_since(
        &self,
        older: &LateSnapshot,
        mut keep: impl FnMut(&dyn Tool) -> bool,
    ) -> Vec<LateChange> {
        let mut kept_names = |snapshot: &LateSnapshot, source: &str| -> Vec<String> {
            snapshot
                .sources
                .iter()
                .filter(|s| s.source == source)
                .flat_map(|s| s.entries.iter())
                .filter(|e| keep(e.tool.as_ref()))
                .map(|e| e.name().to_string())
                .collect()
        };
        let mut sources: Vec<&str> = self.sources.iter().map(|s| s.source.as_str()).collect();
        for old in &older.sources {
            if !sources.contains(&old.source.as_str()) {
                sources.push(&old.source);
            }
        }
        let mut changes = Vec::new();
        for source in sources {
            let before = kept_names(older, source);
            let after = kept_names(self, source);
            let added: Vec<String> = after
                .iter()
                .filter(|n| !before.contains(n))
                .cloned()
                .collect();
            let removed: Vec<String> = before
                .iter()
                .filter(|n| !after.contains(n))
                .cloned()
                .collect();
            // A tool that stayed but changed its spec counts as both.
            let changed: Vec<String> = after
                .iter()
                .filter(|n| before.contains(n) && self.spec_differs(older, n))
                .cloned()
                .collect();
            if added.is_empty() && removed.is_empty() && changed.is_empty() {
                continue;
            }
            changes.push(LateChange {
                source: source.to_string(),
                added: added.into_iter().chain(changed.iter().cloned()).collect(),
                removed: removed.into_iter().chain(changed).collect(),
            });
        }
        changes
    }

    fn spec_differs(&self, older: &LateSnapshot, name: &str) -> bool {
        let find = |s: &LateSnapshot| {
            s.entries()
                .find(|e| e.name() == name)
                .map(|e| e.tool.clone())
        };
        match (find(self), find(older)) {
            (Some(a), Some(b)) => a.spec() != b.spec(),
            _ => false,
        }
    }
}
