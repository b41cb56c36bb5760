//! Session modes: gyre's permission modes as ACP modes (`modes` in
//! `session/new` and `session/load`, `session/set_mode`), and the approval
//! of a plan that takes a session out of plan mode.
//!
//! Invariants:
//! - The modes are the permission modes, in their one order (`default`,
//!   `acceptEdits`, `plan`, `bypassPermissions`); the ids are the names
//!   `--permission-mode` takes.
//! - A mode the editor sets applies from the session's next prompt (a
//!   running prompt keeps the agent it started with).
//! - gyre changes the mode itself in one case: a prompt that ends normally
//!   in plan mode asks the editor to approve the plan (a `switch_mode`
//!   tool call with a permission request); the chosen mode is set and sent
//!   as `current_mode_update`. Rejecting it keeps plan mode.

use agent_client_protocol::v1::schema::{
    CurrentModeUpdate, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    SessionMode, SessionModeState, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use gyre_core::PermissionMode;

/// The option that keeps plan mode.
pub const KEEP_PLANNING: &str = "keep_planning";

/// The title of the approval's tool call.
pub const APPROVAL_TITLE: &str = "Approve the plan and leave plan mode";

/// Every mode, with `current` as the current one.
pub fn state(current: PermissionMode) -> SessionModeState {
    let modes = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::BypassPermissions,
    ]
    .into_iter()
    .map(|mode| {
        let (name, description) = describe(mode);
        SessionMode::new(mode.as_str(), name).description(description.to_string())
    })
    .collect();
    SessionModeState::new(current.as_str(), modes)
}

fn describe(mode: PermissionMode) -> (&'static str, &'static str) {
    match mode {
        PermissionMode::Default => ("Default", "Reads run; edits and commands ask first"),
        PermissionMode::AcceptEdits => ("Accept edits", "Reads and file edits run; commands ask"),
        PermissionMode::Plan => ("Plan", "Read-only: gyre plans and changes nothing"),
        PermissionMode::BypassPermissions => (
            "Bypass permissions",
            "Everything runs without asking (deny rules still apply)",
        ),
    }
}

/// The mode `id` names, or why not (the editor sent an unknown id).
pub fn parse(id: &str) -> Result<PermissionMode, String> {
    id.parse()
}

/// The approval request's call and options.
pub fn approval(call_id: &str) -> (ToolCallUpdate, Vec<PermissionOption>) {
    let call = ToolCallUpdate::new(
        call_id.to_string(),
        ToolCallUpdateFields::new()
            .title(APPROVAL_TITLE)
            .kind(ToolKind::SwitchMode),
    );
    let options = vec![
        PermissionOption::new(
            PermissionMode::Default.as_str(),
            "Yes, and ask before edits",
            PermissionOptionKind::AllowOnce,
        ),
        PermissionOption::new(
            PermissionMode::AcceptEdits.as_str(),
            "Yes, and accept edits",
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new(
            KEEP_PLANNING,
            "No, keep planning",
            PermissionOptionKind::RejectOnce,
        ),
    ];
    (call, options)
}

/// The mode the editor's answer to the approval chose (`None`: stay).
pub fn approved(outcome: &RequestPermissionOutcome) -> Option<PermissionMode> {
    match outcome {
        RequestPermissionOutcome::Selected(selected) => match selected.option_id.0.as_ref() {
            KEEP_PLANNING => None,
            other => parse(other).ok().filter(|m| *m != PermissionMode::Plan),
        },
        _ => None,
    }
}

pub fn changed(mode: PermissionMode) -> CurrentModeUpdate {
    CurrentModeUpdate::new(mode.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::SelectedPermissionOutcome;
    use serde_json::json;

    #[test]
    fn the_modes_are_the_permission_modes_in_order() {
        let wire = serde_json::to_value(state(PermissionMode::Plan)).unwrap();
        assert_eq!(wire["currentModeId"], "plan");
        let ids: Vec<&str> = wire["availableModes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, PermissionMode::NAMES);
        assert!(parse("nonsense").is_err());
    }

    #[test]
    fn an_approval_chooses_a_mode_and_a_rejection_stays() {
        let chose = |id: &str| {
            approved(&RequestPermissionOutcome::Selected(
                SelectedPermissionOutcome::new(id.to_string()),
            ))
        };
        assert_eq!(chose("default"), Some(PermissionMode::Default));
        assert_eq!(chose("acceptEdits"), Some(PermissionMode::AcceptEdits));
        assert_eq!(chose(KEEP_PLANNING), None);
        assert_eq!(chose("plan"), None);
        assert_eq!(approved(&RequestPermissionOutcome::Cancelled), None);
        let (call, options) = approval("c");
        assert_eq!(
            serde_json::to_value(&call).unwrap()["kind"],
            json!("switch_mode")
        );
        assert_eq!(options.len(), 3);
    }
}
