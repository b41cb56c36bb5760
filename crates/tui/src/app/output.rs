//! Ctrl-O: the full output of the last finished tool call, in a view of
//! its own ([`OutputView`]).
//!
//! The output is the tool result as the model got it: the newest one the
//! transcript keeps, an older one is read from the session's history (not
//! kept in cells, so they stay bounded). While a run holds the session the
//! cell's tail is shown instead.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use gyre_protocol::Part;

use super::{App, Backend, Modal};
use crate::transcript::NoticeKind;
use crate::view::OutputView;

impl<B: Backend> App<B> {
    /// Opens the output of the last finished tool call.
    pub(super) fn open_output(&mut self) {
        let Some((call_id, title)) = self.transcript.last_finished_tool() else {
            self.notice(NoticeKind::Info, "No finished tool call to show yet.");
            return;
        };
        if let Some(text) = self.transcript.last_output(&call_id) {
            let view = OutputView::new(title, text);
            self.modal = Some(Modal::Output(view));
            return;
        }
        let stored = self.live.as_ref().and_then(|live| {
            live.with_session(|session| {
                session.history.iter().rev().find_map(|message| {
                    message.parts.iter().find_map(|part| match part {
                        Part::ToolResult(result) if result.call_id == call_id => {
                            Some(result.text_content())
                        }
                        _ => None,
                    })
                })
            })
        });
        let text = stored
            .flatten()
            .unwrap_or_else(|| self.transcript.tool_tail(&call_id));
        self.modal = Some(Modal::Output(OutputView::new(title, &text)));
    }

    /// A key while the output view is open.
    pub(super) fn output_key(&mut self, key: KeyEvent) {
        let Some(Modal::Output(view)) = &mut self.modal else {
            return;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => self.modal = None,
            KeyCode::Char('o') if ctrl => self.modal = None,
            KeyCode::Up | KeyCode::Char('k') => view.scroll(-1),
            KeyCode::Down | KeyCode::Char('j') | KeyCode::Enter => view.scroll(1),
            KeyCode::PageUp | KeyCode::Char('b') => view.scroll_pages(-1),
            KeyCode::PageDown | KeyCode::Char(' ') => view.scroll_pages(1),
            KeyCode::Home | KeyCode::Char('g') => view.home(),
            KeyCode::End | KeyCode::Char('G') => view.end(),
            _ => {}
        }
    }
}
