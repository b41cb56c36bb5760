//! The workspace's language servers: which one serves a file, started on
//! first use, restarted a bounded number of times, and the bounded wait
//! for a changed file's diagnostics.
//!
//! Invariants:
//! - One server per (server, root): the root is the nearest directory above
//!   the file (inside the workspace) holding one of the server's root
//!   markers, else the workspace.
//! - A start runs in a task of its own: a caller waits for it only within
//!   its own bound (an edit's wait), and a start that outlasts it goes on
//!   for the next caller. Nothing here runs before a matching file is read
//!   or changed, so the first model request never waits on a server.
//! - A server that cannot start (missing, or gone before it answered
//!   `initialize`) is unavailable for the session, silently (logged). One
//!   that exits after it started is restarted at most `max_restarts` times;
//!   each exit is said once, in the next report for that server.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lsp_types::Url;
use tokio::sync::watch;

use crate::client::Client;
use crate::config::{Server, Settings};
use crate::report::Report;

/// How long a server may take to answer `initialize` (pyright and
/// rust-analyzer on a loaded machine take seconds; the edit's own wait is
/// what bounds the model's side).
const START_BOUND: Duration = Duration::from_secs(60);

type OnReady = Box<dyn Fn() + Send + Sync>;

/// The language servers of one workspace.
pub struct Lsp {
    servers: Vec<Server>,
    settings: Settings,
    workspace: PathBuf,
    slots: Mutex<HashMap<(String, PathBuf), Arc<Slot>>>,
    on_ready: Option<OnReady>,
}

