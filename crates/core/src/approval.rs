//! Asking a person before a call runs.
//!
//! Headless runs have no one to ask: an `Ask` decision becomes a refusal whose
//! message tells the model (and the person reading the transcript) how to allow
//! the tool. Interactive frontends receive [`Event::PermissionRequested`] and
//! answer through [`crate::RunHandle::answer_permission`]; a cancelled run
//! stops waiting at once.
//!
//! A run may instead hand its asks to a [`PermissionPrompt`]
//! ([`Approvals::Prompt`]; the cli's `--permission-prompt-tool`, an MCP
//! tool, as Claude Code has it). Unlike a person, a prompt may change the
//! call's input: the call then runs with the input it returned, which is
//! not checked against the rules or the schema again (the prompt is
//! trusted as the user's own choice; a tool still refuses arguments it
//! cannot use). A prompt cannot fail: whatever goes wrong in it is its
//! `Deny`, with a message for the model. It answers only permission asks:
//! the loop guard treats a run with a prompt as headless.
//!
//! "Always allow" adds the suggested rules (see `permissions::suggest`) to
//! the session's rules, which every later check of the session's runs (and
//! of their subagents, which share this approver's list) consults. The
//! request event names those rules, so that a person knows what "always"
//! accepts; a headless refusal names them too, as the flag to pass.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use gyre_protocol::{Event, ToolCall};
use gyre_tools::ToolKind;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::events::EventSink;
use crate::permissions::{Decision, PermissionContext, Permissions, SessionRules, suggest_rules};

/// A person's answer to a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionAnswer {
    Allow,
    /// Allow, and add the request's suggested rule for the rest of the
    /// session.
    AlwaysAllow,
    Deny,
}

/// What a [`PermissionPrompt`] decided.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptDecision {
    /// Run the call; with `updated_input`, with that input instead.
    Allow {
        updated_input: Option<serde_json::Value>,
    },
    /// Do not run it; the model is told why.
    Deny(String),
}

/// Something other than a person that answers asks.
pub trait PermissionPrompt: Send + Sync {
    /// Whether `call` may run with `input` (its arguments, after any
    /// PreToolUse hook); `question` says why it was asked about.
    fn decide<'a>(
        &'a self,
        call: &'a ToolCall,
        input: &'a serde_json::Value,
        question: &'a str,
    ) -> BoxFuture<'a, PromptDecision>;
}

/// Whether there is someone to ask.
#[derive(Clone, Default)]
pub enum Approvals {
    /// No one: asks are refused with an explanation.
    #[default]
    Headless,
    /// A frontend answers permission requests.
    Interactive,
    /// A prompt answers them (a headless run with a permission prompt tool).
    Prompt(Arc<dyn PermissionPrompt>),
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Approvals::Headless => "Headless",
            Approvals::Interactive => "Interactive",
            Approvals::Prompt(_) => "Prompt",
        })
    }
}

const CANCELLED_WAITING: &str = "the run was cancelled while waiting for approval";

type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<PermissionAnswer>>>>;

#[derive(Clone, Debug)]
pub struct Approver {
    approvals: Approvals,
    events: EventSink,
    pending: Pending,
    /// The session's "always" rules.
    always: SessionRules,
    /// Where suggested path rules point.
    context: PermissionContext,
}

impl Approver {
    pub fn new(approvals: Approvals, events: EventSink) -> Self {
        Self {
            approvals,
            events,
            pending: Pending::default(),
            always: SessionRules::default(),
            context: PermissionContext::default(),
        }
    }

    /// This approver, adding "always" answers to `always` (the session's
    /// rules) and suggesting path rules relative to `context`.
    pub(crate) fn remembering(mut self, always: SessionRules, context: PermissionContext) -> Self {
        self.always = always;
        self.context = context;
        self
    }

    /// `permissions`' decision on a call, the session's "always" rules
    /// included.
    pub(crate) fn check(
        &self,
        permissions: &Permissions,
        tool: &str,
        kind: ToolKind,
        args: &serde_json::Value,
    ) -> Decision {
        self.always
            .with(|always| permissions.check_with(tool, kind, args, always))
    }

