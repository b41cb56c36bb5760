//! Splitting a `bash` command into the simple commands it runs, so that each
//! can be checked against the rules.
//!
//! Invariants:
//! - One scanner decides both where segments split (`;`, `&&`, `||`, `|`,
//!   `|&`, `&`, newlines) and what is quoted, so a separator inside quotes
//!   (`echo "a; rm b"`) never splits and a quoted word never hides one.
//! - Everything that runs code is a segment of its own: subshells `( … )`,
//!   command substitutions `$( … )` and backticks (also inside double
//!   quotes), process substitutions `<( … )`, `bash -c STRING`, `eval`, and
//!   `find … -exec CMD … ;`.
//! - Wrappers are looked through (`env`, `timeout`, `nice`, `nohup`, `sudo`,
//!   `time`, `command`, `exec`, `xargs`, `stdbuf`, leading `VAR=value`), so
//!   a deny or ask rule for `rm` catches `sudo rm x`. Allow rules see
//!   through the harmless ones only (`timeout`, `nice`, `nohup`, `time`,
//!   `stdbuf`, `command`): `bash(rm:*)` does not allow `sudo rm x`, and
//!   `bash(git status)` does not allow `PATH=/tmp/evil git status`.
//! - Redirections are removed from the words that rules see (`echo hi > f`
//!   is matched as `echo hi`); the raw text keeps them for the read-only
//!   classifier, which refuses writes.
//! - What the scanner does not understand is an error, never a guess:
//!   here-documents, arithmetic expansion, a command name that comes from an
//!   expansion (`$CMD x`), unbalanced quotes or parentheses. The caller never
//!   lets an allow rule pass such a command.
//!
//! Trade-offs: words are compared after quote removal, so rules see what the
//! program receives, not how it was typed; option order is not normalised
//! (`rm -r -f` is not `rm -rf`), as in Claude Code. A deny rule on a command
//! is a guard against mistakes, not a sandbox: an interpreter can do what
//! the command does (`python -c 'import os; os.remove(…)'`), and only the
//! wrappers listed in `wrappers` are looked through.

use super::wrappers::{Strip, strip_wrappers};

/// Nesting of substitutions and `bash -c` strings deeper than this is
/// refused rather than followed (bounded work on hostile input).
const MAX_DEPTH: usize = 8;

/// One simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Segment {
    /// The command's words after quote removal, wrappers and redirections
    /// removed (what deny and ask rules see).
    pub words: Vec<String>,
    /// The words with only the harmless wrappers removed (what allow rules
    /// see).
    pub allow_words: Vec<String>,
    /// The segment as written (redirections included).
    pub raw: String,
}

impl Segment {
    pub fn canonical(&self) -> String {
        canonical(&self.words)
    }

    pub fn allow_canonical(&self) -> String {
        canonical(&self.allow_words)
    }
}

/// The form rules and commands are compared in: words re-quoted by `shlex`.
pub(crate) fn canonical(words: &[String]) -> String {
    shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "))
}

/// The segments of `command`, or why it cannot be checked.
pub(crate) fn split(command: &str) -> Result<Vec<Segment>, String> {
    split_at(command, 0)
}

fn split_at(command: &str, depth: usize) -> Result<Vec<Segment>, String> {
    if depth > MAX_DEPTH {
        return Err("it nests commands too deeply to check".into());
    }
    let chars: Vec<char> = command.chars().collect();
    let mut raw_segments = Vec::new();
    scan(&chars, depth, &mut raw_segments)?;
    let mut segments = Vec::new();
    for scanned in raw_segments {
        let Some(words) = shlex::split(&scanned.text) else {
            return Err("it has unbalanced quotes".into());
        };
        expand(words, scanned, depth, &mut segments)?;
    }
    Ok(segments)
}

/// A segment as scanned.
struct RawSegment {
    /// What rules see: redirections removed.
    text: String,
    raw: String,
    /// Whether it redirects output: such a segment must have a command of
    /// its own (`(ls) > f` writes `f` although `ls` only reads).
    writes: bool,
}

struct Current {
    text: String,
    raw: String,
    writes: bool,
    /// Segments found inside this one (substitutions); they follow it.
    inner: Vec<RawSegment>,
}

impl Current {
    fn new() -> Self {
        Self {
            text: String::new(),
            raw: String::new(),
            writes: false,
            inner: Vec::new(),
        }
    }

    fn push(&mut self, chars: &[char]) {
        self.text.extend(chars);
        self.raw.extend(chars);
    }

    fn at_word_start(&self) -> bool {
        self.text.is_empty() || self.text.ends_with(char::is_whitespace)
    }

    fn finish(&mut self, out: &mut Vec<RawSegment>) {
        let done = std::mem::replace(self, Current::new());
        if !done.text.trim().is_empty() || done.writes {
            out.push(RawSegment {
                text: done.text,
                raw: done.raw.trim().to_string(),
                writes: done.writes,
            });
        }
        out.extend(done.inner);
    }
}

