//! gyre's side of control requests to the SDK (`can_use_tool`,
//! `hook_callback`, `mcp_message`): a request id per request, the waiting
//! answer, and the SDK's reply matched to it.
//!
//! Bounded: at most [`MAX_PENDING`] requests wait at once (more are refused
//! at once, as an error for that request); when stdin closes every waiting
//! request fails, so nothing waits for an answer that cannot come.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;
use gyre_core::{PermissionPrompt, PromptDecision};
use gyre_protocol::ToolCall;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::protocol::{self, ToolAnswer};

/// Requests that may wait for the SDK at once.
const MAX_PENDING: usize = 64;

type Reply = oneshot::Sender<Result<Value, String>>;

/// Sends gyre's control requests and routes the SDK's answers back.
#[derive(Debug)]
pub struct Controller {
    out: mpsc::Sender<Value>,
    pending: Mutex<Option<HashMap<String, Reply>>>,
    next: AtomicU64,
}

impl Controller {
    pub fn new(out: mpsc::Sender<Value>) -> Self {
        Self {
            out,
            pending: Mutex::new(Some(HashMap::new())),
            next: AtomicU64::new(1),
        }
    }

    /// Asks the SDK; its response, or why there is none.
    pub async fn ask(&self, body: Value) -> Result<Value, String> {
        let id = format!("gyre_{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.pending.lock().map_err(|_| "internal error")?;
            let Some(pending) = pending.as_mut() else {
                return Err("stdin is closed: the SDK can no longer answer".into());
            };
            if pending.len() >= MAX_PENDING {
                return Err(format!("{MAX_PENDING} requests already wait for the SDK"));
            }
            pending.insert(id.clone(), tx);
        }
        if self.out.send(protocol::request(&id, body)).await.is_err() {
            self.forget(&id);
            return Err("stdout is closed".into());
        }
        rx.await
            .unwrap_or_else(|_| Err("stdin closed before the SDK answered".into()))
    }

    /// The SDK's answer to request `id`.
    pub fn answered(&self, id: &str, result: Result<Value, String>) {
        let reply = self
            .pending
            .lock()
            .ok()
            .and_then(|mut p| p.as_mut().and_then(|p| p.remove(id)));
        if let Some(reply) = reply {
            let _ = reply.send(result);
        }
    }

    /// stdin closed: every waiting request fails, later ones at once.
    pub fn close(&self) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.take();
        }
    }

    fn forget(&self, id: &str) {
        if let Ok(mut pending) = self.pending.lock()
            && let Some(pending) = pending.as_mut()
        {
            pending.remove(id);
        }
    }
}

/// `--permission-prompt-tool stdio`: asks become `can_use_tool` requests
/// to the SDK.
pub struct SdkPrompt(pub std::sync::Arc<Controller>);

impl PermissionPrompt for SdkPrompt {
    fn decide<'a>(
        &'a self,
        call: &'a ToolCall,
        input: &'a Value,
        question: &'a str,
    ) -> BoxFuture<'a, PromptDecision> {
        Box::pin(async move {
            let body = json!({
                "subtype": "can_use_tool", "tool_name": call.name, "input": input,
                "tool_use_id": call.id, "permission_suggestions": [],
                "blocked_path": null, "decision_reason": question,
            });
            match self.0.ask(body).await {
                Ok(response) => match protocol::tool_answer(&response) {
                    ToolAnswer::Allow { updated_input } => PromptDecision::Allow { updated_input },
                    ToolAnswer::Deny { message } => PromptDecision::Deny(message),
                },
                Err(why) => PromptDecision::Deny(format!("the SDK did not answer: {why}")),
            }
        })
    }
}
