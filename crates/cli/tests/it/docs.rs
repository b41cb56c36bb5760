//! The manual and the program agree: every flag of every `gyre` command and
//! every config key is named in `README.md` or `docs/`, and every flag or
//! config key the docs name exists (each ```toml block of the docs is parsed
//! as a config file, so a documented key that gyre does not know fails).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md and every page of docs/.
fn manual() -> String {
    let mut text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut pages: Vec<_> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    assert!(pages.len() >= 10, "docs/ holds the manual");
    for page in pages {
        text.push('\n');
        text.push_str(&std::fs::read_to_string(page).unwrap());
    }
    text
}

/// `--long-flag` words in a text.
fn flags_in(text: &str) -> BTreeSet<String> {
    let bytes = text.as_bytes();
    let mut found = BTreeSet::new();
    let mut i = 0;
    while let Some(at) = text[i..].find("--") {
        let start = i + at;
        let before = start.checked_sub(1).map(|b| bytes[b]);
        let mut end = start + 2;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'-') {
            end += 1;
        }
        let word = &text[start..end];
        let ok_before = before.is_none_or(|b| !(b.is_ascii_alphanumeric() || b == b'-'));
        if ok_before && word.len() > 3 && bytes[start + 2].is_ascii_lowercase() {
            found.insert(word.trim_end_matches('-').to_string());
        }
        i = end.max(start + 2);
    }
    found
}

async fn help(path: &[&str]) -> String {
    let env = Env::new();
    let mut args: Vec<&str> = path.to_vec();
    args.push("--help");
    let out = output(env.gyre(&args)).await;
    assert_eq!(out.status.code(), Some(0), "gyre {path:?} --help");
    stdout(&out)
}

/// The subcommands a help text lists (none for `help` itself).
fn subcommands(help: &str) -> Vec<String> {
    let Some(list) = help.split("Commands:\n").nth(1) else {
        return Vec::new();
    };
    list.lines()
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// Every flag of `gyre` and of each of its commands, as `gyre --help`
/// and the commands' `--help` list them (hidden ones excepted).
async fn program_flags() -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    let mut todo: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(path) = todo.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help(&args).await;
        let options = text.split("Options:\n").nth(1).unwrap_or("");
        for line in options.lines() {
            let line = line.trim_start();
            if line.starts_with('-') {
                flags.extend(flags_in(line.split("  ").next().unwrap_or(line)));
            }
        }
        for sub in subcommands(&text) {
            let mut next = path.clone();
            next.push(sub);
            todo.push(next);
        }
    }
    flags
}

/// Flags the manual names that belong to other programs (cargo, npm, curl,
/// git, the shell) in its examples.
const OTHER_PROGRAMS: &[&str] = &[
    "--release",
    "--path",
    "--workspace",
    "--all-targets",
    "--all",
    "--check",
    "--prefix",
    "--no-audit",
    "--no-fund",
    "--locked",
    "--no-deps",
    "--target",
    "--short",
    "--oneline",
    "--data",
    "--header",
    "--silent",
    "--no-buffer",
    "--stdio",
    "--json",
    // the sandbox helper's own probe (an internal command, not a flag of gyre)
    "--probe",
];

#[tokio::test]
async fn every_flag_is_documented_and_every_documented_flag_exists() {
    let program = program_flags().await;
    assert!(program.contains("--permission-mode"), "{program:?}");
    let manual = manual();
    let documented = flags_in(&manual);
    let undocumented: Vec<_> = program.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "flags no page of README.md or docs/ names: {undocumented:?}"
    );
    let mut unknown = Vec::new();
    for flag in documented
        .iter()
        .filter(|f| !program.contains(*f) && !OTHER_PROGRAMS.contains(&f.as_str()))
    {
        // Not in any help text: a hidden spelling (Claude Code's
        // `--allowedTools`) exists if the parser accepts it.
        let out = output(Env::new().gyre(&["run", flag])).await;
        if stderr(&out).contains("unexpected argument") {
            unknown.push(flag.clone());
        }
    }
    assert!(
        unknown.is_empty(),
        "the manual names flags gyre does not have: {unknown:?}"
    );
}

/// The keys a config section accepts, from the parser's own answer to an
/// unknown key (serde lists what it expected).
fn keys_of(section: &str) -> Vec<String> {
    let text = format!("{section}\nzz_not_a_key = 1\n");
    let err = gyre_host::config::Config::parse(&text, Path::new("probe.toml"))
        .expect_err("an unknown key is an error")
        .to_string();
    // serde says "expected one of `a`, `b`" or, for one key, "expected `a`".
    let list = err
        .split("expected one of ")
        .nth(1)
        .or_else(|| err.split("expected ").nth(1))
        .unwrap_or_else(|| panic!("{section}: {err}"));
    list.split(", ")
        .map(|k| k.trim_matches(|c: char| c == '`' || c == ';' || c.is_whitespace()))
        .map(|k| k.split('`').next().unwrap_or(k).to_string())
        .filter(|k| !k.is_empty())
        .collect()
}

#[test]
fn every_config_key_is_documented_and_every_documented_key_exists() {
    let manual = manual();
    let mut missing = Vec::new();
    for section in [
        "",
        "[context]",
        "[retry]",
        "[timeouts]",
        "[tools]",
        "[redact]",
        "[subagents]",
        "[loop_guard]",
        "[sandbox]",
        "[models.m]",
        "[mcp_servers.s]",
        "[lsp.s]",
        "[diagnostics]",
    ] {
        let keys = keys_of(section);
        assert!(!keys.is_empty(), "{section}");
        for key in keys {
            if !manual.contains(&format!("`{key}`"))
                && !manual.contains(&format!("{key} ="))
                && !manual.contains(&format!("[{key}"))
            {
                missing.push(format!("{section} {key}"));
            }
        }
    }
    assert!(missing.is_empty(), "config keys no page names: {missing:?}");

    // Each ```toml block of the manual is a config file gyre accepts.
    let mut blocks = 0;
    for block in manual.split("```toml\n").skip(1) {
        let body = block.split("\n```").next().unwrap();
        blocks += 1;
        if let Err(err) = gyre_host::config::Config::parse(body, Path::new("docs.toml")) {
            panic!("a documented config block does not parse: {err}\n{body}");
        }
    }
    assert!(blocks >= 1);
}
