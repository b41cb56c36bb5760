//! The commands gyre advertises to the editor (`available_commands_update`)
//! and how a prompt that starts with one is run.
//!
//! Invariants: only commands that make sense without gyre's terminal UI
//! are offered (`/compact [instructions]`), then the custom commands of the
//! user and the project (command files, the built-in `/init`), expanded by
//! `gyre_host::commands` exactly as the terminal UI and `gyre run` do; any
//! other prompt, one starting with an unknown `/name` included, goes to the
//! model as written.

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, UnstructuredCommandInput,
};
use gyre_core::{ManualCompaction, RunRequest};

/// The commands an editor may offer in a session of `workspace`.
pub fn available(workspace: &std::path::Path) -> AvailableCommandsUpdate {
    let mut commands = vec![
        AvailableCommand::new(
            "compact",
            "Summarise the conversation so far to free context",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("what the summary should keep"),
        )),
    ];
    for custom in gyre_host::commands::list(workspace) {
        if custom.name == "compact" {
            continue;
        }
        let mut command = AvailableCommand::new(custom.name, custom.description);
        if let Some(hint) = custom.hint {
            command = command.input(AvailableCommandInput::Unstructured(
                UnstructuredCommandInput::new(hint),
            ));
        }
        commands.push(command);
    }
    AvailableCommandsUpdate::new(commands)
}

/// A custom command's expansion of `text` (`None`: not one of them).
pub async fn custom(
    text: &str,
    workspace: &std::path::Path,
    permissions: &gyre_core::Permissions,
) -> Option<Result<String, String>> {
    let (commands, _warnings) = gyre_host::commands::load(workspace);
    let invoked = commands.invoke(text.trim(), workspace, permissions).await?;
    Some(invoked.map(|invocation| invocation.prompt))
}

/// The run a prompt's text asks for: a command, else the prompt itself.
pub fn request(text: &str) -> RunRequest {
    let trimmed = text.trim_start();
    if let Some(rest) = trimmed.strip_prefix("/compact")
        && (rest.is_empty() || rest.starts_with(char::is_whitespace))
    {
        let instructions = rest.trim();
        let mut run = RunRequest::prompt(String::new());
        run.prompt = None;
        run.compact = Some(ManualCompaction {
            instructions: (!instructions.is_empty()).then(|| instructions.to_string()),
        });
        return run;
    }
    RunRequest::prompt(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_is_a_command_and_other_text_a_prompt() {
        let compact = request("/compact keep the API notes");
        assert_eq!(compact.prompt, None);
        assert_eq!(
            compact.compact.unwrap().instructions.as_deref(),
            Some("keep the API notes")
        );
        assert_eq!(request("/compact").compact.unwrap().instructions, None);
        assert_eq!(
            request("/compaction please").prompt.as_deref(),
            Some("/compaction please")
        );
        let names: Vec<String> = available(std::path::Path::new("/w"))
            .available_commands
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names[0], "compact");
        assert!(names.contains(&"init".to_string()), "{names:?}");
    }
}
