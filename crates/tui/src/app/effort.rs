//! `/effort [LEVEL]`: shows the reasoning effort of the next prompts, or
//! sets it (`low`, `medium`, `high`, `max`; `default` goes back to the
//! configured one). Like `/model`, it applies to the runs that start after
//! it; an agent file's own `effort` still wins for that agent. The status
//! line shows the effort in force.

use gyre_llm::Effort;

use super::{App, Backend};
use crate::transcript::NoticeKind;

impl<B: Backend> App<B> {
    pub(super) fn effort_command(&mut self, level: Option<&str>) {
        let Some(level) = level else {
            let current = &self.transcript.status().effort;
            let shown = if current.is_empty() {
                "the provider's default"
            } else {
                current.as_str()
            };
            let levels: Vec<&str> = Effort::ALL.iter().map(|e| e.as_str()).collect();
            let text = format!(
                "Reasoning effort: {shown}\nLevels: {}; /effort LEVEL sets it for the next prompts.",
                levels.join(", ")
            );
            return self.notice(NoticeKind::Command, text);
        };
        let effort = if level == "default" {
            None
        } else {
            match level.parse::<Effort>() {
                Ok(effort) => Some(effort),
                Err(e) => return self.notice(NoticeKind::Warning, e),
            }
        };
        let mut choice = self.choice.clone();
        choice.effort = effort;
        if self.apply_choice(choice) {
            let said = effort.map_or("the configured", Effort::as_str);
            self.notice(
                NoticeKind::Info,
                format!("Reasoning effort {said} for the next prompts."),
            );
        }
    }
}