impl std::fmt::Debug for Lsp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lsp")
            .field(
                "servers",
                &self.servers.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

#[derive(Clone, Debug)]
enum State {
    Starting,
    Ready(Arc<Client>),
    /// Could not start; never tried again.
    Unavailable,
    /// Exited more often than it may be restarted.
    GaveUp,
}

struct Slot {
    server: Server,
    root: PathBuf,
    state: watch::Sender<State>,
    restarts: Mutex<u32>,
    /// Said in the next report (an exit, a restart).
    notes: Mutex<Vec<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Lsp {
    /// `on_ready` is called each time a server has started.
    pub fn new(
        servers: Vec<Server>,
        settings: Settings,
        workspace: &Path,
        on_ready: Option<OnReady>,
    ) -> Arc<Lsp> {
        Arc::new(Lsp {
            servers,
            settings,
            workspace: workspace.to_path_buf(),
            slots: Mutex::default(),
            on_ready,
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Whether some server serves `path` (by its extension).
    pub fn serves(&self, path: &Path) -> bool {
        self.server_for(path).is_some()
    }

    fn server_for(&self, path: &Path) -> Option<&Server> {
        let ext = path.extension()?.to_str()?;
        self.servers
            .iter()
            .find(|s| s.extensions.iter().any(|e| e == ext))
    }

    fn root_for(&self, server: &Server, path: &Path) -> PathBuf {
        let mut dir = path.parent();
        while let Some(d) = dir {
            if !d.starts_with(&self.workspace) {
                break;
            }
            if server.root_markers.iter().any(|m| d.join(m).exists()) {
                return d.to_path_buf();
            }
            dir = d.parent();
        }
        self.workspace.clone()
    }

    /// The slot of the server for `path`, its start begun if it is new.
    fn slot(self: &Arc<Self>, path: &Path) -> Option<Arc<Slot>> {
        let server = self.server_for(path)?;
        let root = self.root_for(server, path);
        let key = (server.name.clone(), root.clone());
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.get(&key) {
            return Some(slot.clone());
        }
        let slot = Arc::new(Slot {
            server: server.clone(),
            root,
            state: watch::Sender::new(State::Starting),
            restarts: Mutex::new(0),
            notes: Mutex::default(),
        });
        slots.insert(key, slot.clone());
        drop(slots);
        self.start(&slot);
        Some(slot)
    }

    fn start(self: &Arc<Self>, slot: &Arc<Slot>) {
        slot.state.send_replace(State::Starting);
        let (lsp, slot) = (self.clone(), slot.clone());
        tokio::spawn(async move {
            match Client::start(&slot.server, &slot.root, START_BOUND).await {
                Ok(client) => {
                    tracing::info!(server = %slot.server.name, root = %slot.root.display(), "language server started");
                    slot.state.send_replace(State::Ready(Arc::new(client)));
                    if let Some(on_ready) = &lsp.on_ready {
                        on_ready();
                    }
                }
                Err(error) => {
                    tracing::warn!(server = %slot.server.name, "language server unavailable: {error}");
                    slot.state.send_replace(State::Unavailable);
                }
            }
        });
    }

    /// The slot's client once started; `None` if it cannot start. A dead
    /// client is replaced first (within the restart bound).
    async fn ready(self: &Arc<Self>, slot: &Arc<Slot>) -> Option<Arc<Client>> {
        self.restart_if_dead(slot);
        let mut state = slot.state.subscribe();
        let state = state
            .wait_for(|s| !matches!(s, State::Starting))
            .await
            .ok()?
            .clone();
        match state {
            State::Ready(client) => Some(client),
            _ => None,
        }
    }

    /// If the slot's server exited, starts it again (or gives up) and
    /// notes it for the next report.
    fn restart_if_dead(self: &Arc<Self>, slot: &Arc<Slot>) {
        let dead = matches!(&*slot.state.borrow(), State::Ready(c) if c.is_dead());
        if !dead {
            return;
        }
        let name = &slot.server.name;
        let max = self.settings.max_restarts;
        let mut restarts = lock(&slot.restarts);
        if *restarts < max {
            *restarts += 1;
            lock(&slot.notes).push(format!(
                "the language server {name} exited; it was restarted ({} of at most {max} restarts)",
                *restarts
            ));
            tracing::warn!(server = %name, restarts = *restarts, "language server exited; restarting it");
            drop(restarts);
            self.start(slot);
        } else {
            lock(&slot.notes).push(format!(
                "the language server {name} exited again after {max} restarts; it is not started again in this session"
            ));
            tracing::warn!(server = %name, "language server exited too often; giving up");
            slot.state.send_replace(State::GaveUp);
        }
    }

    /// `path` was read: its server starts (if it has not), and is given the
    /// file, in the background.
    pub fn opened(self: &Arc<Self>, path: &Path) {
        let Some(slot) = self.slot(path) else { return };
        let (lsp, path) = (self.clone(), path.to_path_buf());
        tokio::spawn(async move {
            if let Some(client) = lsp.ready(&slot).await
                && let Ok(text) = tokio::fs::read_to_string(&path).await
                && let Ok(uri) = Url::from_file_path(&path)
            {
                let _ = client.sync(&uri, language_id(&path), &text).await;
            }
        });
    }

    /// `path` changed (or the model asks about it): gives its server the
    /// file as it is on disk and waits, at most the configured wait, for
    /// its diagnostics. `None`: no server for it, or none started.
    pub async fn check(self: &Arc<Self>, path: &Path) -> Option<Report> {
        self.check_within(path, self.settings.wait).await
    }

    /// [`Lsp::check`] with a wait of its own.
    pub async fn check_within(self: &Arc<Self>, path: &Path, wait: Duration) -> Option<Report> {
        let slot = self.slot(path)?;
        let uri = Url::from_file_path(path).ok()?;
        let waited = tokio::time::timeout(wait, async {
            let client = self.ready(&slot).await?;
            let text = tokio::fs::read_to_string(path).await.ok()?;
            let seq = client.published(&uri).map_or(0, |p| p.seq);
            let (version, sent) = client.sync(&uri, language_id(path), &text).await.ok()?;
            match (sent, client.published(&uri)) {
                (false, Some(published)) => Some(published),
                _ => client.wait_for(&uri, seq, version).await,
            }
        })
        .await;
        self.restart_if_dead(&slot);
        let notes: Vec<String> = std::mem::take(&mut *lock(&slot.notes));
        let shown = self.shown(path);
        let mut report = match waited {
            Ok(Some(published)) => Report::new(
                &slot.server.name,
                &shown,
                &published.diagnostics,
                self.settings.warnings,
                self.settings.max_shown,
            ),
            _ if notes.is_empty() => return None,
            _ => Report {
                server: slot.server.name.clone(),
                file: shown,
                ..Report::default()
            },
        };
        report.notes = notes;
        Some(report)
    }

    /// The latest diagnostics of every file a running server reported on,
    /// files with nothing shown left out.
    pub fn workspace_reports(&self) -> Vec<Report> {
        let slots: Vec<Arc<Slot>> = lock(&self.slots).values().cloned().collect();
        let mut reports = Vec::new();
        for slot in slots {
            let State::Ready(client) = &*slot.state.borrow() else {
                continue;
            };
            for (uri, published) in client.all_published() {
                let Ok(path) = uri.to_file_path() else {
                    continue;
                };
                let report = Report::new(
                    &slot.server.name,
                    &self.shown(&path),
                    &published.diagnostics,
                    self.settings.warnings,
                    self.settings.max_shown,
                );
                if !report.lines.is_empty() {
                    reports.push(report);
                }
            }
        }
        reports.sort_by(|a, b| a.file.cmp(&b.file));
        reports
    }

    fn shown(&self, path: &Path) -> String {
        path.strip_prefix(&self.workspace)
            .unwrap_or(path)
            .display()
            .to_string()
    }
}

/// The LSP language id of a file, by its extension.
fn language_id(path: &Path) -> &'static str {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
    {
        "rs" => "rust",
        "go" => "go",
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hh" | "hpp" | "hxx" => "cpp",
        _ => "plaintext",
    }
}