fn scan(chars: &[char], depth: usize, out: &mut Vec<RawSegment>) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("it nests commands too deeply to check".into());
    }
    let mut cur = Current::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '\'' => {
                let end = find_from(chars, i + 1, '\'').ok_or("it has unbalanced quotes")?;
                cur.push(&chars[i..=end]);
                i = end + 1;
            }
            '"' => {
                let end = double_quoted(chars, i + 1, depth, &mut cur.inner)?;
                cur.push(&chars[i..=end]);
                i = end + 1;
            }
            '\\' => match next {
                None => return Err("it ends with a backslash".into()),
                Some('\n') => i += 2,
                Some(_) => {
                    cur.push(&chars[i..i + 2]);
                    i += 2;
                }
            },
            '`' => {
                let end = backtick_end(chars, i + 1)?;
                scan(&chars[i + 1..end], depth + 1, &mut cur.inner)?;
                cur.push(&chars[i..=end]);
                i = end + 1;
            }
            '$' if next == Some('(') => {
                if chars.get(i + 2) == Some(&'(') {
                    return Err("arithmetic expansion `$(( … ))` is not checked".into());
                }
                let end = close_paren(chars, i + 2)?;
                scan(&chars[i + 2..end], depth + 1, &mut cur.inner)?;
                cur.push(&chars[i..=end]);
                i = end + 1;
            }
            '$' if next == Some('{') => {
                let end = find_from(chars, i + 2, '}').ok_or("it has an unclosed `${`")?;
                if chars[i + 2..end]
                    .iter()
                    .any(|&c| matches!(c, '$' | '`' | '('))
                {
                    return Err("a `${ … }` expansion runs a command".into());
                }
                cur.push(&chars[i..=end]);
                i = end + 1;
            }
            '(' if cur.text.trim().is_empty() => {
                let end = close_paren(chars, i + 1)?;
                scan(&chars[i + 1..end], depth + 1, &mut cur.inner)?;
                cur.raw.extend(&chars[i..=end]);
                i = end + 1;
            }
            '(' => return Err("it has a `(` gyre does not understand".into()),
            ')' => return Err("it has an unbalanced `)`".into()),
            ';' | '\n' => {
                cur.finish(out);
                i += 1;
            }
            '&' if next == Some('>') => i = redirection(chars, i, depth, &mut cur)?,
            '&' | '|' => {
                i += if matches!(next, Some('&' | '|')) {
                    2
                } else {
                    1
                };
                cur.finish(out);
            }
            '>' | '<' => i = redirection(chars, i, depth, &mut cur)?,
            '#' if cur.at_word_start() => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            _ => {
                cur.push(&chars[i..=i]);
                i += 1;
            }
        }
    }
    cur.finish(out);
    Ok(())
}

fn find_from(chars: &[char], from: usize, wanted: char) -> Option<usize> {
    chars
        .get(from..)?
        .iter()
        .position(|&c| c == wanted)
        .map(|p| from + p)
}

/// The index of the `"` closing a double-quoted string that starts at
/// `from`; substitutions inside are scanned as segments.
fn double_quoted(
    chars: &[char],
    from: usize,
    depth: usize,
    inner: &mut Vec<RawSegment>,
) -> Result<usize, String> {
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '"' => return Ok(i),
            '\\' => i += 2,
            '`' => {
                let end = backtick_end(chars, i + 1)?;
                scan(&chars[i + 1..end], depth + 1, inner)?;
                i = end + 1;
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                if chars.get(i + 2) == Some(&'(') {
                    return Err("arithmetic expansion `$(( … ))` is not checked".into());
                }
                let end = close_paren(chars, i + 2)?;
                scan(&chars[i + 2..end], depth + 1, inner)?;
                i = end + 1;
            }
            _ => i += 1,
        }
    }
    Err("it has unbalanced quotes".into())
}

fn backtick_end(chars: &[char], from: usize) -> Result<usize, String> {
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '`' => return Ok(i),
            '\\' => i += 2,
            _ => i += 1,
        }
    }
    Err("it has an unclosed backtick".into())
}

/// The index of the `)` that closes a `(` just before `from`, skipping
/// quoted text and nested parentheses.
fn close_paren(chars: &[char], from: usize) -> Result<usize, String> {
    let mut depth = 1usize;
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '\'' => i = find_from(chars, i + 1, '\'').ok_or("it has unbalanced quotes")?,
            '"' => i = plain_quote_end(chars, i + 1)?,
            '\\' => i += 1,
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Ok(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    Err("it has an unbalanced `(`".into())
}

fn plain_quote_end(chars: &[char], from: usize) -> Result<usize, String> {
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '"' => return Ok(i),
            '\\' => i += 2,
            _ => i += 1,
        }
    }
    Err("it has unbalanced quotes".into())
}

