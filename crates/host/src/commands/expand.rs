//! The pure part of a custom command's expansion: arguments substituted
//! into the template, then the template cut into text, `@file` inclusions
//! and `` !`command` `` (or gemini-cli's `!{command}`) output inclusions.
//! No IO here: [`super::render`] fills the inclusions in.
//!
//! Placeholders, as Claude Code and gemini-cli write them: `$ARGUMENTS` and
//! `{{args}}` are everything after the command's name, `$1` … `$9` its
//! words (double or single quotes group words). A template that uses none
//! of them gets the arguments appended (`ARGUMENTS: …`), so they are never
//! lost.

/// One piece of an expanded template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    /// `@path`: the file's contents when it is a file of the workspace,
    /// else the text as written.
    File(String),
    /// A shell command whose output takes its place.
    Shell(String),
}

/// `template` with `args` substituted, in pieces.
pub fn expand(template: &str, args: &str) -> Vec<Piece> {
    pieces(&substitute(template, args.trim()))
}

/// The pieces joined, each inclusion replaced by what `fill` gives it.
pub fn join(pieces: &[Piece], mut fill: impl FnMut(&Piece) -> String) -> String {
    pieces
        .iter()
        .map(|piece| match piece {
            Piece::Text(text) => text.clone(),
            other => fill(other),
        })
        .collect()
}

/// The words of `args`: split on whitespace, quotes group.
pub fn words(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in args.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                started = true;
            }
            None if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut current));
                    started = false;
                }
            }
            None => {
                current.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(current);
    }
    words
}

fn substitute(template: &str, args: &str) -> String {
    let words = words(args);
    let mut out = String::with_capacity(template.len() + args.len());
    let mut used = false;
    let mut rest = template;
    while let Some(at) = rest.find(['$', '{']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("$ARGUMENTS") {
            out.push_str(args);
            used = true;
            rest = after;
        } else if let Some(after) = tail.strip_prefix("{{args}}") {
            out.push_str(args);
            used = true;
            rest = after;
        } else if let Some(digit) = tail
            .strip_prefix('$')
            .and_then(|t| t.chars().next())
            .filter(|d| ('1'..='9').contains(d))
        {
            let index = (digit as usize) - ('1' as usize);
            out.push_str(words.get(index).map(String::as_str).unwrap_or(""));
            used = true;
            rest = &tail[2..];
        } else {
            out.push_str(&tail[..1]);
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    if !used && !args.is_empty() {
        out.push_str("\n\nARGUMENTS: ");
        out.push_str(args);
    }
    out
}

/// Characters that end a sentence rather than a path after `@path`.
const TRAILING: [char; 8] = ['.', ',', ';', ':', '!', '?', ')', '"'];

fn pieces(text: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut plain = String::new();
    let mut rest = text;
    let mut previous: Option<char> = None;
    while let Some(c) = rest.chars().next() {
        let at_word_start = previous.is_none_or(char::is_whitespace);
        if c == '!'
            && let Some((command, after)) = shell_command(&rest[1..])
        {
            flush(&mut pieces, &mut plain);
            pieces.push(Piece::Shell(command.to_string()));
            rest = after;
            previous = Some('`');
            continue;
        }
        if c == '@' && at_word_start {
            let word_end = rest[1..]
                .find(char::is_whitespace)
                .map_or(rest.len(), |i| i + 1);
            let path = rest[1..word_end].trim_end_matches(TRAILING);
            if !path.is_empty() {
                flush(&mut pieces, &mut plain);
                pieces.push(Piece::File(path.to_string()));
                rest = &rest[1 + path.len()..];
                previous = path.chars().last();
                continue;
            }
        }
        plain.push(c);
        previous = Some(c);
        rest = &rest[c.len_utf8()..];
    }
    flush(&mut pieces, &mut plain);
    pieces
}

/// The command of `` `…` `` or `{…}` (braces nest) at the start of `text`,
/// and what follows it.
fn shell_command(text: &str) -> Option<(&str, &str)> {
    if let Some(inner) = text.strip_prefix('`') {
        let end = inner.find('`')?;
        let command = &inner[..end];
        return (!command.trim().is_empty() && !command.contains('\n'))
            .then(|| (command, &inner[end + 1..]));
    }
    let inner = text.strip_prefix('{')?;
    let mut depth = 1usize;
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    let command = &inner[..i];
                    return (!command.trim().is_empty()).then(|| (command, &inner[i + 1..]));
                }
            }
            _ => {}
        }
    }
    None
}

fn flush(pieces: &mut Vec<Piece>, plain: &mut String) {
    if !plain.is_empty() {
        pieces.push(Piece::Text(std::mem::take(plain)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(template: &str, args: &str) -> String {
        join(&expand(template, args), |piece| format!("<{piece:?}>"))
    }

    #[test]
    fn arguments_and_positions_are_substituted() {
        assert_eq!(
            text("Fix issue #$1 with priority $2: $ARGUMENTS", "123 high"),
            "Fix issue #123 with priority high: 123 high"
        );
        assert_eq!(text("Review {{args}} now", "a b"), "Review a b now");
        assert_eq!(
            text("$1|$2|$3", r#""two words" 'and more' x"#),
            "two words|and more|x"
        );
        assert_eq!(text("missing: [$4]", "a"), "missing: []");
        assert_eq!(text("costs $5.00, $HOME, {x}", ""), "costs .00, $HOME, {x}");
    }

    #[test]
    fn unused_arguments_are_appended() {
        assert_eq!(
            text("Explain.", "the loop"),
            "Explain.\n\nARGUMENTS: the loop"
        );
        assert_eq!(text("Explain.", "  "), "Explain.");
    }

    #[test]
    fn files_and_commands_are_cut_out() {
        let pieces = expand(
            "See @src/main.rs, and !`git status --short` then !{ls {a,b}} (mail me@example.com)",
            "",
        );
        assert_eq!(
            pieces,
            [
                Piece::Text("See ".into()),
                Piece::File("src/main.rs".into()),
                Piece::Text(", and ".into()),
                Piece::Shell("git status --short".into()),
                Piece::Text(" then ".into()),
                Piece::Shell("ls {a,b}".into()),
                Piece::Text(" (mail me@example.com)".into()),
            ]
        );
        // Not commands: a lone `!`, an unclosed backtick, an empty one.
        assert_eq!(
            expand("Hi! !`unclosed", ""),
            [Piece::Text("Hi! !`unclosed".into())]
        );
        assert_eq!(expand("a !`` b", ""), [Piece::Text("a !`` b".into())]);
        // Arguments reach commands and files.
        assert_eq!(
            expand("!`git log $1` @$2", "main notes.md"),
            [
                Piece::Shell("git log main".into()),
                Piece::Text(" ".into()),
                Piece::File("notes.md".into()),
            ]
        );
    }
}
