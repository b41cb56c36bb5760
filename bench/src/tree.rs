//! The generated source tree the grep and batch benchmarks search: 100,000
//! small Rust-like files in nested directories, plus ignore files, a hidden
//! directory and some binary files, generated once and cached.
//!
//! Layout (`TOP` × `SUB` × `FILES` files): `dNN/sMM/fKKK.rs`. What a search
//! must skip, each holding matches so that a wrong ignore rule changes the
//! counts: `/d19/` and `*.gen.rs` (every tenth file) in the root `.gitignore`,
//! `s1*/` in `d03/.gitignore`, the hidden `d00/.hidden/`, and files that start
//! with a NUL byte (binary). One file in [`MATCH_EVERY`] has one line matching
//! [`PATTERN`]; the manifest records how many of those a search should report.
//!
//! Invariants: generation is deterministic (see `rng`); the tree is built in a
//! `.tmp` directory and renamed into place, and the manifest (which marks the
//! cache as complete) is written last, so an interrupted generation is never
//! reused. A cache is reused only under the same [`TREE_VERSION`]; change the
//! version whenever the generator changes.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use serde_json::{Value, json};

use crate::rng::Rng;

/// The cache key; bump it when the layout or the content changes.
pub const TREE_VERSION: &str = "grep-tree-v1";
/// What the benchmarks search for (a literal prefix, like most real searches).
pub const PATTERN: &str = r"needle_[0-9]+\(";
const TOP: usize = 20;
const SUB: usize = 25;
const FILES: usize = 200;
const HIDDEN_FILES: usize = 200;
const MATCH_EVERY: usize = 250;
const BINARY_EVERY: usize = 97;

/// A generated tree and what a correct search of it reports.
#[derive(Debug, Clone)]
pub struct Tree {
    pub root: PathBuf,
    /// Files in the tree (ignored, hidden and binary ones included).
    pub files: usize,
    /// Files a search that honours the ignore rules reports for [`PATTERN`].
    pub matching_files: usize,
    /// How long generating it took (when it was generated).
    pub generation: Duration,
    /// Whether this run generated it (false: reused from the cache).
    pub generated_now: bool,
}

/// The cached tree under `cache_dir`, generated first if missing.
pub fn cached(cache_dir: &Path) -> anyhow::Result<Tree> {
    let root = cache_dir.join(TREE_VERSION);
    let manifest_path = cache_dir.join(format!("{TREE_VERSION}.json"));
    if root.is_dir()
        && let Ok(text) = std::fs::read_to_string(&manifest_path)
        && let Ok(manifest) = serde_json::from_str::<Value>(&text)
        && manifest["version"] == TREE_VERSION
    {
        let number = |key: &str| manifest[key].as_u64().map(|n| n as usize);
        if let (Some(files), Some(matching_files), Some(seconds)) = (
            number("files"),
            number("matching_files"),
            manifest["generation_seconds"].as_f64(),
        ) {
            return Ok(Tree {
                root,
                files,
                matching_files,
                generation: Duration::from_secs_f64(seconds),
                generated_now: false,
            });
        }
    }

    // Not there, or incomplete: start over.
    let _ = std::fs::remove_file(&manifest_path);
    let tmp = cache_dir.join(format!("{TREE_VERSION}.tmp"));
    for dir in [&root, &tmp] {
        if dir.exists() {
            std::fs::remove_dir_all(dir)
                .with_context(|| format!("cannot remove {}", dir.display()))?;
        }
    }
    std::fs::create_dir_all(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let start = Instant::now();
    let (files, matching_files) = generate(&tmp)?;
    let generation = start.elapsed();
    std::fs::rename(&tmp, &root)
        .with_context(|| format!("cannot rename {} to {}", tmp.display(), root.display()))?;
    let manifest = json!({
        "version": TREE_VERSION,
        "files": files,
        "matching_files": matching_files,
        "generation_seconds": generation.as_secs_f64(),
    });
    std::fs::write(&manifest_path, manifest.to_string())
        .with_context(|| format!("cannot write {}", manifest_path.display()))?;
    Ok(Tree {
        root,
        files,
        matching_files,
        generation,
        generated_now: true,
    })
}

/// Writes the tree under `root`; returns (files, files a search reports).
fn generate(root: &Path) -> anyhow::Result<(usize, usize)> {
    write(root, ".gitignore", b"/d19/\n*.gen.rs\n")?;
    write(root, "d03/.gitignore", b"s1*/\n")?;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let results: Vec<anyhow::Result<(usize, usize)>> = std::thread::scope(|scope| {
        #[expect(
            clippy::needless_collect,
            reason = "every thread starts before the first join"
        )]
        let handles: Vec<_> = (0..threads)
            .map(|t| scope.spawn(move || generate_tops(root, t, threads)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a generator thread panicked")))
            })
            .collect()
    });
    let mut totals = (0, 0);
    for result in results {
        let (files, matching) = result?;
        totals.0 += files;
        totals.1 += matching;
    }
    for k in 0..HIDDEN_FILES {
        let idx = usize::MAX - k;
        write(
            root,
            &format!("d00/.hidden/h{k:03}.rs"),
            &content(idx, true),
        )?;
        totals.0 += 1;
    }
    ensure!(totals.1 > 0, "the generated tree has no matching files");
    Ok(totals)
}

