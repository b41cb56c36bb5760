//! Keys, paste and the mouse wheel: who takes a key, in order — Ctrl-C
//! always; then the permission dialog; then a box (help, session or rewind
//! picker); then the completion popup; then the app's own keys; then the
//! editor.
//!
//! What crossterm reports: Enter is `Enter`; Shift+Enter is `Enter` with
//! SHIFT only where the terminal reports it (the kitty keyboard protocol,
//! which the loop asks for), Alt+Enter is `Enter` with ALT, and Ctrl+J is
//! `Char('j')` with CONTROL in raw mode — all three insert a newline. A
//! paste comes whole (bracketed paste) and is inserted, never sent.
//!
//! A permission dialog takes no answer in its first [`super::ANSWER_GUARD`]
//! (keys typed for the editor as it appears must not answer it), and
//! single keys answer it: 1/2/3, y (once), a (always), n (deny).

use tokio::time::Instant;

use crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind,
};
use gyre_core::{Abort, PermissionAnswer, PermissionMode};

use super::{App, Backend, Modal, WHEEL_ROWS};
use crate::input::complete::CompletionKind;
use crate::transcript::NoticeKind;
use crate::view::{PermissionChoice, ScrollState};

/// What the quit hint says, in the empty editor.
pub const QUIT_HINT: &str = "Press Ctrl-C again to quit";

impl<B: Backend> App<B> {
    /// One terminal event.
    pub async fn handle_terminal(&mut self, event: TermEvent) {
        match event {
            TermEvent::Key(key) => self.handle_key(key).await,
            TermEvent::Paste(text) if self.permissions.is_empty() && self.modal.is_none() => {
                self.editor.insert(&text);
                self.history.reset();
                self.update_completion();
                self.dirty = true;
            }
            TermEvent::Mouse(mouse) => match mouse.kind {
                MouseEventKind::ScrollUp => self.scroll_by(WHEEL_ROWS),
                MouseEventKind::ScrollDown => self.scroll_by(-WHEEL_ROWS),
                _ => {}
            },
            TermEvent::Resize(..) => self.dirty = true,
            _ => {}
        }
    }

