//! The run's first step after resuming: the prompt, recorded with what
//! comes with it (its images, the hooks' context, background tasks' ends,
//! the wrap-up notice when one turn is all there is). Images for a model
//! that takes none end the run before anything is stored.

use gyre_protocol::{Event, FinishReason, Part, Role, RunErrorKind};

use super::end::End;
use super::{MessageInProgress, RunLoop};
use crate::prompt::WRAP_UP_NOTICE;
use gyre_tools::ImageSupport;

impl RunLoop<'_> {
    /// Records `prompt` as the run's user message, or says why the run ends
    /// instead (a hook blocked it, the store failed).
    pub(super) async fn record_prompt(
        &mut self,
        prompt: String,
        images: Vec<Part>,
    ) -> Result<(), End> {
        if !images.is_empty() && self.agent.config.images == ImageSupport::NotAccepted {
            return Err(End::with_error(
                FinishReason::Failed,
                RunErrorKind::Provider,
                format!(
                    "the model {} takes no images: run it without them, or choose a model that takes images (--model)",
                    self.agent.config.model
                ),
            ));
        }
        let todos = self.session.tools.todos.snapshot();
        if !todos.is_empty() {
            self.events.emit(Event::TodosUpdated { todos }).await;
        }
        let hook_context = self.prompt_hooks(&prompt).await.map_err(|reason| {
            End::with_error(
                FinishReason::Failed,
                RunErrorKind::Hook,
                format!("the prompt was blocked by a UserPromptSubmit hook: {reason}"),
            )
        })?;
        let mut message = MessageInProgress::new(Role::User);
        self.record(&mut message, Part::text(prompt))
            .await
            .map_err(End::store)?;
        for image in images {
            self.record(&mut message, image).await.map_err(End::store)?;
        }
        if let Some(context) = hook_context {
            let context =
                format!("<system-reminder>From the user's hooks:\n{context}</system-reminder>");
            self.record(&mut message, Part::text(context))
                .await
                .map_err(End::store)?;
        }
        // Background tasks that ended after the last run.
        self.deliver_notifications(&mut message)
            .await
            .map_err(End::store)?;
        if self.limits.is_last_turn(1) {
            self.record(&mut message, Part::text(WRAP_UP_NOTICE))
                .await
                .map_err(End::store)?;
        }
        self.push_message(message).await;
        Ok(())
    }
}
