//! One running language server: the child process, its JSON-RPC traffic,
//! the documents gyre opened in it and the diagnostics it published.
//!
//! Invariants: one task reads the server's stdout and is the only writer of
//! the diagnostics; requests from the server are answered at once (null
//! configuration, accepted registrations) so it never waits on gyre. When
//! the stream ends the client is dead for good: pending requests fail,
//! waiters wake, and the manager starts a new one. The child is killed when
//! the client is dropped. stderr goes to the log (debug), never to the
//! terminal.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lsp_types::{Diagnostic, Url};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{oneshot, watch};

use crate::LspError;
use crate::config::Server;

/// What a server last published for one document.
#[derive(Debug, Clone, Default)]
pub struct Published {
    /// Counts publications for the document, so a waiter knows a new one.
    pub seq: u64,
    pub version: Option<i32>,
    pub diagnostics: Vec<Diagnostic>,
}

#[derive(Debug, Default)]
struct Shared {
    published: HashMap<Url, Published>,
    dead: bool,
}

type Pending = Mutex<HashMap<i64, oneshot::Sender<Result<Value, Value>>>>;

/// A started, initialized server.
#[derive(Debug)]
pub struct Client {
    pub name: String,
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    next_id: AtomicI64,
    pending: Arc<Pending>,
    shared: Arc<Mutex<Shared>>,
    /// Bumped on every publication and at death.
    changes: watch::Receiver<u64>,
    /// Open documents: their version and the text last sent.
    docs: Mutex<HashMap<Url, (i32, String)>>,
    _child: Mutex<Child>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Client {
    /// Starts `server` in `root` and completes the `initialize` handshake
    /// within `bound`.
    pub async fn start(server: &Server, root: &Path, bound: Duration) -> Result<Client, LspError> {
        let mut child = Command::new(&server.program)
            .args(&server.args)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| LspError::Spawn(server.name.clone(), e.to_string()))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(LspError::Spawn(server.name.clone(), "no pipes".into()));
        };
        let name = server.name.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(server = %name, "{line}");
            }
        });
        let pending: Arc<Pending> = Arc::default();
        let shared: Arc<Mutex<Shared>> = Arc::default();
        let (tx, changes) = watch::channel(0u64);
        let stdin = Arc::new(tokio::sync::Mutex::new(stdin));
        let (answers_tx, mut answers) = tokio::sync::mpsc::channel::<Value>(64);
        // The server's requests are answered by a task of their own,
        // through the same stdin as gyre's messages.
        let answer_stdin = stdin.clone();
        tokio::spawn(async move {
            while let Some(message) = answers.recv().await {
                let mut stdin = answer_stdin.lock().await;
                if crate::rpc::write(&mut *stdin, &message).await.is_err() {
                    return;
                }
            }
        });
        let client = Client {
            name: server.name.clone(),
            stdin,
            next_id: AtomicI64::new(1),
            pending: pending.clone(),
            shared: shared.clone(),
            changes,
            docs: Mutex::default(),
            _child: Mutex::new(child),
        };
        tokio::spawn(read_loop(stdout, pending, shared, tx, answers_tx));
        let root_uri = Url::from_directory_path(root).ok();
        let folder_name = root.file_name().map(|n| n.to_string_lossy().into_owned());
        let params = json!({
            "processId": std::process::id(),
            "clientInfo": {"name": "gyre", "version": env!("CARGO_PKG_VERSION")},
            "rootUri": root_uri,
            "rootPath": root,
            "workspaceFolders": [{"uri": root_uri, "name": folder_name.unwrap_or_default()}],
            "initializationOptions": server.initialization_options,
            "capabilities": {
                "workspace": {"configuration": true, "workspaceFolders": true},
                "textDocument": {
                    "synchronization": {"didSave": true, "dynamicRegistration": false},
                    "publishDiagnostics": {"versionSupport": true, "relatedInformation": false}
                },
                "window": {"workDoneProgress": false}
            }
        });
        let handshake = async {
            client.request("initialize", params).await?;
            client.notify("initialized", json!({})).await
        };
        tokio::time::timeout(bound, handshake)
            .await
            .map_err(|_| LspError::Timeout(server.name.clone()))??;
        Ok(client)
    }

    pub fn is_dead(&self) -> bool {
        lock(&self.shared).dead
    }

    async fn send(&self, message: &Value) -> Result<(), LspError> {
        let mut stdin = self.stdin.lock().await;
        crate::rpc::write(&mut *stdin, message)
            .await
            .map_err(|_| LspError::Exited(self.name.clone()))
    }

    pub async fn notify(&self, method: &str, params: Value) -> Result<(), LspError> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await
    }

    pub async fn request(&self, method: &str, params: Value) -> Result<Value, LspError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        if self.is_dead() {
            return Err(LspError::Exited(self.name.clone()));
        }
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        match rx.await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(LspError::Refused(self.name.clone(), error.to_string())),
            Err(_) => Err(LspError::Exited(self.name.clone())),
        }
    }

    /// Sends `text` as the document's content (opening it the first time,
    /// then as a whole-text change) and a save; returns the version and
    /// whether anything was sent (nothing when the server has this text).
    pub async fn sync(
        &self,
        uri: &Url,
        language: &str,
        text: &str,
    ) -> Result<(i32, bool), LspError> {
        let (version, first) = {
            let mut docs = lock(&self.docs);
            match docs.get_mut(uri) {
                Some((version, sent)) if sent == text => return Ok((*version, false)),
                Some((version, sent)) => {
                    *version += 1;
                    text.clone_into(sent);
                    (*version, false)
                }
                None => {
                    docs.insert(uri.clone(), (1, text.to_owned()));
                    (1, true)
                }
            }
        };
        if first {
            self.notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": language, "version": version, "text": text}}),
            )
            .await?;
        } else {
            self.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
            )
            .await?;
            self.notify(
                "textDocument/didSave",
                json!({"textDocument": {"uri": uri}, "text": text}),
            )
            .await?;
        }
        Ok((version, true))
    }

    /// What was published for `uri` so far (`None`: nothing yet).
    pub fn published(&self, uri: &Url) -> Option<Published> {
        lock(&self.shared).published.get(uri).cloned()
    }

    /// Every document's latest diagnostics.
    pub fn all_published(&self) -> Vec<(Url, Published)> {
        let shared = lock(&self.shared);
        let mut all: Vec<_> = shared
            .published
            .iter()
            .map(|(u, p)| (u.clone(), p.clone()))
            .collect();
        all.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        all
    }

    /// Waits until the server publishes for `uri` after publication `seq`
    /// for `version` (or a version it does not name), or dies. The caller
    /// bounds the wait.
    pub async fn wait_for(&self, uri: &Url, seq: u64, version: i32) -> Option<Published> {
        let mut changes = self.changes.clone();
        loop {
            {
                let shared = lock(&self.shared);
                if let Some(p) = shared.published.get(uri)
                    && p.seq > seq
                    && p.version.is_none_or(|v| v >= version)
                {
                    return Some(p.clone());
                }
                if shared.dead {
                    return None;
                }
            }
            if changes.changed().await.is_err() {
                return None;
            }
        }
    }
}

