//! Turning cells into styled lines: Markdown, highlighting, diffs, wrapping.
//!
//! Content is first made into width-independent [`wrap::Logical`] lines
//! (once per finished block), then wrapped to the width at draw time (once
//! per cell and width, cached by the cell).

pub(crate) mod cell;
pub(crate) mod diff;
pub(crate) mod highlight;
pub(crate) mod markdown;
mod md_blocks;
pub(crate) mod text;
pub(crate) mod wrap;