    /// One key press (releases and repeats of release are ignored).
    pub async fn handle_key(&mut self, key: KeyEvent) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        self.dirty = true;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            self.ctrl_c();
            return;
        }
        if self.quit_armed.take().is_some() {
            self.editor.set_placeholder(None);
        }
        if !self.permissions.is_empty() {
            self.permission_key(key);
            return;
        }
        if self.modal.is_some() {
            self.modal_key(key).await;
            return;
        }
        if self.completion.is_some() && self.completion_key(key).await {
            return;
        }
        let shift_or_alt = key
            .modifiers
            .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT);
        match key.code {
            KeyCode::Esc if !self.held.is_empty() => self.release_held().await,
            KeyCode::Esc => self.escape(),
            KeyCode::Char('d') if ctrl => {
                if self.editor.is_empty() {
                    self.quit = true;
                } else {
                    self.edit(key);
                }
            }
            KeyCode::Char('t') if ctrl => self.show_todos = !self.show_todos,
            KeyCode::Char('o') if ctrl => self.open_output(),
            KeyCode::BackTab => self.cycle_mode(),
            KeyCode::Char('r') if ctrl => self.transcript.toggle_reasoning(),
            KeyCode::Char('j') if ctrl => self.editor.insert_newline(),
            KeyCode::Enter if shift_or_alt => self.editor.insert_newline(),
            KeyCode::Enter => self.submit().await,
            KeyCode::PageUp => self.scroll_by(self.page()),
            KeyCode::PageDown => self.scroll_by(-self.page()),
            KeyCode::Up if key.modifiers.is_empty() && self.editor.on_first_line() => {
                let current = self.editor.text();
                if let Some(older) = self.history.older(&current).map(str::to_string) {
                    self.editor.set_text(&older);
                    self.update_completion();
                }
            }
            KeyCode::Down
                if key.modifiers.is_empty()
                    && self.editor.on_last_line()
                    && self.history.is_browsing() =>
            {
                if let Some(newer) = self.history.newer() {
                    self.editor.set_text(&newer);
                    self.update_completion();
                }
            }
            _ => self.edit(key),
        }
    }

    fn edit(&mut self, key: KeyEvent) {
        if self.editor.input(key) {
            self.history.reset();
        }
        self.update_completion();
    }

    fn page(&self) -> isize {
        isize::try_from(self.page_rows.saturating_sub(1).max(1)).unwrap_or(1)
    }

    fn scroll_by(&mut self, rows: isize) {
        self.scroll = self.scroll.scrolled(rows);
        self.dirty = true;
    }

    /// Ctrl-C: clears the input; a second one within the window quits.
    fn ctrl_c(&mut self) {
        let now = Instant::now();
        if self
            .quit_armed
            .is_some_and(|at| now.saturating_duration_since(at) < super::QUIT_WINDOW)
        {
            self.quit = true;
            return;
        }
        self.editor.clear();
        self.history.reset();
        self.completion = None;
        self.quit_armed = Some(now);
        self.editor.set_placeholder(Some(QUIT_HINT));
    }

    /// Esc: closes what is open, else stops a `!command`, else interrupts
    /// the running turn (queued prompts then go on).
    fn escape(&mut self) {
        if let Some(job) = &self.shell {
            job.kill();
            return;
        }
        if let Some(live) = &self.live
            && live.is_busy()
        {
            live.abort(Abort::CurrentRun);
        }
    }

    fn permission_key(&mut self, key: KeyEvent) {
        let Some(dialog) = self.permissions.front_mut() else {
            return;
        };
        let choices = dialog.choices();
        let chosen = match key.code {
            KeyCode::Up | KeyCode::Left | KeyCode::BackTab | KeyCode::Char('k') => {
                dialog.move_selection(-1);
                None
            }
            KeyCode::Down | KeyCode::Right | KeyCode::Tab | KeyCode::Char('j') => {
                dialog.move_selection(1);
                None
            }
            KeyCode::Enter => Some(dialog.selected),
            KeyCode::Char(c @ '1'..='9') => choices.get(usize::from(c as u8 - b'1')).copied(),
            KeyCode::Char('y') => Some(PermissionChoice::AllowOnce),
            KeyCode::Char('a') if choices.contains(&PermissionChoice::AllowAlways) => {
                Some(PermissionChoice::AllowAlways)
            }
            KeyCode::Char('n') => Some(PermissionChoice::Deny),
            KeyCode::Esc => {
                // No to this call, and stop the turn.
                self.permissions.clear();
                if let Some(live) = &self.live {
                    live.abort(Abort::CurrentRun);
                }
                return;
            }
            KeyCode::PageUp => {
                self.scroll_by(self.page());
                None
            }
            KeyCode::PageDown => {
                self.scroll_by(-self.page());
                None
            }
            _ => None,
        };
        let Some(choice) = chosen else {
            return;
        };
        if self.permission_since.elapsed() < super::ANSWER_GUARD {
            return;
        }
        let Some(dialog) = self.permissions.pop_front() else {
            return;
        };
        self.permission_since = Instant::now();
        let answer = match choice {
            PermissionChoice::AllowOnce => PermissionAnswer::Allow,
            PermissionChoice::AllowAlways => PermissionAnswer::AlwaysAllow,
            PermissionChoice::Deny => PermissionAnswer::Deny,
        };
        if let Some(live) = &self.live {
            // False when the run ended meanwhile: nothing waits for it.
            live.answer_permission(&dialog.request_id, answer);
        }
        self.transcript
            .permission_answered(&dialog.call.id, Instant::now());
        if choice == PermissionChoice::AllowAlways
            && let Some(rule) = &dialog.always_rule
        {
            self.notice(
                NoticeKind::Info,
                format!("Allowed for this session: {rule}"),
            );
        }
    }

    async fn modal_key(&mut self, key: KeyEvent) {
        let Some(modal) = &mut self.modal else {
            return;
        };
        match modal {
            Modal::Help => self.modal = None,
            Modal::Output(_) => self.output_key(key),
            Modal::Sessions(picker) => match key.code {
                KeyCode::Esc => self.modal = None,
                KeyCode::Up => picker.move_selection(-1),
                KeyCode::Down => picker.move_selection(1),
                KeyCode::PageUp => picker.move_selection(-10),
                KeyCode::PageDown => picker.move_selection(10),
                KeyCode::Backspace => {
                    let mut filter = picker.filter.clone();
                    filter.pop();
                    picker.set_filter(filter);
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    let filter = format!("{}{c}", picker.filter);
                    picker.set_filter(filter);
                }
                KeyCode::Enter => {
                    let id = picker.selected_entry().map(|e| e.id.clone());
                    self.modal = None;
                    if let Some(id) = id {
                        self.resume(&id).await;
                    }
                }
                _ => {}
            },
            Modal::Rewind(picker) => match key.code {
                KeyCode::Esc => self.modal = None,
                KeyCode::Up => picker.move_selection(-1),
                KeyCode::Down => picker.move_selection(1),
                KeyCode::PageUp => picker.move_selection(-10),
                KeyCode::PageDown => picker.move_selection(10),
                KeyCode::Backspace => picker.pop_filter(),
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    picker.push_filter(c)
                }
                KeyCode::Enter => {
                    let chosen = picker.selected().cloned();
                    self.modal = None;
                    if let Some(chosen) = chosen {
                        self.rewind_to(chosen).await;
                    }
                }
                _ => {}
            },
        }
    }

    /// Keys the completion popup takes; false lets the key through.
    async fn completion_key(&mut self, key: KeyEvent) -> bool {
        let Some(completion) = &mut self.completion else {
            return false;
        };
        match key.code {
            KeyCode::Up => completion.move_selection(-1),
            KeyCode::Down => completion.move_selection(1),
            KeyCode::Esc => {
                self.dismissed = Some((completion.token.row, completion.token.start));
                self.completion = None;
            }
            KeyCode::Tab => {
                completion.accept(&mut self.editor);
                self.update_completion();
            }
            KeyCode::Enter if key.modifiers.is_empty() => {
                let kind = completion.kind;
                completion.accept(&mut self.editor);
                self.completion = None;
                // A command is complete once chosen: Enter runs it.
                if kind == CompletionKind::Command {
                    self.submit().await;
                } else {
                    self.update_completion();
                }
            }
            _ => return false,
        }
        true
    }

    /// Shift+Tab: the next prompts' permission mode goes default →
    /// acceptEdits → plan → default (any other mode goes to default); the
    /// status line shows it.
    fn cycle_mode(&mut self) {
        let current = self
            .transcript
            .status()
            .permission_mode
            .parse()
            .unwrap_or_default();
        let next = match current {
            PermissionMode::Default => PermissionMode::AcceptEdits,
            PermissionMode::AcceptEdits => PermissionMode::Plan,
            _ => PermissionMode::Default,
        };
        let mut choice = self.choice.clone();
        choice.mode = Some(next);
        self.apply_choice(choice);
    }

    /// Moves the view back to the newest output.
    pub(super) fn follow(&mut self) {
        self.scroll = ScrollState::BOTTOM;
    }
}
