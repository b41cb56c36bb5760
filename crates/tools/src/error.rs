//! Why a tool call failed, in words the model can act on.
//!
//! Every `Display` is one sentence (plus, for a killed command, the output it
//! produced) that says what happened and what to do next. The loop sends it to
//! the model as an error result; nothing here ends the run.

use std::path::PathBuf;

/// A failed tool call.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not fit the tool's schema or make no sense together.
    /// The message is complete (it names the tool); see [`ToolError::invalid`].
    #[error("{0}")]
    InvalidArguments(String),

    #[error(
        "`{path}` is outside the workspace `{}`; use a path inside the workspace",
        root.display()
    )]
    OutsideWorkspace { path: String, root: PathBuf },

    #[error("`{path}` does not exist; check the path (glob or ls can find files)")]
    NotFound { path: String },

    #[error("`{path}` is a directory, not a file; use ls to list it")]
    IsADirectory { path: String },

    #[error("`{path}` is a file, not a directory; use read to read it")]
    NotADirectory { path: String },

    #[error("`{path}` is a binary file; this tool only works on text files")]
    Binary { path: String },

    #[error("could not access `{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "the command timed out after {timeout_ms} ms and was killed; use a larger \
         timeout_ms (at most 600000) or a quicker command{}",
        output_so_far(output)
    )]
    Timeout { timeout_ms: u64, output: String },

    #[error("the call was cancelled{}", output_so_far(output))]
    Cancelled { output: String },

    #[error("{0}")]
    Failed(String),

    /// `write`, `edit` or `multi_edit` on an existing file the session has
    /// not read.
    #[error(
        "`{path}` has not been read in this session; read it first, so that the change is \
         based on its current content"
    )]
    NotReadYet { path: String },

    /// The file changed on disk since the session last read or wrote it.
    #[error(
        "`{path}` changed since it was read at {read_at}; read it again and base the change \
         on its current content"
    )]
    Stale { path: String, read_at: String },
}

impl ToolError {
    /// `invalid arguments for `tool`: message`.
    pub fn invalid(tool: &str, message: impl std::fmt::Display) -> Self {
        ToolError::InvalidArguments(format!("invalid arguments for `{tool}`: {message}"))
    }

    pub(crate) fn io(path: impl Into<String>, source: std::io::Error) -> Self {
        ToolError::Io {
            path: path.into(),
            source,
        }
    }
}

fn output_so_far(output: &str) -> String {
    if output.is_empty() {
        String::new()
    } else {
        format!("; output so far:\n{output}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_message_carries_the_output() {
        let err = ToolError::Timeout {
            timeout_ms: 1000,
            output: "tick\n".into(),
        };
        let text = err.to_string();
        assert!(text.starts_with("the command timed out after 1000 ms"));
        assert!(text.ends_with("output so far:\ntick\n"));
    }

    #[test]
    fn cancelled_without_output_is_one_sentence() {
        let err = ToolError::Cancelled {
            output: String::new(),
        };
        assert_eq!(err.to_string(), "the call was cancelled");
    }
}
