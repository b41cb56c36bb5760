//! A file's diagnostics as the model reads them: errors (and warnings when
//! asked for) with 1-based line and column, bounded in number and length.

use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString};

/// The longest message shown (characters); the rest is cut with `…`.
const MAX_MESSAGE: usize = 400;

/// One file's diagnostics from one server, and what happened to the server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub server: String,
    /// The file as shown (relative to the workspace when inside it).
    pub file: String,
    pub errors: usize,
    /// Counted only when warnings are shown.
    pub warnings: usize,
    /// The diagnostics shown, one line each.
    pub lines: Vec<String>,
    /// Diagnostics not shown (past the bound).
    pub more: usize,
    /// Said of the server since the last report (it exited, was restarted).
    pub notes: Vec<String>,
}

impl Report {
    pub fn new(
        server: &str,
        file: &str,
        diagnostics: &[Diagnostic],
        warnings: bool,
        max: usize,
    ) -> Report {
        let mut shown: Vec<&Diagnostic> = diagnostics
            .iter()
            .filter(|d| match d.severity {
                None | Some(DiagnosticSeverity::ERROR) => true,
                Some(DiagnosticSeverity::WARNING) => warnings,
                _ => false,
            })
            .collect();
        shown.sort_by_key(|d| (d.range.start.line, d.range.start.character));
        let is_error =
            |d: &&&Diagnostic| matches!(d.severity, None | Some(DiagnosticSeverity::ERROR));
        let errors = shown.iter().filter(is_error).count();
        let lines = shown.iter().take(max).map(|d| line_of(d)).collect();
        Report {
            server: server.to_owned(),
            file: file.to_owned(),
            errors,
            warnings: shown.len() - errors,
            lines,
            more: shown.len().saturating_sub(max),
            notes: Vec::new(),
        }
    }

    /// What is appended to an edit's result: empty when there is nothing to
    /// say (no errors, no notes).
    pub fn text(&self) -> String {
        let mut text = String::new();
        for note in &self.notes {
            text.push_str(&format!("Note: {note}.\n"));
        }
        if !self.lines.is_empty() {
            text.push_str(&format!(
                "\n{} reports {} in {}:\n",
                self.server,
                self.count(),
                self.file
            ));
            for line in &self.lines {
                text.push_str(line);
                text.push('\n');
            }
            if self.more > 0 {
                text.push_str(&format!("… and {} more\n", self.more));
            }
        }
        text
    }

    /// `2 errors, 1 warning`.
    pub fn count(&self) -> String {
        let plural = |n: usize, one: &str| {
            if n == 1 {
                format!("1 {one}")
            } else {
                format!("{n} {one}s")
            }
        };
        match (self.errors, self.warnings) {
            (e, 0) => plural(e, "error"),
            (0, w) => plural(w, "warning"),
            (e, w) => format!("{}, {}", plural(e, "error"), plural(w, "warning")),
        }
    }
}

fn line_of(d: &Diagnostic) -> String {
    let severity = match d.severity {
        Some(DiagnosticSeverity::WARNING) => "warning",
        _ => "error",
    };
    let mut message: String = d.message.replace('\n', " ");
    if message.chars().count() > MAX_MESSAGE {
        message = message.chars().take(MAX_MESSAGE).collect::<String>() + "…";
    }
    let code = match &d.code {
        Some(NumberOrString::String(code)) => format!(" ({code})"),
        Some(NumberOrString::Number(code)) => format!(" ({code})"),
        None => String::new(),
    };
    format!(
        "  line {}, column {}: {severity}: {message}{code}",
        d.range.start.line + 1,
        d.range.start.character + 1
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{Position, Range};

    fn diagnostic(line: u32, severity: DiagnosticSeverity, message: &str) -> Diagnostic {
        Diagnostic {
            range: Range::new(Position::new(line, 4), Position::new(line, 9)),
            severity: Some(severity),
            message: message.into(),
            ..Diagnostic::default()
        }
    }

    #[test]
    fn errors_are_shown_with_lines_warnings_only_when_asked_and_the_list_is_bounded() {
        let all = [
            diagnostic(9, DiagnosticSeverity::ERROR, "second"),
            diagnostic(2, DiagnosticSeverity::ERROR, "first"),
            diagnostic(5, DiagnosticSeverity::WARNING, "careful"),
            diagnostic(6, DiagnosticSeverity::HINT, "hint"),
        ];
        let report = Report::new("pyright", "a.py", &all, false, 1);
        assert_eq!(report.errors, 2);
        assert_eq!(report.warnings, 0);
        assert_eq!(report.lines, ["  line 3, column 5: error: first"]);
        assert_eq!(report.more, 1);
        assert!(report.text().contains("pyright reports 2 errors in a.py:"));
        let report = Report::new("pyright", "a.py", &all, true, 10);
        assert_eq!((report.errors, report.warnings), (2, 1));
        assert_eq!(report.lines.len(), 3);
        assert!(
            Report::new("pyright", "a.py", &all[3..], false, 10)
                .text()
                .is_empty()
        );
    }
}
