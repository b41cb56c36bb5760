//! Rule files: what the user and the project tell every agent, read into
//! the system prompt (seed 001's layered prompt).
//!
//! Order, most general first: the user's own `AGENTS.md` (in gyre's config
//! directory), then each directory from the repository root down to the
//! working directory, taking in each the first of `AGENTS.md`, `CLAUDE.md`,
//! `GEMINI.md`, `.cursorrules` that exists (projects written for other
//! agents work as they are).
//!
//! Invariants:
//! - The rules are read once, when the prompt is built; nothing in them
//!   changes from turn to turn, so the prompt stays a stable cache prefix.
//! - At most `budget` bytes of rules enter the prompt; what is cut is said
//!   in the prompt and returned as a warning, never dropped silently.
//! - The repository root is the nearest ancestor holding `.git`; without
//!   one, only the working directory is read.

use std::path::{Path, PathBuf};

/// The names looked for in each directory, in order of preference.
pub const RULE_FILE_NAMES: [&str; 4] = ["AGENTS.md", "CLAUDE.md", "GEMINI.md", ".cursorrules"];

/// The most bytes of rules a prompt carries by default.
pub const DEFAULT_RULES_BUDGET: usize = 32 * 1024;

/// One rule file read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleFile {
    pub path: PathBuf,
    pub text: String,
}

/// The rule files for a run in `cwd`, in prompt order.
pub fn find_rule_files(cwd: &Path, user_config_dir: Option<&Path>) -> Vec<RuleFile> {
    let mut files = Vec::new();
    if let Some(dir) = user_config_dir {
        files.extend(read(&dir.join("AGENTS.md")));
    }
    let root = cwd
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(cwd);
    let mut dirs: Vec<&Path> = cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(root))
        .collect();
    dirs.reverse();
    for dir in dirs {
        if let Some(file) = RULE_FILE_NAMES
            .iter()
            .find_map(|name| read(&dir.join(name)))
        {
            files.push(file);
        }
    }
    files
}

fn read(path: &Path) -> Option<RuleFile> {
    let text = std::fs::read_to_string(path).ok()?;
    (!text.trim().is_empty()).then(|| RuleFile {
        path: path.to_path_buf(),
        text,
    })
}

/// The rules section of the prompt, at most `budget` bytes of rules, and a
/// warning when some were cut.
pub fn rules_section(files: &[RuleFile], budget: usize) -> (String, Option<String>) {
    if files.is_empty() {
        return (String::new(), None);
    }
    let mut out =
        String::from("<rules>\nInstructions from the user and the project; follow them.\n");
    let mut left = budget;
    let mut cut = Vec::new();
    for file in files {
        let text = file.text.trim();
        out.push_str(&format!("\n# From {}\n", file.path.display()));
        if text.len() <= left {
            out.push_str(text);
            left -= text.len();
        } else {
            let mut end = left;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            out.push_str(&text[..end]);
            out.push_str(&format!(
                "\n[… {} more bytes of this file were left out: the rules are over their {budget}-byte budget]",
                text.len() - end
            ));
            cut.push(file.path.display().to_string());
            left = 0;
        }
        out.push('\n');
    }
    out.push_str("</rules>");
    let warning = (!cut.is_empty()).then(|| {
        format!(
            "the rule files are longer than {budget} bytes; the prompt leaves out part of: {}",
            cut.join(", ")
        )
    });
    (out, warning)
}

/// The checked-out branch of the repository holding `cwd`, read from
/// `.git/HEAD` (no git process); a short commit id when detached.
pub fn git_branch(cwd: &Path) -> Option<String> {
    let root = cwd.ancestors().find(|dir| dir.join(".git").exists())?;
    let dot_git = root.join(".git");
    // A worktree or submodule: `.git` is a file naming the real directory.
    let git_dir = if dot_git.is_file() {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.trim().strip_prefix("gitdir:")?.trim().to_string();
        root.join(target)
    } else {
        dot_git
    };
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    match head.strip_prefix("ref: refs/heads/") {
        Some(branch) => Some(branch.to_string()),
        None => head.get(..12).map(|id| format!("(detached at {id})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn rules_come_from_the_user_then_root_down_to_cwd() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        write(&home.path().join("AGENTS.md"), "user rule");
        write(&root.join("CLAUDE.md"), "root rule");
        write(&root.join("GEMINI.md"), "not read: CLAUDE.md comes first");
        write(&root.join("pkg/AGENTS.md"), "pkg rule");
        write(&root.join("pkg/sub/.cursorrules"), "sub rule");
        let cwd = root.join("pkg/sub");
        let files = find_rule_files(&cwd, Some(home.path()));
        let texts: Vec<&str> = files.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(texts, ["user rule", "root rule", "pkg rule", "sub rule"]);
        let (section, warning) = rules_section(&files, DEFAULT_RULES_BUDGET);
        assert!(warning.is_none());
        assert!(section.find("user rule").unwrap() < section.find("sub rule").unwrap());
    }

    #[test]
    fn rules_over_the_budget_are_cut_and_said() {
        let files = vec![
            RuleFile {
                path: "a.md".into(),
                text: "x".repeat(30),
            },
            RuleFile {
                path: "b.md".into(),
                text: "y".repeat(30),
            },
        ];
        let (section, warning) = rules_section(&files, 40);
        assert!(section.contains(&"x".repeat(30)));
        assert!(section.contains(&format!("{}\n[… 20 more bytes", "y".repeat(10))));
        assert!(warning.unwrap().contains("b.md"));
    }

    #[test]
    fn the_branch_is_read_from_head() {
        let repo = tempfile::tempdir().unwrap();
        write(
            &repo.path().join(".git/HEAD"),
            "ref: refs/heads/feature/x\n",
        );
        assert_eq!(
            git_branch(&repo.path().join("src")).as_deref(),
            Some("feature/x")
        );
        write(&repo.path().join(".git/HEAD"), "0123456789abcdef0123\n");
        assert_eq!(
            git_branch(repo.path()).as_deref(),
            Some("(detached at 0123456789ab)")
        );
        let plain = tempfile::tempdir().unwrap();
        assert_eq!(git_branch(plain.path()), None);
    }
}