    /// An approver for a subagent's run: its requests go out on the
    /// subagent's `events` (nested under the call by the caller), and are
    /// answered through the caller's, which shares the waiting requests.
    pub fn sharing(&self, events: EventSink) -> Self {
        Self {
            approvals: self.approvals.clone(),
            events,
            pending: self.pending.clone(),
            always: self.always.clone(),
            context: self.context.clone(),
        }
    }

    /// Delivers an answer; false when no such request is waiting.
    pub fn answer(&self, request_id: &str, answer: PermissionAnswer) -> bool {
        let waiting = match self.pending.lock() {
            Ok(mut map) => map.remove(request_id),
            Err(poisoned) => poisoned.into_inner().remove(request_id),
        };
        waiting.is_some_and(|tx| tx.send(answer).is_ok())
    }

    /// Ok when allowed, with the input to run the call with when it is not
    /// `input` (a prompt changed it); Err with the reason told to the model
    /// otherwise.
    pub async fn ask(
        &self,
        call: &ToolCall,
        input: &serde_json::Value,
        question: &str,
        cancel: &CancellationToken,
    ) -> Result<Option<serde_json::Value>, String> {
        let args = call.arguments_json().unwrap_or_default();
        let suggested = suggest_rules(&call.name, &args, &self.context);
        let shown = suggested
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        match &self.approvals {
            Approvals::Headless => Err(headless_refusal(question, &call.name, &shown)),
            Approvals::Interactive => {
                let (tx, rx) = oneshot::channel();
                let request_id = call.id.clone();
                match self.pending.lock() {
                    Ok(mut map) => map.insert(request_id.clone(), tx),
                    Err(poisoned) => poisoned.into_inner().insert(request_id.clone(), tx),
                };
                self.events
                    .emit(Event::PermissionRequested {
                        request_id,
                        call: call.clone(),
                        reason: question.to_string(),
                        always_rule: (!shown.is_empty()).then_some(shown),
                    })
                    .await;
                tokio::select! {
                    answer = rx => match answer {
                        Ok(PermissionAnswer::Allow) => Ok(None),
                        Ok(PermissionAnswer::AlwaysAllow) => {
                            self.always.add(suggested);
                            Ok(None)
                        }
                        Ok(PermissionAnswer::Deny) => Err("the user declined this call".into()),
                        Err(_) => Err("the permission request went unanswered".into()),
                    },
                    _ = cancel.cancelled() => Err(CANCELLED_WAITING.into()),
                }
            }
            Approvals::Prompt(prompt) => tokio::select! {
                decision = prompt.decide(call, input, question) => match decision {
                    PromptDecision::Allow { updated_input } => Ok(updated_input),
                    PromptDecision::Deny(reason) => Err(reason),
                },
                _ = cancel.cancelled() => Err(CANCELLED_WAITING.into()),
            },
        }
    }
}

/// What the model is told of a call a headless run cannot ask about: what
/// really allows it. An ask rule wins over every mode and allow rule, so
/// only removing it (or a prompt tool) helps; otherwise an allow rule, and
/// the modes that run such a call (`acceptEdits` only for the edit tools).
fn headless_refusal(question: &str, tool: &str, shown: &str) -> String {
    if question.contains("the ask rule") {
        return format!(
            "{question}, and this run is headless with no one to approve it; \
             an ask rule asks in every mode: the user can remove it from \
             --ask-tools (or `ask_tools` in the config), or answer through \
             --permission-prompt-tool"
        );
    }
    let modes = if crate::permissions::EDIT_TOOLS.contains(&tool) {
        "--permission-mode acceptEdits or bypassPermissions"
    } else {
        "--permission-mode bypassPermissions"
    };
    format!(
        "{question}, and this run is headless with no one to approve it; \
         the user can allow it with --allowed-tools {} (or an \
         `allowed_tools` entry in the config), or with {modes}",
        shlex::try_quote(shown).unwrap_or_else(|_| shown.into())
    )
}
