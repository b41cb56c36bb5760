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

/// The SDK's hook callbacks (`initialize`'s `hooks`): each call is a
/// `hook_callback` request; the SDK's answer is the hook's output.
#[derive(Debug)]
pub struct SdkHooks(pub std::sync::Arc<Controller>);

impl gyre_core::hooks::HookCallbacks for SdkHooks {
    fn call<'a>(&'a self, id: &'a str, input: &'a Value) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let tool_use_id = input.get("tool_use_id").cloned().unwrap_or(Value::Null);
            self.0
                .ask(json!({"subtype": "hook_callback", "callback_id": id,
                    "input": input, "tool_use_id": tool_use_id}))
                .await
        })
    }
}

/// The SDK's hook matchers (`{"PreToolUse": [{"matcher": "Bash",
/// "hookCallbackIds": ["hook_0"], "timeout": 60}]}`) as gyre's hooks
/// configuration of callback hooks; events gyre does not have are named in
/// the `Err` list.
pub fn sdk_hooks(hooks: &Value) -> (gyre_core::hooks::HooksConfig, Vec<String>) {
    use gyre_core::hooks::{HookCommand, HookEvent, HookKind, HookMatcher};
    let mut config = gyre_core::hooks::HooksConfig::new();
    let mut unknown = Vec::new();
    let Some(events) = hooks.as_object() else {
        return (config, unknown);
    };
    for (event, matchers) in events {
        let Ok(event_kind) = serde_json::from_value::<HookEvent>(json!(event)) else {
            unknown.push(event.clone());
            continue;
        };
        for matcher in matchers.as_array().into_iter().flatten() {
            let timeout = matcher.get("timeout").and_then(Value::as_u64);
            let hooks = matcher
                .get("hookCallbackIds")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|id| HookCommand {
                    kind: HookKind::Callback,
                    command: id.to_string(),
                    timeout,
                })
                .collect();
            config.entry(event_kind).or_default().push(HookMatcher {
                matcher: matcher
                    .get("matcher")
                    .and_then(Value::as_str)
                    .map(String::from),
                hooks,
            });
        }
    }
    (config, unknown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn answers_reach_their_request_and_a_closed_stdin_fails_the_rest() {
        let (out, mut written) = mpsc::channel(8);
        let controller = Arc::new(Controller::new(out));
        let asking = tokio::spawn({
            let controller = controller.clone();
            async move { controller.ask(json!({"subtype": "can_use_tool"})).await }
        });
        let request = written.recv().await.unwrap();
        assert_eq!(request["type"], "control_request");
        assert_eq!(request["request"]["subtype"], "can_use_tool");
        let id = request["request_id"].as_str().unwrap().to_string();
        controller.answered("someone-else", Ok(json!({})));
        controller.answered(&id, Ok(json!({"behavior": "allow"})));
        assert_eq!(asking.await.unwrap(), Ok(json!({"behavior": "allow"})));

        let waiting = tokio::spawn({
            let controller = controller.clone();
            async move { controller.ask(json!({"subtype": "hook_callback"})).await }
        });
        written.recv().await.unwrap();
        controller.close();
        assert!(waiting.await.unwrap().is_err());
        assert!(controller.ask(json!({})).await.is_err(), "refused at once");
    }

    #[test]
    fn sdk_hook_matchers_become_callback_hooks() {
        use gyre_core::hooks::{HookEvent, HookKind};
        let (config, unknown) = sdk_hooks(&json!({
            "PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0", "hook_1"], "timeout": 5}],
            "Notification": [{"matcher": null, "hookCallbackIds": ["hook_2"]}],
        }));
        assert_eq!(unknown, ["Notification"]);
        let matcher = &config[&HookEvent::PreToolUse][0];
        assert_eq!(matcher.matcher.as_deref(), Some("Bash"));
        assert_eq!(matcher.hooks.len(), 2);
        assert_eq!(matcher.hooks[1].kind, HookKind::Callback);
        assert_eq!(matcher.hooks[1].command, "hook_1");
        assert_eq!(matcher.hooks[1].timeout, Some(5));
    }
}
