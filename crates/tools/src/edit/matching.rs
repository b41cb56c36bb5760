//! Where `old_string` is in a file, and the file with `new_string` in its
//! place. Pure: text in, text out, no IO.
//!
//! The cascade, first success wins; every stage must find exactly one place
//! (or, with `replace_all`, at least one exact one), and a stage that finds
//! several refuses the edit instead of passing it to a looser stage:
//! 1. exact substring;
//! 2. exact substring with `old_string`'s line endings written as the file's;
//! 3. whole lines equal but for trailing whitespace;
//! 4. whole lines equal but for indentation;
//! 5. whole lines equal but for runs of whitespace anywhere;
//! 6. stages 1-5 again with literal escapes (`\n`, `\t`, `\"`, …) in both
//!    strings undone;
//! 7. stages 1-5 again with the `read` tool's line-number prefixes taken off
//!    both strings; then Unicode look-alikes taken as ASCII; then a blank
//!    line more or fewer (see [`super::lenient`]).
//!
//! Whatever made `old_string` match is done to `new_string` too: it is
//! written with the file's dominant line ending, re-indented to the file's
//! style and level after stages 4-5 (see [`super::indent`]), and unescaped
//! after stage 6. `replace_all` uses stages 1-2 only: several places changed
//! on a guess could not be checked by the model one by one.
//!
//! Everything outside the replaced ranges is kept byte for byte; when a
//! replacement reaches the end of the file, the file keeps or lacks its final
//! newline as before.

use super::closest::{Candidate, closest};
use super::indent;
use super::lenient;
use super::text::{Block, Eol, Line, line_of, split_lines, unescape};

/// How many places the edit must change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Occurrences {
    /// Exactly one.
    One,
    /// Every exact occurrence, at least one.
    All,
}

/// The stage of the cascade that matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strategy {
    Exact,
    LineEndings,
    TrailingWhitespace,
    Indentation,
    Whitespace,
    /// No-break spaces, curly quotes and dashes taken as their ASCII forms.
    LookAlikes,
    /// A blank line more or fewer.
    BlankLines,
}

/// How `old_string` matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct How {
    pub strategy: Strategy,
    /// Literal escapes were undone first.
    pub unescaped: bool,
    /// The `read` tool's line-number prefixes were taken off first.
    pub numbered: bool,
}

impl How {
    /// What the model should learn from the match, if anything.
    pub(crate) fn note(self) -> Option<String> {
        let mut notes: Vec<&str> = Vec::new();
        match self.strategy {
            Strategy::Exact
            | Strategy::LineEndings
            | Strategy::LookAlikes
            | Strategy::BlankLines => {}
            Strategy::TrailingWhitespace => {
                notes.push("old_string matched only ignoring trailing whitespace");
            }
            Strategy::Indentation => notes.push(
                "old_string matched only ignoring indentation; new_string was re-indented to fit",
            ),
            Strategy::Whitespace => notes.push(
                "old_string matched only ignoring whitespace differences; new_string was \
                 re-indented to fit",
            ),
        }
        match self.strategy {
            Strategy::LookAlikes => notes.push(
                "old_string matched only taking look-alike characters (no-break spaces, curly \
                 quotes, dashes) as their ASCII forms; only the part new_string changes was \
                 written, the rest kept the file's characters",
            ),
            Strategy::BlankLines => notes.push(
                "old_string matched only ignoring blank lines; the matched lines were replaced by \
                 new_string",
            ),
            _ => {}
        }
        if self.numbered {
            notes.push(
                "old_string carried the read tool's line-number prefixes; they were taken off \
                 both strings",
            );
        }
        if self.unescaped {
            notes.push(
                "old_string and new_string held literal escapes (like \\n or \\\"); they were \
                 read as the characters they stand for",
            );
        }
        (!notes.is_empty()).then(|| notes.join("; "))
    }

    /// How the match was loosened, for messages: `ignoring indentation`.
    pub(crate) fn loosened(self) -> &'static str {
        match self.strategy {
            Strategy::Exact | Strategy::LineEndings if self.unescaped => "with escapes undone",
            Strategy::Exact | Strategy::LineEndings => "exactly",
            Strategy::TrailingWhitespace => "ignoring trailing whitespace",
            Strategy::Indentation => "ignoring indentation",
            Strategy::Whitespace => "ignoring whitespace differences",
            Strategy::LookAlikes => "taking look-alike characters as ASCII",
            Strategy::BlankLines => "ignoring blank lines",
        }
    }
}

/// A successful replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Replaced {
    pub text: String,
    pub count: usize,
    pub how: How,
    /// 1-based line, in the original, where the first replaced range starts.
    pub first_line: usize,
}

