//! The rule matcher's tests, table-driven: commands in `commands`, the other
//! rule forms and suggestions in `rules`.

pub(super) use super::super::*;
pub(super) use gyre_tools::ToolKind;
pub(super) use serde_json::{Value, json};
pub(super) use std::path::PathBuf;

/// What a check came to, without its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    Allow,
    Deny,
    Ask,
}

pub(super) fn outcome(decision: &Decision) -> Outcome {
    match decision {
        Decision::Allow => Outcome::Allow,
        Decision::Deny(_) => Outcome::Deny,
        Decision::Ask(_) => Outcome::Ask,
    }
}

pub(super) fn ctx() -> PermissionContext {
    PermissionContext {
        workspace_root: PathBuf::from("/ws"),
        home: Some(PathBuf::from("/home/u")),
    }
}

pub(super) fn perms(mode: PermissionMode, allow: &str, ask: &str, deny: &str) -> Permissions {
    Permissions {
        mode,
        allow: Rule::parse_list(allow).unwrap(),
        deny: Rule::parse_list(deny).unwrap(),
        ask: Rule::parse_list(ask).unwrap(),
        context: ctx(),
    }
}

/// The kind the bash tool gives a command.
pub(super) fn bash_kind(command: &str) -> ToolKind {
    if gyre_tools::is_read_only_command(command) {
        ToolKind::ReadOnly
    } else {
        ToolKind::Mutating
    }
}

pub(super) fn check_bash(p: &Permissions, command: &str) -> Decision {
    p.check("bash", bash_kind(command), &json!({ "command": command }))
}

mod claude_names;
mod commands;
mod rules;
