//! Finding a cell for a view of its own (Ctrl-O's full output).

use super::{CellKind, Transcript};

impl Transcript {
    /// The newest finished tool call of the parent run: its call id and a
    /// title (its name and summary).
    pub fn last_finished_tool(&self) -> Option<(String, String)> {
        self.tools
            .iter()
            .filter_map(|(call_id, &index)| match &self.cells.get(index)?.kind {
                CellKind::Tool(tool) if tool.state.is_finished() => Some((index, call_id, tool)),
                _ => None,
            })
            .max_by_key(|(index, _, _)| *index)
            .map(|(_, call_id, tool)| {
                let title = format!("{} {}", tool.name, tool.summary);
                (call_id.clone(), title.trim_end().to_string())
            })
    }

    /// The whole text of the newest tool result, if it is `call_id`'s.
    pub fn last_output(&self, call_id: &str) -> Option<&str> {
        match &self.last_output {
            Some((id, text)) if id == call_id => Some(text),
            _ => None,
        }
    }

    /// The output lines a tool cell keeps (its tail), for a call whose
    /// full result is not at hand.
    pub fn tool_tail(&self, call_id: &str) -> String {
        let Some(cell) = self.tools.get(call_id).and_then(|&i| self.cells.get(i)) else {
            return String::new();
        };
        match &cell.kind {
            CellKind::Tool(tool) => {
                let mut text: Vec<&str> = tool.tail.visible().collect();
                if text.is_empty() {
                    text.push(&tool.outcome);
                }
                text.join("\n")
            }
            _ => String::new(),
        }
    }
}