/// Why nothing was replaced.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum MatchError {
    NotFound {
        closest: Option<Candidate>,
        occurrences: Occurrences,
    },
    /// Several places match at the first stage that matched at all.
    Ambiguous {
        how: How,
        count: usize,
        /// First and last line of the first few places (1-based).
        places: Vec<(usize, usize)>,
        /// More places than `places` lists.
        more: bool,
    },
    /// The lines matched ignoring indentation, but shift by amounts
    /// `new_string` cannot follow.
    InconsistentIndentation { first_line: usize, last_line: usize },
}

/// How many places an ambiguity message lists.
const MAX_PLACES: usize = 10;

/// `content` with `old` replaced by `new` per the cascade.
pub(crate) fn replace(
    content: &str,
    old: &str,
    new: &str,
    occurrences: Occurrences,
) -> Result<Replaced, MatchError> {
    if let Some(done) = cascade(content, old, new, occurrences, false)? {
        return Ok(done);
    }
    let unescaped_old = match occurrences {
        Occurrences::One => unescape(old),
        Occurrences::All => None,
    };
    if let Some(old_u) = &unescaped_old {
        let new_u = unescape(new).unwrap_or_else(|| new.to_owned());
        if let Some(done) = cascade(content, old_u, &new_u, occurrences, true)? {
            return Ok(done);
        }
    }
    if occurrences == Occurrences::One {
        if let Some((old_n, new_n)) = lenient::strip_read_prefixes(old, new)
            && let Some(mut done) = cascade(content, &old_n, &new_n, occurrences, false)?
        {
            done.how.numbered = true;
            return Ok(done);
        }
        if let Some(done) = lenient::look_alikes(content, old, new)? {
            return Ok(done);
        }
        if let Some(done) = lenient::blank_lines(content, old, new)? {
            return Ok(done);
        }
    }
    let file: Vec<&str> = split_lines(content).iter().map(|l| l.text).collect();
    let mut best = closest(&file, &Block::new(old).lines);
    if let Some(old_u) = &unescaped_old
        && let Some(other) = closest(&file, &Block::new(old_u).lines)
        && best
            .as_ref()
            .is_none_or(|b| other.similarity > b.similarity)
    {
        best = Some(other);
    }
    Err(MatchError::NotFound {
        closest: best,
        occurrences,
    })
}

/// Stages 1-5 for one pair of strings; `Ok(None)` when none matched.
fn cascade(
    content: &str,
    old: &str,
    new: &str,
    occurrences: Occurrences,
    unescaped: bool,
) -> Result<Option<Replaced>, MatchError> {
    let eol = Eol::of(content);
    let how = |strategy| How {
        strategy,
        unescaped,
        numbered: false,
    };
    let converted = eol.apply(old);
    let mut needles = vec![(old, Strategy::Exact)];
    if converted != old {
        needles.push((&converted, Strategy::LineEndings));
    }
    for (needle, strategy) in needles {
        let starts: Vec<usize> = content.match_indices(needle).map(|(i, _)| i).collect();
        match (starts.len(), occurrences) {
            (0, _) => {}
            (1, _) | (_, Occurrences::All) => {
                let new = eol.apply(new);
                return Ok(Some(splice(content, needle, &starts, &new, how(strategy))));
            }
            (count, Occurrences::One) => {
                let extra_lines = needle.trim_end_matches('\n').matches('\n').count();
                // Several matches on one line are one place to the reader.
                let mut places: Vec<(usize, usize)> = starts
                    .iter()
                    .map(|&s| {
                        let first = line_of(content, s);
                        (first, first + extra_lines)
                    })
                    .collect();
                places.dedup();
                let more = places.len() > MAX_PLACES;
                places.truncate(MAX_PLACES);
                return Err(MatchError::Ambiguous {
                    how: how(strategy),
                    count,
                    places,
                    more,
                });
            }
        }
    }
    if occurrences == Occurrences::All {
        return Ok(None);
    }
    let old_block = Block::new(old);
    if old_block.lines.iter().all(|l| l.trim().is_empty()) {
        return Ok(None);
    }
    let new_block = Block::new(new);
    let lines = split_lines(content);
    for strategy in [
        Strategy::TrailingWhitespace,
        Strategy::Indentation,
        Strategy::Whitespace,
    ] {
        let starts = find_windows(&lines, &old_block.lines, strategy);
        let k = old_block.lines.len();
        match starts.as_slice() {
            [] => {}
            [start] => {
                let window = Window {
                    lines: &lines,
                    start: *start,
                    len: k,
                };
                return splice_lines(content, window, &old_block, &new_block, how(strategy))
                    .map(Some);
            }
            _ => {
                return Err(MatchError::Ambiguous {
                    how: how(strategy),
                    count: starts.len(),
                    places: starts
                        .iter()
                        .take(MAX_PLACES)
                        .map(|&s| (s + 1, s + k))
                        .collect(),
                    more: starts.len() > MAX_PLACES,
                });
            }
        }
    }
    Ok(None)
}

