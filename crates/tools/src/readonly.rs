//! Which `bash` commands only read, so that the loop may run them
//! concurrently with other read-only calls.
//!
//! Invariants:
//! - The classifier is conservative: `true` means every part of the command
//!   is an allow-listed program with arguments that cannot write, delete or
//!   run other programs; anything it does not understand is `false`. A false
//!   `false` costs only concurrency; a false `true` could reorder a write.
//! - One lexer decides both where commands split (`;`, `&&`, `||`, `|`,
//!   newlines) and what the words are, so quoting can never make the two
//!   disagree. It knows bash's quoting (`'…'`, `"…"`, backslashes, comments)
//!   and refuses every construct that runs code or writes: command and
//!   process substitution, parameter expansion, backgrounding, subshells,
//!   groups, brace expansion, here-documents, input redirection, and output
//!   redirection other than to `/dev/null` or between stdout and stderr.
//! - Words holding an unquoted glob (`*`, `?`, `[`) expand to file names,
//!   which anyone can choose (a file named `-delete`), so programs with
//!   dangerous options (`find`, `git`, `sort`, …) refuse them.
//!
//! Trade-offs: `$VAR` is refused even where it would be harmless, and only a
//! fixed set of programs is known; both keep the rules short enough to audit.
//! Long options are refused when they could be an abbreviation of a
//! dangerous one (`sort --out=x` means `--output=x` to getopt). The
//! repository's own git configuration is trusted: `git diff` may run a diff
//! or textconv driver it names, and `git status` may refresh the index's
//! stat cache; neither changes what the model works on.

/// Programs that read their inputs and write only to stdout, whatever their
/// arguments.
const ANY_ARGUMENTS: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "pwd", "echo", "printf", "which", "stat", "du", "df", "cut",
    "tr", "diff", "grep", "egrep", "fgrep", "basename", "dirname", "realpath", "readlink", "nl",
    "true", "false",
];

/// `find` primaries that run programs, delete, or write files.
const FIND_FORBIDDEN: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// `git` subcommands that only read (for `branch`, see [`git_branch_lists`]).
const GIT_READERS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "blame",
];

/// Whether `command` (a `bash -c` command line) only reads; see the module
/// documentation for what "only reads" covers.
pub fn is_read_only_command(command: &str) -> bool {
    match lex(command) {
        Some(commands) => !commands.is_empty() && commands.iter().all(|c| is_reader(c)),
        None => false,
    }
}

/// A word of a command after quote removal.
#[derive(Debug, PartialEq)]
struct Word {
    text: String,
    /// Holds an unquoted `*`, `?` or `[`: the shell may replace it with file
    /// names.
    glob: bool,
}

/// The word being read.
#[derive(Default)]
struct Pending {
    text: String,
    started: bool,
    quoted: bool,
    glob: bool,
}

/// Splits `command` into simple commands (lists of words), or `None` when it
/// holds anything the classifier refuses or cannot parse.
fn lex(command: &str) -> Option<Vec<Vec<Word>>> {
    let chars: Vec<char> = command.chars().collect();
    let mut commands: Vec<Vec<Word>> = Vec::new();
    let mut words: Vec<Word> = Vec::new();
    let mut word = Pending::default();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        i += 1;
        match c {
            ' ' | '\t' => finish_word(&mut word, &mut words),
            '\n' | ';' => finish_command(&mut word, &mut words, &mut commands),
            '&' if next == Some('&') => {
                i += 1;
                finish_command(&mut word, &mut words, &mut commands);
            }
            '|' => {
                // `||`, `|` and `|&` all just start another command.
                if matches!(next, Some('|' | '&')) {
                    i += 1;
                }
                finish_command(&mut word, &mut words, &mut commands);
            }
            '>' => {
                let fd = if word.started
                    && !word.quoted
                    && !word.text.is_empty()
                    && word.text.chars().all(|c| c.is_ascii_digit())
                {
                    let fd = std::mem::take(&mut word).text;
                    fd.parse::<u32>().ok()?
                } else {
                    finish_word(&mut word, &mut words);
                    1
                };
                i = harmless_redirection(&chars, i, fd)?;
            }
            // Backgrounding, `&>`, input redirection and here-documents,
            // subshells, groups and brace expansion, command substitution.
            '&' | '<' | '(' | ')' | '{' | '}' | '`' => return None,
            '$' => {
                if !matches!(next, None | Some(' ' | '\t' | '\n')) {
                    return None;
                }
                push(&mut word, '$');
            }
            '#' if !word.started => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '\\' => match next {
                None => return None,
                Some('\n') => i += 1,
                Some(escaped) => {
                    i += 1;
                    push(&mut word, escaped);
                    word.quoted = true;
                }
            },
            '\'' => {
                let end = chars[i..].iter().position(|&c| c == '\'')?;
                word.text.extend(&chars[i..i + end]);
                word.started = true;
                word.quoted = true;
                i += end + 1;
            }
            '"' => i = double_quoted(&chars, i, &mut word)?,
            '*' | '?' | '[' => {
                push(&mut word, c);
                word.glob = true;
            }
            other => push(&mut word, other),
        }
    }
    finish_command(&mut word, &mut words, &mut commands);
    Some(commands)
}

