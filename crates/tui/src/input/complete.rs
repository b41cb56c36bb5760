//! Completion of the word at the cursor: `/command` at the start of the
//! input, `@path` anywhere.
//!
//! Invariants:
//! - A completion is recomputed from the editor after every edit; it holds
//!   the word it would replace, so accepting never guesses.
//! - At most [`SHOWN`] suggestions; the file list is matched only when it
//!   is ready (until then `@` shows nothing).

use crate::input::editor::{Editor, Token};
use crate::input::files;
use crate::view::{CompletionItem, CompletionPopup};

/// Suggestions offered at most.
pub const SHOWN: usize = 50;

/// What is being completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionKind {
    Command,
    File,
}

/// Suggestions for the word at the cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub kind: CompletionKind,
    pub token: Token,
    pub popup: CompletionPopup,
}

/// A slash command as completion shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandName<'a> {
    pub name: &'a str,
    pub description: &'a str,
}

/// Which kind of word the cursor is in, if any completes.
pub fn wanted(editor: &Editor) -> Option<(CompletionKind, Token)> {
    let token = editor.token()?;
    if token.text.starts_with('@') {
        return Some((CompletionKind::File, token));
    }
    // A command is the first word of the first line.
    let first_word = token.row == 0 && token.start == 0;
    if first_word && token.text.starts_with('/') && !token.text[1..].contains('/') {
        return Some((CompletionKind::Command, token));
    }
    None
}

/// The completion for the editor's cursor, given the commands and the
/// workspace's paths (`None`: not listed yet).
pub fn complete(
    editor: &Editor,
    commands: &[CommandName],
    paths: Option<&[String]>,
) -> Option<Completion> {
    let (kind, token) = wanted(editor)?;
    let items: Vec<CompletionItem> = match kind {
        CompletionKind::Command => {
            let typed = &token.text[1..];
            commands
                .iter()
                .filter(|c| c.name.starts_with(typed))
                .map(|c| CompletionItem {
                    label: format!("/{}", c.name),
                    detail: c.description.to_string(),
                })
                .collect()
        }
        CompletionKind::File => files::matches(&token.text[1..], paths?, SHOWN)
            .into_iter()
            .map(|path| CompletionItem {
                label: format!("@{path}"),
                detail: String::new(),
            })
            .collect(),
    };
    if items.is_empty() {
        return None;
    }
    Some(Completion {
        kind,
        token,
        popup: CompletionPopup { items, selected: 0 },
    })
}

impl Completion {
    pub fn selected(&self) -> Option<&CompletionItem> {
        self.popup.items.get(self.popup.selected)
    }

    /// Moves the selection, wrapping around.
    pub fn move_selection(&mut self, step: isize) {
        let len = self.popup.items.len() as isize;
        if len > 0 {
            self.popup.selected = (self.popup.selected as isize + step).rem_euclid(len) as usize;
        }
    }

    /// Puts the selected suggestion in place of the word; returns whether
    /// the word was already exactly it (so Enter may go on and send).
    pub fn accept(&self, editor: &mut Editor) -> bool {
        let Some(item) = self.selected() else {
            return false;
        };
        let already = self.token.text == item.label && self.token.rest == 0;
        // A directory stays open for the next part of the path; anything
        // else is done and gets a space.
        let replacement = if item.label.ends_with('/') {
            item.label.clone()
        } else {
            format!("{} ", item.label)
        };
        if !already {
            editor.replace_token(&self.token, &replacement);
        }
        already
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMANDS: [CommandName; 3] = [
        CommandName {
            name: "resume",
            description: "pick a session",
        },
        CommandName {
            name: "rewind",
            description: "go back",
        },
        CommandName {
            name: "help",
            description: "keys",
        },
    ];

    #[test]
    fn commands_complete_at_the_start_only() {
        let mut editor = Editor::new();
        editor.set_text("/re");
        let completion = complete(&editor, &COMMANDS, None).unwrap();
        let labels: Vec<&str> = completion
            .popup
            .items
            .iter()
            .map(|i| i.label.as_str())
            .collect();
        assert_eq!(labels, ["/resume", "/rewind"]);
        assert!(!completion.accept(&mut editor));
        assert_eq!(editor.text(), "/resume ");
        editor.set_text("say /re");
        assert_eq!(complete(&editor, &COMMANDS, None), None);
        editor.set_text("/usr/bin");
        assert_eq!(complete(&editor, &COMMANDS, None), None);
    }

    #[test]
    fn files_complete_once_listed() {
        let mut editor = Editor::new();
        editor.set_text("read @lib");
        assert_eq!(complete(&editor, &COMMANDS, None), None);
        let paths = vec!["src/".to_string(), "src/lib.rs".to_string()];
        let mut completion = complete(&editor, &COMMANDS, Some(&paths)).unwrap();
        assert_eq!(completion.selected().unwrap().label, "@src/lib.rs");
        completion.move_selection(1);
        assert_eq!(completion.popup.selected, 0, "one match: wraps to itself");
        completion.accept(&mut editor);
        assert_eq!(editor.text(), "read @src/lib.rs ");
    }
}