/// Whether a file line and a line of `old_string` are equal under `strategy`.
fn lines_equal(file: &str, old: &str, strategy: Strategy) -> bool {
    match strategy {
        Strategy::Exact | Strategy::LineEndings => file == old,
        // ASCII whitespace only: a no-break space is a character of the
        // file, left to the look-alike stage, which keeps it; taken as
        // whitespace here, a rewritten line would silently lose it.
        Strategy::TrailingWhitespace => trim_ascii_end(file) == trim_ascii_end(old),
        Strategy::Indentation => file.trim_ascii() == old.trim_ascii(),
        Strategy::Whitespace => file
            .split_ascii_whitespace()
            .eq(old.split_ascii_whitespace()),
        // Stages of their own (`lenient`), never used to compare lines here.
        Strategy::LookAlikes | Strategy::BlankLines => false,
    }
}

fn trim_ascii_end(text: &str) -> &str {
    text.trim_end_matches(|c: char| c.is_ascii_whitespace())
}

/// The 0-based first lines of every window of `lines` matching `old`.
fn find_windows(lines: &[Line<'_>], old: &[String], strategy: Strategy) -> Vec<usize> {
    if old.is_empty() || old.len() > lines.len() {
        return Vec::new();
    }
    (0..=lines.len() - old.len())
        .filter(|&start| {
            old.iter()
                .enumerate()
                .all(|(j, o)| lines_equal(lines[start + j].text, o, strategy))
        })
        .collect()
}

/// Replaces every `needle` at `starts` (non-overlapping, ascending).
fn splice(content: &str, needle: &str, starts: &[usize], new: &str, how: How) -> Replaced {
    let mut text = String::with_capacity(content.len() + starts.len() * new.len());
    let mut done = 0;
    for &start in starts {
        text.push_str(&content[done..start]);
        text.push_str(new);
        done = start + needle.len();
    }
    text.push_str(&content[done..]);
    let touched_eof = done == content.len();
    Replaced {
        text: keep_final_newline(content, text, touched_eof),
        count: starts.len(),
        how,
        first_line: starts.first().map_or(1, |&s| line_of(content, s)),
    }
}

/// Lines `start..start + len` of a file.
#[derive(Clone, Copy)]
struct Window<'a, 'b> {
    lines: &'b [Line<'a>],
    start: usize,
    len: usize,
}

/// Replaces whole lines matched by a tolerant stage.
fn splice_lines(
    content: &str,
    window: Window<'_, '_>,
    old: &Block,
    new: &Block,
    how: How,
) -> Result<Replaced, MatchError> {
    let matched = &window.lines[window.start..window.start + window.len];
    let (Some(first), Some(last)) = (matched.first(), matched.last()) else {
        return Err(MatchError::NotFound {
            closest: None,
            occurrences: Occurrences::One,
        });
    };
    let begin = first.start;
    let end = if old.trailing_newline {
        last.next
    } else {
        last.end
    };
    let new_lines = match how.strategy {
        Strategy::Indentation | Strategy::Whitespace => {
            let mut style = indent::detect(window.lines.iter().map(|l| l.text));
            let indented: Vec<&str> = matched
                .iter()
                .map(|l| l.text)
                .filter(|t| !indent::leading(t).is_empty())
                .collect();
            if !indented.is_empty() {
                style.tabs = indent::detect(indented).tabs;
            }
            let file: Vec<&str> = matched.iter().map(|l| l.text).collect();
            indent::reindent(&file, &old.lines, &new.lines, style).map_err(|_| {
                MatchError::InconsistentIndentation {
                    first_line: window.start + 1,
                    last_line: window.start + window.len,
                }
            })?
        }
        _ => new.lines.clone(),
    };
    let eol = Eol::of(content);
    let replacement = Block::render(&new_lines, new.trailing_newline, eol);
    let mut text = String::with_capacity(content.len() + replacement.len());
    text.push_str(&content[..begin]);
    text.push_str(&replacement);
    text.push_str(&content[end..]);
    Ok(Replaced {
        text: keep_final_newline(content, text, end == content.len()),
        count: 1,
        how,
        first_line: window.start + 1,
    })
}

/// `result`, whose end was rewritten when `touched_eof`, with the final
/// newline `original` had (or lacked). An emptied file stays empty.
fn keep_final_newline(original: &str, mut result: String, touched_eof: bool) -> String {
    if !touched_eof || result.is_empty() || original.is_empty() {
        return result;
    }
    let had = original.ends_with('\n');
    let has = result.ends_with('\n');
    if had && !has {
        result.push_str(Eol::of(original).as_str());
    } else if !had && has {
        result.pop();
        if result.ends_with('\r') {
            result.pop();
        }
    }
    result
}

#[cfg(test)]
#[path = "matching_tests.rs"]
mod tests;
