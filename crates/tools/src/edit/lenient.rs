//! The last, most lenient stages of the cascade, tried only for a single
//! edit once every stage of [`super::matching`] failed:
//! - the `read` tool's own line-number prefixes (`{n:>6}\t`) copied into
//!   `old_string` (and `new_string`) are taken off, when every line of
//!   `old_string` carries one and the numbers run on one by one; the cascade
//!   then runs again on what is left;
//! - Unicode look-alikes: a no-break space, curly quotes, dashes and their
//!   ASCII forms are taken as equal. Each look-alike stands for exactly one
//!   character, so the file's matched text and `old_string` line up
//!   character for character; only the part `new_string` changes is written,
//!   and everything around it keeps the file's own characters (an edit never
//!   writes anything but the intended change);
//! - a blank line more or fewer: the non-blank lines of `old_string` equal
//!   (but for trailing whitespace) a run of the file's non-blank lines.
//!
//! Each stage must find exactly one place; several is a refusal, as in the
//! rest of the cascade.

use super::matching::{How, MatchError, Replaced, Strategy};
use super::text::{Block, Eol, line_of, split_lines};

/// `old` and `new` without the `read` tool's line-number prefixes, when
/// every line of `old` has one and they count up one by one.
pub(super) fn strip_read_prefixes(old: &str, new: &str) -> Option<(String, String)> {
    let old_block = Block::new(old);
    let mut numbers = Vec::new();
    let mut stripped = Vec::new();
    for line in &old_block.lines {
        let (number, rest) = split_prefix(line)?;
        numbers.push(number);
        stripped.push(rest.to_owned());
    }
    let consecutive = numbers.windows(2).all(|w| w[1] == w[0] + 1);
    if numbers.is_empty() || !consecutive {
        return None;
    }
    let new_block = Block::new(new);
    let new_lines: Vec<String> = (new_block.lines.iter())
        .map(|line| split_prefix(line).map_or_else(|| line.clone(), |(_, rest)| rest.to_owned()))
        .collect();
    let eol = Eol::of(old);
    Some((
        Block::render(&stripped, old_block.trailing_newline, eol),
        Block::render(&new_lines, new_block.trailing_newline, eol),
    ))
}

/// `("    12\tcode")` → `(12, "code")`: spaces, digits, one tab.
fn split_prefix(line: &str) -> Option<(u64, &str)> {
    let trimmed = line.trim_start_matches(' ');
    let digits = trimmed.find(|c: char| !c.is_ascii_digit())?;
    let rest = trimmed[digits..].strip_prefix('\t')?;
    Some((trimmed[..digits].parse().ok()?, rest))
}

/// The ASCII character a look-alike stands for (one character for one).
fn plain(c: char) -> char {
    match c {
        '\u{00A0}' | '\u{2007}' | '\u{202F}' | '\u{2009}' | '\u{200A}' => ' ',
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => '"',
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2212}' => '-',
        other => other,
    }
}

fn has_look_alikes(text: &str) -> bool {
    text.chars().any(|c| plain(c) != c)
}

