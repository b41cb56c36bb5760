//! The directory walk shared by grep, glob and ls.
//!
//! Invariants: `.gitignore`, `.ignore` and git's exclude files are honoured
//! (also outside a git repository, since a workspace is often not one), `.git`
//! is never entered, symlinks are not followed (a link could lead out of the
//! workspace), and entries come in file-name order so results are stable.

use std::path::Path;

use ignore::WalkBuilder;

/// Whether hidden entries (dot files) are walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hidden {
    Skip,
    Include,
}

pub(crate) fn walker(root: &Path, hidden: Hidden) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(hidden == Hidden::Skip)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
}