/// Reads the server's messages until its stdout ends.
async fn read_loop(
    stdout: tokio::process::ChildStdout,
    pending: Arc<Pending>,
    shared: Arc<Mutex<Shared>>,
    changes: watch::Sender<u64>,
    answers: tokio::sync::mpsc::Sender<Value>,
) {
    let mut reader = BufReader::new(stdout);
    while let Ok(Some(message)) = crate::rpc::read(&mut reader).await {
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").cloned();
        match (method, id) {
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { continue };
                if let Some(tx) = lock(&pending).remove(&id) {
                    let outcome = match message.get("error") {
                        Some(error) => Err(error.clone()),
                        None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                    };
                    let _ = tx.send(outcome);
                }
            }
            (Some(method), Some(id)) => {
                let _ = answers
                    .send(answer(method, id, message.get("params")))
                    .await;
            }
            (Some("textDocument/publishDiagnostics"), None) => {
                let Some(params) = message.get("params") else {
                    continue;
                };
                let Ok(params) =
                    serde_json::from_value::<lsp_types::PublishDiagnosticsParams>(params.clone())
                else {
                    continue;
                };
                {
                    let mut shared = lock(&shared);
                    let entry = shared.published.entry(params.uri).or_default();
                    entry.seq += 1;
                    entry.version = params.version;
                    entry.diagnostics = params.diagnostics;
                }
                changes.send_modify(|n| *n += 1);
            }
            _ => {}
        }
    }
    lock(&shared).dead = true;
    lock(&pending).clear();
    changes.send_modify(|n| *n += 1);
}

/// gyre's answer to a request from the server.
fn answer(method: &str, id: Value, params: Option<&Value>) -> Value {
    let result = match method {
        "workspace/configuration" => {
            let items = params
                .and_then(|p| p.get("items"))
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            Value::Array(vec![Value::Null; items])
        }
        "client/registerCapability"
        | "client/unregisterCapability"
        | "window/workDoneProgress/create"
        | "window/showMessageRequest" => Value::Null,
        "workspace/workspaceFolders" => Value::Array(Vec::new()),
        _ => {
            return json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": format!("gyre does not handle {method}")}});
        }
    };
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}
