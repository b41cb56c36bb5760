//! The wrappers a shell segment is looked through: programs that run the
//! command in their operands (`sudo rm x` runs `rm x`), and leading
//! `VAR=value` assignments.
//!
//! Invariant: stripping only removes leading words, so what is left is a
//! suffix of the segment's words (the suggestion of "always" rules relies on
//! it). Trade-off: the option tables list the options that take a value;
//! an unknown option is taken as a flag, which at worst makes a rule match
//! the option's value as the command (for deny rules, a refusal too many).

/// A program that runs the command in its operands.
struct Wrapper {
    name: &'static str,
    /// Options whose value is the next word.
    valued: &'static [&'static str],
    /// Operands before the command (`timeout DURATION`).
    operands: usize,
}

const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        name: "env",
        valued: &["-u", "--unset", "-C", "--chdir"],
        operands: 0,
    },
    Wrapper {
        name: "timeout",
        valued: &["-s", "--signal", "-k", "--kill-after"],
        operands: 1,
    },
    Wrapper {
        name: "nice",
        valued: &["-n", "--adjustment"],
        operands: 0,
    },
    Wrapper {
        name: "doas",
        valued: &["-u", "-C"],
        operands: 0,
    },
    Wrapper {
        name: "setsid",
        valued: &[],
        operands: 0,
    },
    Wrapper {
        name: "ionice",
        valued: &["-c", "--class", "-n", "--classdata", "-p", "--pid"],
        operands: 0,
    },
    Wrapper {
        name: "nohup",
        valued: &[],
        operands: 0,
    },
    Wrapper {
        name: "sudo",
        valued: &[
            "-u",
            "--user",
            "-g",
            "--group",
            "-C",
            "-D",
            "--chdir",
            "-h",
            "--host",
            "-p",
            "--prompt",
            "-r",
            "--role",
            "-t",
            "--type",
            "-U",
            "--other-user",
            "-T",
        ],
        operands: 0,
    },
    Wrapper {
        name: "time",
        valued: &["-f", "--format", "-o", "--output"],
        operands: 0,
    },
    Wrapper {
        name: "command",
        valued: &[],
        operands: 0,
    },
    Wrapper {
        name: "builtin",
        valued: &[],
        operands: 0,
    },
    Wrapper {
        name: "exec",
        valued: &["-a"],
        operands: 0,
    },
    Wrapper {
        name: "stdbuf",
        valued: &["-i", "-o", "-e"],
        operands: 0,
    },
    Wrapper {
        name: "xargs",
        valued: &[
            "-I",
            "-n",
            "--max-args",
            "-P",
            "--max-procs",
            "-L",
            "--max-lines",
            "-s",
            "--max-chars",
            "-d",
            "--delimiter",
            "-E",
            "-a",
            "--arg-file",
        ],
        operands: 0,
    },
];

pub(super) fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Which wrappers [`strip_wrappers`] removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Strip {
    /// Every wrapper and assignment (what the command really runs).
    All,
    /// Only those that change neither the program, its environment nor
    /// its privileges.
    Harmless,
}

const HARMLESS_WRAPPERS: [&str; 6] = ["timeout", "nice", "nohup", "time", "stdbuf", "command"];

pub(super) fn strip_wrappers(mut words: &[String], strip: Strip) -> Result<&[String], String> {
    loop {
        while strip == Strip::All
            && let Some(first) = words.first()
            && is_assignment(first)
        {
            words = &words[1..];
        }
        let Some(first) = words.first() else {
            return Ok(words);
        };
        let Some(wrapper) = WRAPPERS.iter().find(|w| {
            w.name == first && (strip == Strip::All || HARMLESS_WRAPPERS.contains(&w.name))
        }) else {
            return Ok(words);
        };
        if wrapper.name == "env"
            && words
                .iter()
                .any(|w| w == "-S" || w.starts_with("--split-string"))
        {
            return Err("`env -S` is not checked".into());
        }
        let mut i = 1;
        while let Some(word) = words.get(i) {
            if word == "--" {
                i += 1;
                break;
            }
            if word.len() > 1 && word.starts_with('-') {
                i += if wrapper.valued.contains(&word.as_str()) {
                    2
                } else {
                    1
                };
            } else if wrapper.name == "env" && is_assignment(word) {
                i += 1;
            } else {
                break;
            }
        }
        i += wrapper.operands;
        words = words.get(i..).unwrap_or_default();
    }
}