/// Consumes a redirection starting at `start` (`>`, `<`, `&>`, with what
/// follows), and returns the index after it. Its target leaves the words
/// rules see; a process substitution is scanned as a segment.
fn redirection(
    chars: &[char],
    start: usize,
    depth: usize,
    cur: &mut Current,
) -> Result<usize, String> {
    let c = chars[start];
    let next = chars.get(start + 1).copied();
    if c == '<' && next == Some('<') {
        return Err("here-documents and here-strings are not checked".into());
    }
    if next == Some('(') && c != '&' {
        let end = close_paren(chars, start + 2)?;
        scan(&chars[start + 2..end], depth + 1, &mut cur.inner)?;
        cur.push(&chars[start..=end]);
        return Ok(end + 1);
    }
    // A file descriptor number written just before belongs to the
    // redirection (`2>`), not to the command's words.
    if c != '&' {
        let digits = cur
            .text
            .chars()
            .rev()
            .take_while(char::is_ascii_digit)
            .count();
        let before = cur.text.len() - digits;
        if digits > 0 && (before == 0 || cur.text[..before].ends_with(char::is_whitespace)) {
            cur.text.truncate(before);
        }
    }
    let mut i = start;
    while i < chars.len() && i < start + 3 && matches!(chars[i], '<' | '>' | '&' | '|') {
        i += 1;
    }
    while i < chars.len() && matches!(chars[i], ' ' | '\t') {
        i += 1;
    }
    let target_start = i;
    while i < chars.len() {
        match chars[i] {
            ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')' => break,
            '\'' => i = find_from(chars, i + 1, '\'').ok_or("it has unbalanced quotes")? + 1,
            '"' => i = plain_quote_end(chars, i + 1)? + 1,
            '\\' => i += 2,
            _ => i += 1,
        }
    }
    let target: String = chars[target_start..i.min(chars.len())].iter().collect();
    if target.is_empty() {
        return Err("a redirection has no target".into());
    }
    if target.contains("$(") || target.contains('`') {
        return Err("a redirection's target runs a command".into());
    }
    let operator: String = chars[start..target_start].iter().collect();
    cur.writes |= operator.contains('>');
    cur.raw.extend(&chars[start..i.min(chars.len())]);
    cur.text.push(' ');
    Ok(i)
}

/// Words that only open or close a compound command: skipped at the start
/// of a segment, so `if x; then rm y; fi` checks `x` and `rm y`.
const OPENING_WORDS: [&str; 10] = [
    "!", "{", "then", "do", "else", "elif", "if", "while", "until", "coproc",
];
const CLOSING_WORDS: [&str; 4] = ["}", "fi", "done", "esac"];

const SHELLS: [&str; 5] = ["bash", "sh", "zsh", "dash", "ksh"];
const FIND_EXEC: [&str; 4] = ["-exec", "-execdir", "-ok", "-okdir"];

/// Turns one scanned segment's words into the segments to check: keywords,
/// assignments and wrappers removed; nested commands added after it.
fn expand(
    words: Vec<String>,
    scanned: RawSegment,
    depth: usize,
    out: &mut Vec<Segment>,
) -> Result<(), String> {
    let mut rest: &[String] = &words;
    while let Some(first) = rest.first()
        && OPENING_WORDS.contains(&first.as_str())
    {
        rest = &rest[1..];
    }
    if rest.is_empty() || (rest.len() == 1 && CLOSING_WORDS.contains(&rest[0].as_str())) {
        return match scanned.writes {
            true => Err("it redirects the output of a subshell or group".into()),
            false => Ok(()),
        };
    }
    let or_all = |command: &[String]| match command.is_empty() {
        true => rest.to_vec(),
        false => command.to_vec(),
    };
    let words = or_all(strip_wrappers(rest, Strip::All)?);
    let allow_words = or_all(strip_wrappers(rest, Strip::Harmless)?);
    if words[0].contains(['$', '`']) {
        return Err(format!(
            "its command name `{}` comes from an expansion",
            words[0]
        ));
    }
    let nested = nested_commands(&words, depth)?;
    out.push(Segment {
        words,
        allow_words,
        raw: scanned.raw,
    });
    out.extend(nested);
    Ok(())
}

/// Commands that a segment runs through its arguments: `bash -c STRING`,
/// `eval WORDS`, `find … -exec CMD … ;`.
fn nested_commands(words: &[String], depth: usize) -> Result<Vec<Segment>, String> {
    let program = words[0].rsplit('/').next().unwrap_or_default();
    if SHELLS.contains(&program) {
        let flag = words[1..].iter().position(|w| {
            w.len() > 1 && w.starts_with('-') && !w.starts_with("--") && w.contains('c')
        });
        if let Some(at) = flag {
            return match words.get(at + 2) {
                Some(script) => split_at(script, depth + 1),
                None => Err(format!("`{program} -c` has no command")),
            };
        }
    }
    if program == "eval" {
        return split_at(&words[1..].join(" "), depth + 1);
    }
    let mut nested = Vec::new();
    if program == "find" {
        let mut i = 1;
        while i < words.len() {
            if FIND_EXEC.contains(&words[i].as_str()) {
                let end = words[i + 1..]
                    .iter()
                    .position(|w| w == ";" || w == "+")
                    .map_or(words.len(), |p| i + 1 + p);
                let inner = words[i + 1..end].to_vec();
                if !inner.is_empty() {
                    nested.push(Segment {
                        raw: canonical(&inner),
                        allow_words: inner.clone(),
                        words: inner,
                    });
                }
                i = end;
            }
            i += 1;
        }
    }
    Ok(nested)
}