/// Replaces `old` matched with look-alikes taken as equal.
pub(super) fn look_alikes(
    content: &str,
    old: &str,
    new: &str,
) -> Result<Option<Replaced>, MatchError> {
    if old.is_empty() || !(has_look_alikes(content) || has_look_alikes(old)) {
        return Ok(None);
    }
    let eol = Eol::of(content);
    let old = eol.apply(old);
    let new = eol.apply(new);
    // Character starts in `content`, and its plain form, position for position.
    let starts: Vec<usize> = content.char_indices().map(|(i, _)| i).collect();
    let plain_content: Vec<char> = content.chars().map(plain).collect();
    let plain_old: Vec<char> = old.chars().map(plain).collect();
    let found: Vec<usize> = (0..plain_content.len().saturating_sub(plain_old.len() - 1))
        .filter(|&at| plain_content[at..at + plain_old.len()] == plain_old[..])
        .collect();
    let how = How {
        strategy: Strategy::LookAlikes,
        unescaped: false,
        numbered: false,
    };
    let at = match found.as_slice() {
        [] => return Ok(None),
        [at] => *at,
        _ => {
            let places: Vec<(usize, usize)> = (found.iter().take(10))
                .map(|&at| {
                    let first = line_of(content, starts[at]);
                    (first, first + old.matches('\n').count())
                })
                .collect();
            return Err(MatchError::Ambiguous {
                how,
                count: found.len(),
                places,
                more: found.len() > 10,
            });
        }
    };
    let begin = starts[at];
    let end = starts
        .get(at + plain_old.len())
        .copied()
        .unwrap_or(content.len());
    let matched: Vec<char> = content[begin..end].chars().collect();
    let old_chars: Vec<char> = old.chars().collect();
    let new_chars: Vec<char> = new.chars().collect();
    // Only what `new` changes in `old` is written; the rest stays the file's.
    let prefix = (old_chars.iter().zip(&new_chars))
        .take_while(|(a, b)| a == b)
        .count();
    let room = old_chars.len().min(new_chars.len()) - prefix;
    let suffix = (old_chars.iter().rev().zip(new_chars.iter().rev()))
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    let mut text = String::with_capacity(content.len() + new.len());
    text.push_str(&content[..begin]);
    text.extend(&matched[..prefix]);
    text.extend(&new_chars[prefix..new_chars.len() - suffix]);
    text.extend(&matched[matched.len() - suffix..]);
    text.push_str(&content[end..]);
    Ok(Some(Replaced {
        text,
        count: 1,
        how,
        first_line: line_of(content, begin),
    }))
}

/// Replaces `old` matched with blank lines ignored: its non-blank lines
/// equal (but for trailing whitespace) a run of the file's non-blank lines,
/// from the first to the last. The run's lines are replaced by `new`'s.
pub(super) fn blank_lines(
    content: &str,
    old: &str,
    new: &str,
) -> Result<Option<Replaced>, MatchError> {
    let old_block = Block::new(old);
    let wanted: Vec<&str> = (old_block.lines.iter())
        .map(|l| l.trim_end())
        .filter(|l| !l.is_empty())
        .collect();
    if wanted.len() < 2 {
        // A blank line more or fewer needs two lines to be between.
        return Ok(None);
    }
    let lines = split_lines(content);
    let filled: Vec<usize> = (0..lines.len())
        .filter(|&i| !lines[i].text.trim().is_empty())
        .collect();
    let found: Vec<usize> = (0..filled.len().saturating_sub(wanted.len() - 1))
        .filter(|&p| (0..wanted.len()).all(|j| lines[filled[p + j]].text.trim_end() == wanted[j]))
        .collect();
    let how = How {
        strategy: Strategy::BlankLines,
        unescaped: false,
        numbered: false,
    };
    let p = match found.as_slice() {
        [] => return Ok(None),
        [p] => *p,
        _ => {
            let places = (found.iter().take(10))
                .map(|&p| (filled[p] + 1, filled[p + wanted.len() - 1] + 1))
                .collect();
            return Err(MatchError::Ambiguous {
                how,
                count: found.len(),
                places,
                more: found.len() > 10,
            });
        }
    };
    let (first, last) = (filled[p], filled[p + wanted.len() - 1]);
    // `new` without the blank lines around it that `old` had around its own.
    let new_block = Block::new(new);
    let lead = |b: &Block| b.lines.iter().take_while(|l| l.trim().is_empty()).count();
    let tail = |b: &Block| {
        (b.lines.iter().rev())
            .take_while(|l| l.trim().is_empty())
            .count()
    };
    let from = lead(&new_block).min(lead(&old_block));
    let to = new_block.lines.len() - tail(&new_block).min(tail(&old_block));
    let body = new_block.lines.get(from..to.max(from)).unwrap_or_default();
    let eol = Eol::of(content);
    let begin = lines[first].start;
    let end = lines[last].end;
    let mut text = String::with_capacity(content.len() + new.len());
    text.push_str(&content[..begin]);
    text.push_str(&Block::render(body, false, eol));
    text.push_str(&content[end..]);
    Ok(Some(Replaced {
        text,
        count: 1,
        how,
        first_line: first + 1,
    }))
}