fn push(word: &mut Pending, c: char) {
    word.text.push(c);
    word.started = true;
}

fn finish_word(word: &mut Pending, words: &mut Vec<Word>) {
    let done = std::mem::take(word);
    if done.started {
        words.push(Word {
            text: done.text,
            glob: done.glob,
        });
    }
}

fn finish_command(word: &mut Pending, words: &mut Vec<Word>, commands: &mut Vec<Vec<Word>>) {
    finish_word(word, words);
    if !words.is_empty() {
        commands.push(std::mem::take(words));
    }
}

/// Reads the inside of a double-quoted string starting at `i` (just after
/// the opening quote) into `word`; returns the index after the closing quote.
fn double_quoted(chars: &[char], mut i: usize, word: &mut Pending) -> Option<usize> {
    word.started = true;
    word.quoted = true;
    loop {
        let c = *chars.get(i)?;
        let next = chars.get(i + 1).copied();
        i += 1;
        match c {
            '"' => return Some(i),
            '\\' => match next {
                Some('\n') => i += 1,
                Some(escaped @ ('$' | '`' | '"' | '\\')) => {
                    word.text.push(escaped);
                    i += 1;
                }
                _ => word.text.push('\\'),
            },
            '`' => return None,
            '$' if !matches!(next, Some('"' | ' ' | '\t' | '\n')) => return None,
            other => word.text.push(other),
        }
    }
}

/// Checks the redirection whose operator starts just before `i` (after its
/// first `>`), for file descriptor `fd`; returns the index after it when it
/// only discards output or joins stdout and stderr.
fn harmless_redirection(chars: &[char], mut i: usize, fd: u32) -> Option<usize> {
    let duplicate = match chars.get(i) {
        Some('&') => {
            i += 1;
            true
        }
        Some('>' | '|') => {
            i += 1;
            false
        }
        _ => false,
    };
    while matches!(chars.get(i), Some(' ' | '\t')) {
        i += 1;
    }
    let start = i;
    while let Some(&c) = chars.get(i) {
        if !(c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-')) {
            break;
        }
        i += 1;
    }
    // The target must end at a plain boundary, not run on into quotes or `$`.
    if !matches!(
        chars.get(i),
        None | Some(' ' | '\t' | '\n' | ';' | '|' | '&')
    ) {
        return None;
    }
    let target: String = chars[start..i].iter().collect();
    let allowed = matches!(fd, 1 | 2)
        && if duplicate {
            matches!(target.as_str(), "1" | "2")
        } else {
            target == "/dev/null"
        };
    allowed.then_some(i)
}

