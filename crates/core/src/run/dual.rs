//! Dual model (avante's `dual_boost`, behind `--dual-model`): each turn, the
//! session's model and a second model draft an answer to the same request,
//! at the same time; then the session's model answers the request with
//! both drafts attached, and that answer is the turn's.
//!
//! Invariants:
//! - Drafts are never acted on: their tool calls are shown to the
//!   synthesising request as text and never run, and nothing of them is
//!   stored; only the synthesis is the conversation.
//! - The drafts are attached to a copy of the last message of the request
//!   (shared messages stay as they are), so the cached prefix before it is
//!   unchanged.
//! - A draft that fails or is cancelled is left out; with no draft the
//!   turn is an ordinary one. Every draft's usage counts towards the turn.
//! - The last (wrap-up) turn asks no drafts.

use std::sync::Arc;

use futures::StreamExt;
use gyre_llm::{ModelEvent, ModelRequest, ToolChoice};
use gyre_protocol::{Message, Part, Usage};

use super::RunLoop;

/// One model's draft of the turn's answer.
struct Draft {
    model: String,
    text: String,
}

impl RunLoop<'_> {
    /// `messages` with both models' drafts attached to the last one, and
    /// what the drafts used; `None` when dual mode is off or no draft came.
    pub(super) async fn with_drafts(
        &self,
        messages: &[Arc<Message>],
    ) -> (Option<Vec<Arc<Message>>>, Usage) {
        let config = &self.agent.config;
        let Some(second) = config.dual_model.as_deref() else {
            return (None, Usage::default());
        };
        let drafts = futures::future::join(
            self.draft(&config.model, messages),
            self.draft(second, messages),
        );
        let (first, second) = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return (None, Usage::default()),
            drafts = drafts => drafts,
        };
        let mut usage = Usage::default();
        let mut drafts = Vec::new();
        for (draft, used) in [first, second].into_iter().flatten() {
            usage.add(&used);
            drafts.push(draft);
        }
        let (Some(last), false) = (messages.last(), drafts.is_empty()) else {
            return (None, usage);
        };
        let mut attached = last.as_ref().clone();
        attached.parts.push(Part::text(synthesis_notice(&drafts)));
        let mut sent = messages.to_vec();
        if let Some(slot) = sent.last_mut() {
            *slot = Arc::new(attached);
        }
        (Some(sent), usage)
    }

    /// Asks `model` for its answer to `messages`, as text.
    async fn draft(&self, model: &str, messages: &[Arc<Message>]) -> Option<(Draft, Usage)> {
        let config = &self.agent.config;
        let mut stream = self.agent.client.stream(&ModelRequest {
            model,
            system: &config.system_prompt,
            messages,
            tools: &self.tools.specs,
            tool_choice: ToolChoice::Auto,
            max_output_tokens: config.max_output_tokens,
            cache_key: Some(self.session.id()),
            cache_points: &[],
            sampling: &config.sampling,
        });
        let mut text = String::new();
        let mut usage = Usage::default();
        while let Some(event) = stream.next().await {
            match event {
                Ok(ModelEvent::PartCompleted(Part::Text { text: t })) => text.push_str(&t),
                Ok(ModelEvent::PartCompleted(Part::ToolCall(call))) => {
                    text.push_str(&format!(
                        "\n[would call `{}` with {}]",
                        call.name, call.arguments
                    ));
                }
                Ok(ModelEvent::Usage(latest)) => usage = latest,
                Ok(_) => {}
                Err(error) => {
                    tracing::info!(model, "a dual-model draft failed: {}", error.message);
                    return None;
                }
            }
        }
        let draft = Draft {
            model: model.to_string(),
            text: text.trim().to_string(),
        };
        Some((draft, usage))
    }
}

fn synthesis_notice(drafts: &[Draft]) -> String {
    let mut out = String::from(
        "<system-reminder>Drafts of your next answer were written by two models. Write the best \
         next answer: keep what is right in either, fix what is wrong, and call the tools it \
         needs (the drafts' tool calls were not run). Do not mention the drafts.",
    );
    for draft in drafts {
        out.push_str(&format!(
            "\n<draft model=\"{}\">\n{}\n</draft>",
            draft.model, draft.text
        ));
    }
    out.push_str("</system-reminder>");
    out
}
