//! The workspace's files for `@path` completion: listed once, off the async
//! runtime, and matched fuzzily as the user types.
//!
//! Invariants:
//! - The walk respects `.gitignore` (and `.ignore`, global git excludes),
//!   skips hidden entries and stops at [`MAX_PATHS`] paths: a huge
//!   workspace costs a bounded time and memory, and completion covers its
//!   shallower part (the walk is breadth-first by sorting, see below).
//! - Paths are relative to the workspace, `/`-separated; directories end
//!   in `/`. The list is sorted by depth, then by name, so an empty query
//!   shows the top of the tree.
//! - Matching is a case-insensitive subsequence match, scored (no external
//!   matcher: the candidates' licences did not fit, and this is enough).

use std::path::Path;

/// Paths listed at most.
pub const MAX_PATHS: usize = 20_000;

/// Lists the workspace's files and directories (blocking: call it on a
/// blocking thread).
pub fn list(root: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .require_git(false)
        .follow_links(false)
        .max_depth(Some(12))
        .build();
    for entry in walker.flatten() {
        if paths.len() >= MAX_PATHS {
            break;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(rel) = rel.to_str().filter(|r| !r.is_empty()) else {
            continue;
        };
        let mut path = rel.replace('\\', "/");
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            path.push('/');
        }
        paths.push(path);
    }
    paths.sort_by(|a, b| {
        depth(a)
            .cmp(&depth(b))
            .then_with(|| a.to_lowercase().cmp(&b.to_lowercase()))
    });
    paths
}

fn depth(path: &str) -> usize {
    path.trim_end_matches('/').matches('/').count()
}

/// The best `limit` paths for `query`, best first.
pub fn matches<'a>(query: &str, paths: &'a [String], limit: usize) -> Vec<&'a str> {
    if query.is_empty() {
        return paths.iter().take(limit).map(String::as_str).collect();
    }
    let query: Vec<char> = query.to_lowercase().chars().collect();
    let mut scored: Vec<(i64, &str)> = paths
        .iter()
        .filter_map(|path| Some((score(&query, path)?, path.as_str())))
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.len().cmp(&b.1.len())));
    scored.truncate(limit);
    scored.into_iter().map(|(_, path)| path).collect()
}

/// How well `path` matches `query` (lowercase), or `None`: better matches
/// start words, run together and fall in the file's own name.
fn score(query: &[char], path: &str) -> Option<i64> {
    let chars: Vec<char> = path.to_lowercase().chars().collect();
    let name_start = chars[..chars.len().saturating_sub(1)]
        .iter()
        .rposition(|c| *c == '/')
        .map_or(0, |at| at + 1);
    // Try the file name alone first: a match there is worth more.
    let in_name = subsequence(query, &chars, name_start).map(|s| s + 30);
    let anywhere = subsequence(query, &chars, 0);
    let best = in_name.max(anywhere)?;
    Some(best - chars.len() as i64 / 4)
}

fn subsequence(query: &[char], chars: &[char], from: usize) -> Option<i64> {
    let mut score = 0i64;
    let mut at = from;
    let mut previous: Option<usize> = None;
    for &wanted in query {
        let found = at + chars.get(at..)?.iter().position(|&c| c == wanted)?;
        score += 1;
        if previous.is_some_and(|p| p + 1 == found) {
            score += 8;
        }
        let boundary = found == 0 || matches!(chars[found - 1], '/' | '_' | '-' | '.' | ' ');
        if boundary {
            score += 10;
        }
        if let Some(p) = previous {
            score -= (found - p - 1).min(5) as i64;
        }
        previous = Some(found);
        at = found + 1;
    }
    Some(score)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_and_word_starts_win() {
        let all = paths(&[
            "src/",
            "src/main.rs",
            "src/app/mod.rs",
            "docs/maintenance.md",
            "crates/tui/src/app/main_loop.rs",
        ]);
        assert_eq!(
            matches("main", &all, 2),
            ["src/main.rs", "docs/maintenance.md"]
        );
        assert_eq!(matches("appmod", &all, 1), ["src/app/mod.rs"]);
        assert!(matches("zzz", &all, 5).is_empty());
        assert_eq!(matches("", &all, 2), ["src/", "src/main.rs"]);
    }

    #[test]
    fn the_listing_respects_gitignore_and_sorts_by_depth() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        for file in [
            "README.md",
            "src/lib.rs",
            "src/deep/x.rs",
            "target/out.bin",
            ".env",
        ] {
            std::fs::write(root.join(file), "x").unwrap();
        }
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        let listed = list(root);
        assert_eq!(
            listed,
            [
                "README.md",
                "src/",
                "src/deep/",
                "src/lib.rs",
                "src/deep/x.rs"
            ]
        );
    }
}
