//! Hooks: commands the user configures to run at points of the loop, as
//! Claude Code's hooks do (seed 003's stop hook, seed 002's checks before
//! each execution). `config` says what runs when; `command` runs one.
//!
//! The protocol (Claude Code's): the command gets the event as JSON on
//! stdin (`session_id`, `cwd`, `hook_event_name` and the event's fields).
//! - Exit 0: fine. Its stdout may be JSON: `decision: "block"` with a
//!   `reason`; `hookSpecificOutput.permissionDecision` (`allow`, `deny`,
//!   `ask`) with `permissionDecisionReason` and `updatedInput` (PreToolUse);
//!   `hookSpecificOutput.additionalContext` (or plain stdout for
//!   UserPromptSubmit and SessionStart) as context for the model.
//! - Exit 2: block; stderr is the reason, which the model sees.
//! - Any other exit, a timeout, a command that cannot start: the hook is
//!   said to have failed (a warning) and the loop goes on as if it had not
//!   run. A hook never ends a run by failing.
//!
//! Invariants: every hook has a timeout (default 60 s) and is killed with
//! its process group when it passes it or when the run is cancelled; the
//! matching hooks of one event run at the same time; when several decide,
//! a block or deny wins over ask, ask over allow.

mod command;
pub mod config;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use std::time::Duration;

use regex::Regex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use command::Ran;
pub use config::{HookCommand, HookEvent, HookKind, HookMatcher, HooksConfig};

/// A hook's time limit when its configuration gives none.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The configured hooks, ready to run.
#[derive(Debug)]
pub struct Hooks {
    events: Vec<(HookEvent, Option<Regex>, HookCommand)>,
    cwd: PathBuf,
    callbacks: Option<Arc<dyn HookCallbacks>>,
}

/// Runs [`HookKind::Callback`] hooks: a frontend's own (the Agent SDKs'
/// `hook_callback`). Its answer is read as a command hook's JSON stdout;
/// `Err` is a failed hook (a warning; the run goes on).
pub trait HookCallbacks: Send + Sync + std::fmt::Debug {
    fn call<'a>(&'a self, id: &'a str, input: &'a Value) -> BoxFuture<'a, Result<Value, String>>;
}

/// What the PreToolUse hooks decided.
#[derive(Debug, Clone, PartialEq)]
pub enum PreToolUse {
    /// Nothing to say: the permissions decide.
    Continue,
    /// Run it without asking (deny rules still apply).
    Allow { updated_input: Option<Value> },
    /// Ask a person first.
    Ask(String),
    /// Do not run it; the model is told why.
    Deny(String),
}

/// What a hook that may block said.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Said {
    /// Set when a hook blocked, with its reason.
    pub block: Option<String>,
    /// Context for the model (joined from every hook that gave some).
    pub context: Option<String>,
}

/// One hook's reading, before hooks are combined.
#[derive(Debug, Default)]
struct Reading {
    block: Option<String>,
    permission: Option<(String, String)>,
    updated_input: Option<Value>,
    context: Option<String>,
}

impl Hooks {
    /// Compiles the matchers; a bad regular expression names itself.
    pub fn new(config: &HooksConfig, cwd: &Path) -> Result<Hooks, String> {
        let mut events = Vec::new();
        for (event, matchers) in config {
            for matcher in matchers {
                let regex = match matcher.matcher.as_deref().map(str::trim) {
                    None | Some("") | Some("*") => None,
                    Some(pattern) => Some(
                        Regex::new(&format!("(?i)^(?:{pattern})$")).map_err(|e| {
                            // The regex crate's message spans lines; its last says what.
                            let text = e.to_string();
                            let why = text.lines().last().unwrap_or_default();
                            let why = why.trim().trim_start_matches("error: ");
                            format!(
                                "hook matcher `{pattern}` of {} is not a valid regular expression ({why}); fix it in the config",
                                event.as_str()
                            )
                        })?,
                    ),
                };
                for hook in &matcher.hooks {
                    events.push((*event, regex.clone(), hook.clone()));
                }
            }
        }
        Ok(Hooks {
            events,
            cwd: cwd.to_path_buf(),
            callbacks: None,
        })
    }

    /// The same, with `callbacks` running the [`HookKind::Callback`] hooks
    /// (without, those hooks are not run).
    pub fn with_callbacks(mut self, callbacks: Option<Arc<dyn HookCallbacks>>) -> Hooks {
        self.callbacks = callbacks;
        self
    }

    /// Whether any hook runs for `event` (and `tool`, for tool events).
    pub fn has(&self, event: HookEvent, tool: Option<&str>) -> bool {
        self.matching(event, tool).next().is_some()
    }

