//! Custom commands in the app: completed after the built-in ones, and
//! expanded by the backend (the host's one implementation, so the terminal
//! UI, headless runs and ACP expand alike) into the prompt that is sent.
//!
//! Invariant: a built-in command shadows a custom one of its name; a
//! command whose expansion fails (an inclusion the permissions refuse)
//! sends nothing and says why.

use super::{App, Backend, CustomCommandInfo};
use crate::input::complete::CommandName;
use crate::transcript::NoticeKind;

use super::commands::COMMANDS;

/// The built-in commands, then the custom ones (a custom command named as
/// a built-in one is shadowed by it).
pub(super) fn with_custom<'a>(
    mut names: Vec<CommandName<'a>>,
    custom: &'a [CustomCommandInfo],
) -> Vec<CommandName<'a>> {
    for command in custom {
        if !COMMANDS.iter().any(|c| c.name == command.name) {
            names.push(CommandName {
                name: &command.name,
                description: &command.description,
            });
        }
    }
    names
}

impl<B: Backend> App<B> {
    /// A custom command (`/init` among them): its expanded prompt is sent;
    /// its model and agent, when it names them, are switched to first.
    pub(super) async fn custom_command(&mut self, name: &str, line: &str) {
        let permissions = self
            .current_agent()
            .map(|agent| agent.config().permissions.clone())
            .unwrap_or_default();
        let expanded = self
            .backend
            .expand_command(&format!("/{line}"), permissions)
            .await;
        match expanded {
            None => self.notice(
                NoticeKind::Warning,
                format!("Unknown command /{name}; /help lists the commands."),
            ),
            Some(Err(e)) => self.notice(NoticeKind::Error, e.to_string()),
            Some(Ok(expanded)) => {
                if expanded.model.is_some() || expanded.agent.is_some() {
                    let mut choice = self.choice.clone();
                    choice.model = expanded.model.or(choice.model);
                    choice.agent = expanded.agent.or(choice.agent);
                    if choice != self.choice && !self.apply_choice(choice) {
                        return;
                    }
                }
                self.send_prompt(expanded.prompt).await;
            }
        }
    }
}
