//! The overlays' state: what the app fills in and moves the selection of.
//! Drawing them is in `overlay.rs`.

use gyre_protocol::{Event, ToolCall};

/// The three answers to a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PermissionChoice {
    #[default]
    AllowOnce,
    /// Allow, and add the request's "always" rule for the session.
    AllowAlways,
    Deny,
}

impl PermissionChoice {
    pub const ALL: [PermissionChoice; 3] = [
        PermissionChoice::AllowOnce,
        PermissionChoice::AllowAlways,
        PermissionChoice::Deny,
    ];
}

/// A permission request waiting for the user's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionDialog {
    pub request_id: String,
    pub call: ToolCall,
    /// Why the loop asks (the rule or mode that made it ask).
    pub reason: String,
    /// The rule an "always" answer adds; `None`: "always" is not offered.
    pub always_rule: Option<String>,
    pub selected: PermissionChoice,
}

impl PermissionDialog {
    /// The dialog for a `PermissionRequested` event, the run's own or a
    /// subagent's (nested in `Event::Subagent`); `None` for others.
    pub fn from_event(event: &Event) -> Option<Self> {
        match event {
            Event::Subagent { inner, .. } => Self::from_event(inner),
            Event::PermissionRequested {
                request_id,
                call,
                reason,
                always_rule,
            } => Some(Self {
                request_id: request_id.clone(),
                call: call.clone(),
                reason: reason.clone(),
                always_rule: always_rule.clone(),
                selected: PermissionChoice::AllowOnce,
            }),
            _ => None,
        }
    }

    /// The choices offered, in order ("always" only with a rule).
    pub fn choices(&self) -> Vec<PermissionChoice> {
        PermissionChoice::ALL
            .into_iter()
            .filter(|c| *c != PermissionChoice::AllowAlways || self.always_rule.is_some())
            .collect()
    }

    /// Moves the selection down (`1`) or up (`-1`), wrapping around.
    pub fn move_selection(&mut self, step: isize) {
        let choices = self.choices();
        let at = choices
            .iter()
            .position(|c| *c == self.selected)
            .unwrap_or(0) as isize;
        let len = choices.len() as isize;
        self.selected = choices[(at + step).rem_euclid(len) as usize];
    }
}

/// One stored session in the picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionEntry {
    pub id: String,
    /// When it was last updated, formatted by the app (e.g. `2026-05-01 14:02`
    /// or `3h ago`): the view shows it as given.
    pub updated: String,
    pub title: String,
}

/// The `/resume` session picker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionPicker {
    pub entries: Vec<SessionEntry>,
    /// Typed text; entries whose id or title contain it (any case) show.
    pub filter: String,
    /// Index into [`SessionPicker::visible`].
    pub selected: usize,
}

impl SessionPicker {
    pub fn new(entries: Vec<SessionEntry>) -> Self {
        Self {
            entries,
            ..Self::default()
        }
    }

    /// Indices of the entries that match the filter, in order.
    pub fn visible(&self) -> Vec<usize> {
        let filter = self.filter.to_lowercase();
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                filter.is_empty()
                    || e.title.to_lowercase().contains(&filter)
                    || e.id.to_lowercase().contains(&filter)
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// The selected entry, if any matches.
    pub fn selected_entry(&self) -> Option<&SessionEntry> {
        let visible = self.visible();
        let index = *visible.get(self.selected.min(visible.len().saturating_sub(1)))?;
        self.entries.get(index)
    }

    /// Moves the selection by `step`, clamped to the visible entries.
    pub fn move_selection(&mut self, step: isize) {
        let last = self.visible().len().saturating_sub(1);
        self.selected = self.selected.saturating_add_signed(step).min(last);
    }

    /// Sets the filter and puts the selection on the first match.
    pub fn set_filter(&mut self, filter: impl Into<String>) {
        self.filter = filter.into();
        self.selected = 0;
    }
}

/// One suggestion of the completion popup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletionItem {
    /// What is inserted (`@src/main.rs`, `/resume`).
    pub label: String,
    /// A short description shown dimmed beside it.
    pub detail: String,
}

/// `@path` and `/command` suggestions shown by the input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompletionPopup {
    pub items: Vec<CompletionItem>,
    pub selected: usize,
}

/// One row of the help overlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HelpEntry<'a> {
    /// A key (`Ctrl-C`) or a command (`/resume`).
    pub keys: &'a str,
    pub description: &'a str,
}
