//! Markdown → styled logical lines, built incrementally while it streams.
//!
//! Invariant: the source is cut at block boundaries that later text cannot
//! change (a non-indented line after a blank line, or the end of a closed
//! code fence, outside any fence); everything before the last boundary is
//! rendered once ("committed", code highlighted) and never again; only the
//! tail after it is parsed at draw time, without highlighting. So a delta
//! costs the tail, not the message, and highlighting runs once per block.
//! Trade-off: blocks are parsed separately, so a construct spanning a
//! boundary (a loose list) renders as two.

use std::sync::Mutex;

use ratatui::text::Line;

use super::md_blocks::render;
use super::wrap::{Logical, wrap_all};
use crate::palette::Palette;

/// An assistant message's Markdown, committed block by block.
pub(crate) struct StreamingMarkdown {
    source: String,
    /// Bytes of `source` rendered into `committed`.
    committed_len: usize,
    /// Start of the first line not yet scanned for boundaries.
    scanned: usize,
    /// The fence open at `scanned`.
    fence: Option<Fence>,
    prev_blank: bool,
    committed: Vec<Logical>,
    /// `committed` wrapped at one width: (width, logical lines wrapped,
    /// rows). Extended as blocks commit, so streaming wraps each block once.
    wrapped: Mutex<Option<(u16, usize, Vec<Line<'static>>)>>,
    finished: bool,
}

impl StreamingMarkdown {
    pub(crate) fn new() -> Self {
        Self {
            source: String::new(),
            committed_len: 0,
            scanned: 0,
            fence: None,
            prev_blank: false,
            committed: Vec::new(),
            wrapped: Mutex::new(None),
            finished: false,
        }
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.finished
    }

    /// Adds streamed text; commits the blocks it completes.
    pub(crate) fn push(&mut self, delta: &str, palette: Palette) {
        self.source.push_str(delta);
        let mut boundary = None;
        while let Some(newline) = self.source[self.scanned..].find('\n') {
            let start = self.scanned;
            let end = start + newline + 1;
            let line = &self.source[start..end];
            let blank = line.trim().is_empty();
            if self.fence.is_none() && self.prev_blank && !blank && !line.starts_with([' ', '\t']) {
                boundary = Some(start);
            }
            match (self.fence, fence_marker(line)) {
                (None, Some(fence)) => self.fence = Some(fence),
                (Some(open), Some(close))
                    if open.marker == close.marker
                        && close.len >= open.len
                        && is_bare_fence(line) =>
                {
                    self.fence = None;
                    // An indented fence may belong to a list item that goes on.
                    if open.indent == 0 {
                        boundary = Some(end);
                    }
                }
                _ => {}
            }
            self.prev_blank = blank;
            self.scanned = end;
        }
        if let Some(boundary) = boundary {
            self.commit_to(boundary, palette);
        }
    }

    /// The message is complete: everything is committed, and the source is
    /// dropped (the rendered lines are all that is shown; the message itself
    /// is in the store).
    pub(crate) fn finish(&mut self, palette: Palette) {
        if !self.finished {
            self.commit_to(self.source.len(), palette);
            self.finished = true;
            self.source = String::new();
            (self.committed_len, self.scanned) = (0, 0);
        }
    }

    fn commit_to(&mut self, end: usize, palette: Palette) {
        if end <= self.committed_len {
            return;
        }
        let block = &self.source[self.committed_len..end];
        if !block.trim().is_empty() {
            if !self.committed.is_empty() {
                self.committed.push(Logical::blank());
            }
            self.committed
                .extend(render(block, palette, Highlight::Yes));
        }
        self.committed_len = end;
    }

    /// The message wrapped to `width`.
    pub(crate) fn lines(&self, width: u16, palette: Palette) -> Vec<Line<'static>> {
        let mut out = {
            let mut cache = self.wrapped.lock().unwrap_or_else(|e| e.into_inner());
            let (cached_width, done, rows) = cache.get_or_insert_with(|| (width, 0, Vec::new()));
            if *cached_width != width {
                (*cached_width, *done) = (width, 0);
                rows.clear();
            }
            wrap_all(&self.committed[*done..], width, rows);
            *done = self.committed.len();
            if self.finished {
                // The cell caches a finished message's rows itself.
                let rows = std::mem::take(rows);
                *cache = None;
                rows
            } else {
                rows.clone()
            }
        };
        let tail = &self.source[self.committed_len..];
        if !tail.trim().is_empty() {
            if !self.committed.is_empty() {
                out.push(Line::default());
            }
            wrap_all(&render(tail, palette, Highlight::No), width, &mut out);
        }
        out
    }
}

/// Whether code blocks are highlighted (only once they are complete).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Highlight {
    Yes,
    No,
}

/// A code fence: ``` or ~~~ (3 or more), indented at most 3 spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fence {
    marker: char,
    len: usize,
    indent: usize,
}

/// The fence a line opens or closes, if it is one.
fn fence_marker(line: &str) -> Option<Fence> {
    let trimmed = line.trim_start_matches(' ');
    let indent = line.len() - trimmed.len();
    if indent > 3 {
        return None;
    }
    let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = trimmed.chars().take_while(|x| *x == marker).count();
    (len >= 3).then_some(Fence {
        marker,
        len,
        indent,
    })
}

/// A closing fence has nothing after its marker.
fn is_bare_fence(line: &str) -> bool {
    line.trim().chars().all(|c| c == '`' || c == '~')
}