/// The top directories `t`, `t + step`, …
fn generate_tops(root: &Path, first: usize, step: usize) -> anyhow::Result<(usize, usize)> {
    let (mut files, mut matching) = (0, 0);
    for d in (first..TOP).step_by(step) {
        for s in 0..SUB {
            std::fs::create_dir_all(root.join(format!("d{d:02}/s{s:02}")))
                .context("cannot create a tree directory")?;
            for f in 0..FILES {
                let idx = (d * SUB + s) * FILES + f;
                let matches = idx % MATCH_EVERY == 17;
                let binary = f % BINARY_EVERY == 0;
                let gen_rs = f % 10 == 9;
                let name = if gen_rs {
                    format!("d{d:02}/s{s:02}/f{f:03}.gen.rs")
                } else {
                    format!("d{d:02}/s{s:02}/f{f:03}.rs")
                };
                let mut bytes = content(idx, matches);
                if binary {
                    bytes.insert(0, 0);
                }
                write(root, &name, &bytes)?;
                files += 1;
                let ignored = d == 19 || gen_rs || (d == 3 && (10..20).contains(&s));
                if matches && !ignored && !binary {
                    matching += 1;
                }
            }
        }
    }
    Ok((files, matching))
}

fn write(root: &Path, relative: &str, bytes: &[u8]) -> anyhow::Result<()> {
    let path = root.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

const LINES: &[&str] = &[
    "use std::collections::HashMap;",
    "use crate::error::Error;",
    "",
    "/// Finds the needle in a haystack of records (not a match: no call).",
    "pub fn handle_request(input: &str) -> Result<Response, Error> {",
    "    let parsed = parse(input)?;",
    "    if parsed.is_empty() {",
    "        return Err(Error::Empty);",
    "    }",
    "    let mut seen = HashMap::new();",
    "    for (key, value) in parsed.iter() {",
    "        seen.insert(key.clone(), value.len());",
    "    }",
    "    Ok(Response::new(seen))",
    "}",
    "#[derive(Debug, Clone, PartialEq)]",
    "struct Record { id: u64, name: String, needles: Vec<u32> }",
    "// TODO: the needle_count field is not a call either",
    "impl Record {",
    "    fn weight(&self) -> usize { self.needles.len() * 3 }",
];

/// A file of 15–45 lines; when `matches`, one of them matches [`PATTERN`].
fn content(idx: usize, matches: bool) -> Vec<u8> {
    let mut rng = Rng::new(idx as u64 ^ 0xC0DE);
    let lines = rng.range(15, 45);
    let hit = rng.range(0, lines);
    let mut text = String::with_capacity(lines * 40);
    for i in 0..lines {
        if matches && i == hit {
            text.push_str(&format!(
                "    let found = needle_{}(input);\n",
                idx % 100_000
            ));
        } else {
            let line: &&str = rng.pick(LINES);
            text.push_str(line);
            text.push('\n');
        }
    }
    text.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_matches_only_when_asked() {
        let regex_like = |text: &str| {
            text.lines()
                .filter(|l| {
                    l.find("needle_").is_some_and(|at| {
                        let rest = &l[at + 7..];
                        let digits = rest.chars().take_while(char::is_ascii_digit).count();
                        digits > 0 && rest[digits..].starts_with('(')
                    })
                })
                .count()
        };
        for idx in 0..50 {
            let plain = String::from_utf8(content(idx, false)).expect("utf-8");
            assert_eq!(regex_like(&plain), 0, "{plain}");
            let hit = String::from_utf8(content(idx, true)).expect("utf-8");
            assert_eq!(regex_like(&hit), 1, "{hit}");
        }
        assert_eq!(content(7, false), content(7, false));
    }
}