    fn matching<'a>(
        &'a self,
        event: HookEvent,
        tool: Option<&'a str>,
    ) -> impl Iterator<Item = &'a HookCommand> + 'a {
        self.events.iter().filter_map(move |(e, regex, hook)| {
            let applies = *e == event
                && match (regex, tool) {
                    (Some(regex), Some(tool)) => regex.is_match(tool),
                    _ => true,
                };
            applies.then_some(hook)
        })
    }

    /// Runs `event`'s hooks with `fields` added to the common input.
    async fn run(
        &self,
        event: HookEvent,
        tool: Option<&str>,
        session_id: &str,
        fields: Value,
        cancel: &CancellationToken,
    ) -> Vec<Reading> {
        let hooks: Vec<&HookCommand> = self.matching(event, tool).collect();
        if hooks.is_empty() {
            return Vec::new();
        }
        let mut input = json!({
            "session_id": session_id,
            "cwd": self.cwd.display().to_string(),
            "hook_event_name": event.as_str(),
        });
        if let (Some(input), Value::Object(fields)) = (input.as_object_mut(), fields) {
            input.extend(fields);
        }
        let bytes = serde_json::to_vec(&input).unwrap_or_default();
        let input = &input;
        let runs = hooks.iter().map(|hook| {
            let timeout = hook.timeout.map_or(DEFAULT_TIMEOUT, Duration::from_secs);
            let bytes = &bytes;
            async move {
                match hook.kind {
                    HookKind::Command => {
                        let ran = command::run(&hook.command, bytes, &self.cwd, timeout, cancel);
                        read(event, hook, ran.await)
                    }
                    HookKind::Callback => self.call_back(event, hook, input, timeout, cancel).await,
                }
            }
        });
        futures::future::join_all(runs)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// A callback hook's reading (bounded by its timeout and the run's
    /// cancellation, like a command's).
    async fn call_back(
        &self,
        event: HookEvent,
        hook: &HookCommand,
        input: &Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Option<Reading> {
        let callbacks = self.callbacks.as_ref()?;
        let answer = tokio::select! {
            answer = tokio::time::timeout(timeout, callbacks.call(&hook.command, input)) => answer,
            () = cancel.cancelled() => return None,
        };
        match answer {
            Ok(Ok(output)) => Some(read_stdout(event, &output.to_string())),
            Ok(Err(error)) => {
                tracing::warn!(event = event.as_str(), callback = %hook.command, "a hook callback failed: {error}");
                None
            }
            Err(_) => {
                tracing::warn!(event = event.as_str(), callback = %hook.command, "a hook callback timed out; the run goes on");
                None
            }
        }
    }

    /// Before a tool call: the combined decision of the matching hooks.
    pub async fn pre_tool_use(
        &self,
        session_id: &str,
        tool: &str,
        input: &Value,
        cancel: &CancellationToken,
    ) -> PreToolUse {
        let fields = json!({"tool_name": tool, "tool_input": input});
        let readings = self
            .run(
                HookEvent::PreToolUse,
                Some(tool),
                session_id,
                fields,
                cancel,
            )
            .await;
        let mut decision = PreToolUse::Continue;
        for reading in readings {
            let next = match (reading.block, reading.permission) {
                (Some(reason), _) => PreToolUse::Deny(reason),
                (None, Some((word, reason))) => match word.as_str() {
                    "deny" | "block" => PreToolUse::Deny(reason),
                    "ask" => PreToolUse::Ask(reason),
                    "allow" | "approve" => PreToolUse::Allow {
                        updated_input: reading.updated_input,
                    },
                    _ => PreToolUse::Continue,
                },
                (None, None) => match reading.updated_input {
                    Some(updated) => PreToolUse::Allow {
                        updated_input: Some(updated),
                    },
                    None => PreToolUse::Continue,
                },
            };
            decision = stronger(decision, next);
        }
        decision
    }

    /// After a tool call: what the hooks want the model to know of it.
    pub async fn post_tool_use(
        &self,
        session_id: &str,
        tool: &str,
        input: &Value,
        response: &str,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let fields = json!({"tool_name": tool, "tool_input": input, "tool_response": response});
        let said = combine(
            self.run(
                HookEvent::PostToolUse,
                Some(tool),
                session_id,
                fields,
                cancel,
            )
            .await,
        );
        match (said.block, said.context) {
            (Some(block), Some(context)) => Some(format!("{block}\n{context}")),
            (block, context) => block.or(context),
        }
    }

    /// Before a prompt is recorded.
    pub async fn user_prompt_submit(
        &self,
        session_id: &str,
        prompt: &str,
        cancel: &CancellationToken,
    ) -> Said {
        let fields = json!({"prompt": prompt});
        combine(
            self.run(
                HookEvent::UserPromptSubmit,
                None,
                session_id,
                fields,
                cancel,
            )
            .await,
        )
    }

    /// When a run would end: `stop_hook_active` says whether it already
    /// went on because of a stop hook.
    pub async fn stop(
        &self,
        event: HookEvent,
        session_id: &str,
        stop_hook_active: bool,
        cancel: &CancellationToken,
    ) -> Said {
        let fields = json!({"stop_hook_active": stop_hook_active});
        combine(self.run(event, None, session_id, fields, cancel).await)
    }

    /// Events whose hooks only observe (or add context): PreCompact,
    /// SessionStart, SessionEnd.
    pub async fn notify(
        &self,
        event: HookEvent,
        session_id: &str,
        fields: Value,
        cancel: &CancellationToken,
    ) -> Said {
        combine(self.run(event, None, session_id, fields, cancel).await)
    }
}

/// The stricter of two decisions: deny, then ask, then allow.
fn stronger(a: PreToolUse, b: PreToolUse) -> PreToolUse {
    fn rank(d: &PreToolUse) -> u8 {
        match d {
            PreToolUse::Continue => 0,
            PreToolUse::Allow { .. } => 1,
            PreToolUse::Ask(_) => 2,
            PreToolUse::Deny(_) => 3,
        }
    }
    if rank(&b) > rank(&a) { b } else { a }
}

fn combine(readings: Vec<Reading>) -> Said {
    let mut said = Said::default();
    for reading in readings {
        if let Some(block) = reading.block {
            said.block = Some(match said.block.take() {
                Some(earlier) => format!("{earlier}\n{block}"),
                None => block,
            });
        }
        if let Some(context) = reading.context {
            said.context = Some(match said.context.take() {
                Some(earlier) => format!("{earlier}\n{context}"),
                None => context,
            });
        }
    }
    said
}

/// What one hook's end means; `None` when it said nothing (or failed,
/// which is logged).
fn read(event: HookEvent, hook: &HookCommand, ran: Ran) -> Option<Reading> {
    let (code, stdout, stderr) = match ran {
        Ran::Exited {
            code,
            stdout,
            stderr,
        } => (code, stdout, stderr),
        Ran::TimedOut => {
            tracing::warn!(event = event.as_str(), command = %hook.command, "a hook timed out and was killed; the run goes on");
            return None;
        }
        Ran::Failed(error) => {
            tracing::warn!(event = event.as_str(), command = %hook.command, "a hook failed: {error}");
            return None;
        }
        Ran::Cancelled => return None,
    };
    match code {
        Some(0) => Some(read_stdout(event, stdout.trim())),
        Some(2) => {
            let reason = stderr.trim();
            let reason = if reason.is_empty() {
                format!("blocked by the {} hook `{}`", event.as_str(), hook.command)
            } else {
                reason.to_string()
            };
            Some(Reading {
                block: Some(reason),
                ..Reading::default()
            })
        }
        other => {
            tracing::warn!(event = event.as_str(), command = %hook.command, code = ?other, stderr = %stderr.trim(), "a hook failed; the run goes on");
            None
        }
    }
}

fn read_stdout(event: HookEvent, stdout: &str) -> Reading {
    let Ok(Value::Object(out)) = serde_json::from_str::<Value>(stdout) else {
        // Plain text is context where Claude Code takes it as such.
        let context = matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
            && !stdout.is_empty();
        return Reading {
            context: context.then(|| stdout.to_string()),
            ..Reading::default()
        };
    };
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let specific = out.get("hookSpecificOutput");
    let reason = text(out.get("reason")).unwrap_or_default();
    let decision = text(out.get("decision"));
    let block = match decision.as_deref() {
        Some("block") if event != HookEvent::PreToolUse => Some(if reason.is_empty() {
            format!("blocked by a {} hook", event.as_str())
        } else {
            reason.clone()
        }),
        _ => None,
    };
    let permission = text(specific.and_then(|s| s.get("permissionDecision")))
        .map(|word| {
            let why = text(specific.and_then(|s| s.get("permissionDecisionReason")))
                .unwrap_or_else(|| format!("decided by a {} hook", event.as_str()));
            (word, why)
        })
        .or_else(|| {
            // The older form: a top-level decision on PreToolUse.
            (event == HookEvent::PreToolUse)
                .then(|| decision.clone().map(|word| (word, reason.clone())))
                .flatten()
        });
    Reading {
        block,
        permission,
        updated_input: specific.and_then(|s| s.get("updatedInput")).cloned(),
        context: text(specific.and_then(|s| s.get("additionalContext"))),
    }
}

#[cfg(test)]
mod tests;
