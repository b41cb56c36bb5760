//! The choice of the step that answers a request (the request's facts are
//! read in [`crate::facts`]).
//!
//! Invariants:
//! - Only the request itself is looked at (never earlier requests), so several
//!   conversations may share one server; the one piece of server state is how
//!   often each step has answered (`times`).
//! - The choice and the use count are updated under one lock, so two
//!   concurrent requests never both take the last use of a step.
//! - A request over the script's `context_window` is refused before any step
//!   is looked at, so it uses up none.

use crate::facts::RequestFacts;
use crate::script::{Reply, Script, When};

impl When {
    pub(crate) fn matches(&self, facts: &RequestFacts, raw_body: &str) -> bool {
        self.api.is_none_or(|api| api == facts.api)
            && self.turn.is_none_or(|t| t == facts.turn)
            && self.tool_results.is_none_or(|n| n == facts.tool_results)
            && self
                .last_message_contains
                .as_deref()
                .is_none_or(|s| facts.last_message_text.contains(s))
            && self
                .body_contains
                .as_deref()
                .is_none_or(|s| raw_body.contains(s))
    }
}

/// What the script says to a request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Choice {
    /// The request counts more tokens than the script's context window.
    Overflow { window: u64 },
    /// The reply of the step that answers (its use counted).
    Reply(Reply),
    /// No step answers.
    NoStep,
}

/// A script with the use count of each step.
#[derive(Debug, Default)]
pub(crate) struct ScriptState {
    script: Script,
    used: Vec<u32>,
}

impl ScriptState {
    pub fn new(script: Script) -> Self {
        let used = vec![0; script.steps.len()];
        Self { script, used }
    }

    /// An overflow when `input_tokens` exceed the context window, otherwise
    /// [`ScriptState::take_reply`]'s answer.
    pub fn choose(&mut self, facts: &RequestFacts, raw_body: &str, input_tokens: u64) -> Choice {
        if let Some(window) = self.script.context_window
            && input_tokens > window
        {
            return Choice::Overflow { window };
        }
        self.take_reply(facts, raw_body)
            .map_or(Choice::NoStep, Choice::Reply)
    }

    /// The reply of the first matching step that is not used up, counting the
    /// use; `None` when no step answers.
    fn take_reply(&mut self, facts: &RequestFacts, raw_body: &str) -> Option<Reply> {
        let (index, step) = self.script.steps.iter().enumerate().find(|(i, step)| {
            let used = self.used.get(*i).copied().unwrap_or(0);
            step.times.is_none_or(|times| used < times) && step.when.matches(facts, raw_body)
        })?;
        if let Some(used) = self.used.get_mut(index) {
            *used = used.saturating_add(1);
        }
        Some(step.reply.clone())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::script::{Item, Step, StreamReply};
    use crate::server::Api;

    #[test]
    fn steps_are_used_up_in_order() {
        let limited = Step {
            times: Some(1),
            ..Step::on_turn(0, vec![Item::Text("once".into())])
        };
        let fallback = Step::on_turn(0, vec![Item::Text("again".into())]);
        let mut state = ScriptState::new(Script::new(vec![limited, fallback]));
        let facts = RequestFacts::of(Api::Anthropic, &json!({"messages": []}));
        let text = |reply: Option<Reply>| match reply {
            Some(Reply::Stream(StreamReply { items, .. })) => items,
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(
            text(state.take_reply(&facts, "")),
            vec![Item::Text("once".into())]
        );
        assert_eq!(
            text(state.take_reply(&facts, "")),
            vec![Item::Text("again".into())]
        );
        assert_eq!(
            text(state.take_reply(&facts, "")),
            vec![Item::Text("again".into())]
        );
        let later = RequestFacts {
            turn: 3,
            ..facts.clone()
        };
        assert!(state.take_reply(&later, "").is_none());
        let other_api = RequestFacts {
            api: Api::Gemini,
            ..facts
        };
        assert!(state.take_reply(&other_api, "").is_some());
    }

    #[test]
    fn a_step_can_be_limited_to_one_api() {
        let when = When {
            api: Some(Api::Gemini),
            ..When::default()
        };
        let body = json!({"contents": []});
        assert!(when.matches(&RequestFacts::of(Api::Gemini, &body), ""));
        assert!(!when.matches(&RequestFacts::of(Api::OpenAiResponses, &body), ""));
    }

    #[test]
    fn an_overflow_uses_up_no_step() {
        let once = Step {
            times: Some(1),
            ..Step::default()
        };
        let mut state = ScriptState::new(Script::new(vec![once]).with_context_window(10));
        let facts = RequestFacts::of(Api::OpenAiChat, &json!({"messages": []}));
        assert_eq!(
            state.choose(&facts, "", 11),
            Choice::Overflow { window: 10 }
        );
        assert!(matches!(state.choose(&facts, "", 10), Choice::Reply(_)));
        assert_eq!(state.choose(&facts, "", 1), Choice::NoStep);
    }
}
