//! Where a workspace's Agent Skills come from ([`gyre_core::skills`] holds
//! the format and the `skill` tool).
//!
//! Directories, lowest precedence first (a later skill of a name replaces
//! an earlier one): the user's `~/.codex/skills`, `~/.agents/skills` (the
//! open standard's and Codex's), `~/.claude/skills`, gyre's own
//! `~/.config/gyre/skills`; then the project's `.codex/skills`,
//! `.agents/skills`, `.claude/skills` and `.gyre/skills`. So a collection
//! written for Claude Code or Codex works unchanged, and gyre's own folders
//! win over theirs.

use std::path::{Path, PathBuf};

use gyre_core::skills::{Loaded, SkillDir, load_dirs};

/// The directories skills are read from, in precedence order (lowest
/// first), each labelled for `gyre skills`.
pub fn skill_dirs(
    user_config: Option<&Path>,
    home: Option<&Path>,
    workspace: &Path,
) -> Vec<SkillDir> {
    let mut dirs = Vec::new();
    let mut push = |path: PathBuf, label: &str| {
        dirs.push(SkillDir {
            path,
            label: label.to_string(),
        })
    };
    if let Some(home) = home {
        push(home.join(".codex/skills"), "user ~/.codex/skills");
        push(home.join(".agents/skills"), "user ~/.agents/skills");
        push(home.join(".claude/skills"), "user ~/.claude/skills");
    }
    if let Some(dir) = user_config {
        push(dir.join("skills"), "user ~/.config/gyre/skills");
    }
    for (relative, label) in [
        (".codex/skills", "project .codex/skills"),
        (".agents/skills", "project .agents/skills"),
        (".claude/skills", "project .claude/skills"),
        (".gyre/skills", "project .gyre/skills"),
    ] {
        push(workspace.join(relative), label);
    }
    dirs
}

/// The skills of `workspace`, with the user's directories from the
/// environment (`$HOME`, the config directory).
pub fn load(workspace: &Path) -> Loaded {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let user = crate::config::user_config_dir();
    load_dirs(&skill_dirs(user.as_deref(), home.as_deref(), workspace))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_folders_win_over_the_users() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let skill = |root: &Path, dir: &str, description: &str| {
            let folder = root.join(dir).join("lint");
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(
                folder.join("SKILL.md"),
                format!("---\nname: lint\ndescription: {description}\n---\nbody"),
            )
            .unwrap();
        };
        skill(home.path(), ".claude/skills", "from the user's claude");
        let dirs = skill_dirs(None, Some(home.path()), project.path());
        let loaded = load_dirs(&dirs);
        assert_eq!(
            loaded.skills.get("lint").unwrap().source,
            "user ~/.claude/skills"
        );
        skill(
            project.path(),
            ".claude/skills",
            "from the project's claude",
        );
        skill(project.path(), ".gyre/skills", "from the project's gyre");
        let loaded = load_dirs(&dirs);
        let lint = loaded.skills.get("lint").unwrap();
        assert_eq!(lint.description, "from the project's gyre");
        assert_eq!(lint.source, "project .gyre/skills");
    }
}