/// Whether one simple command only reads.
fn is_reader(words: &[Word]) -> bool {
    let Some((program, args)) = words.split_first() else {
        return true;
    };
    if program.glob {
        return false;
    }
    let program = program.text.as_str();
    if ANY_ARGUMENTS.contains(&program) {
        return true;
    }
    // The rest have options that write or run programs; a glob could expand
    // to such an option.
    if args.iter().any(|w| w.glob) {
        return false;
    }
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    match program {
        "find" => !texts.iter().any(|a| FIND_FORBIDDEN.contains(a)),
        "git" => git_reads(&texts),
        "rg" => !texts
            .iter()
            .any(|a| abbreviates(a, "--pre") || abbreviates(a, "--hostname-bin")),
        "sort" => !texts.iter().any(|a| {
            short_cluster_has(a, &['o'])
                || abbreviates(a, "--output")
                || abbreviates(a, "--compress-program")
        }),
        "uniq" => positionals(&texts) <= 1,
        "tree" => !texts
            .iter()
            .any(|a| short_cluster_has(a, &['o', 'R']) || abbreviates(a, "--output")),
        "file" => !texts
            .iter()
            .any(|a| short_cluster_has(a, &['C']) || abbreviates(a, "--compile")),
        _ => false,
    }
}

/// Whether `arg` is a long option that getopt would take for `option`: the
/// option itself or an abbreviation of it, with or without `=value`.
fn abbreviates(arg: &str, option: &str) -> bool {
    let name = arg.split('=').next().unwrap_or(arg);
    name.len() > 2 && name.starts_with("--") && option.starts_with(name)
}

/// Whether `arg` is a cluster of short options (`-uo`) holding one of `flags`.
fn short_cluster_has(arg: &str, flags: &[char]) -> bool {
    arg.len() > 1
        && arg.starts_with('-')
        && !arg.starts_with("--")
        && arg.chars().any(|c| flags.contains(&c))
}

/// How many operands (non-options) `args` holds.
fn positionals(args: &[&str]) -> usize {
    let mut count = 0;
    let mut options_done = false;
    for arg in args {
        if options_done || *arg == "-" || !arg.starts_with('-') {
            count += 1;
        } else if *arg == "--" {
            options_done = true;
        }
    }
    count
}

fn git_reads(args: &[&str]) -> bool {
    let mut rest = args;
    // Global options: only those that cannot set configuration (`-c` can
    // name a pager or an external diff program).
    let subcommand = loop {
        match rest {
            ["--no-pager", tail @ ..] => rest = tail,
            ["-C", _dir, tail @ ..] => rest = tail,
            [first, tail @ ..] if !first.starts_with('-') => {
                rest = tail;
                break *first;
            }
            _ => return false,
        }
    };
    if subcommand == "branch" {
        return git_branch_lists(rest);
    }
    GIT_READERS.contains(&subcommand)
        && !rest
            .iter()
            .any(|a| abbreviates(a, "--output") || abbreviates(a, "--ext-diff"))
}

/// Whether `git branch <args>` only lists branches.
fn git_branch_lists(args: &[&str]) -> bool {
    const LONG: &[&str] = &[
        "--list",
        "--all",
        "--remotes",
        "--verbose",
        "--show-current",
        "--color",
        "--no-color",
        "--column",
        "--no-column",
        "--ignore-case",
        "--omit-empty",
        "--no-abbrev",
    ];
    const LONG_WITH_VALUE: &[&str] = &[
        "--sort=",
        "--format=",
        "--merged",
        "--no-merged",
        "--contains",
        "--no-contains",
        "--points-at=",
        "--color=",
        "--column=",
        "--abbrev=",
    ];
    let listing = args.iter().any(|a| matches!(*a, "--list" | "-l"));
    args.iter().all(|arg| {
        if arg.starts_with("--") {
            LONG.contains(arg) || LONG_WITH_VALUE.iter().any(|p| arg.starts_with(p))
        } else if arg.starts_with('-') && arg.len() > 1 {
            arg[1..].chars().all(|c| "arvli".contains(c))
        } else {
            // A name: a pattern with `--list`, otherwise a branch to create.
            listing
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexer_splits_words_and_commands() {
        let commands = lex("a 'b c' d\"e f\"g; h *.rs '*'").unwrap();
        let texts: Vec<Vec<(&str, bool)>> = commands
            .iter()
            .map(|c| c.iter().map(|w| (w.text.as_str(), w.glob)).collect())
            .collect();
        assert_eq!(
            texts,
            vec![
                vec![("a", false), ("b c", false), ("de fg", false)],
                vec![("h", false), ("*.rs", true), ("*", false)],
            ]
        );
        assert_eq!(lex("'' x").unwrap()[0][0].text, "");
    }
}
