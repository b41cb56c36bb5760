//! Agent Skills: folders holding a `SKILL.md` (YAML front matter with
//! `name` and `description`, a Markdown body) and whatever scripts and
//! resources the body refers to, in the open Agent Skills format that
//! Claude Code, Codex and gemini-cli read.
//!
//! Progressive disclosure: only each skill's name and description reach the
//! model up front, in the description of the `skill` tool ([`SkillTool`]);
//! the model loads a body by calling that tool, and reads the skill's other
//! files with `read` or `bash` (the frontend lets tools read the skills'
//! folders).
//!
//! Invariants:
//! - A [`SkillSet`] is sorted by name and immutable, so the tool's
//!   description is byte-stable from request to request (prompt cache).
//! - The listing is bounded ([`MAX_LISTING_BYTES`], each description cut to
//!   [`MAX_DESCRIPTION_CHARS`]); skills past the bound are left out of the
//!   listing (still loadable by name) and the listing says how many.
//! - A `SKILL.md` is read bounded (the agent files' limit), at load for its
//!   front matter and again when the model loads its body.
//! - A folder whose `SKILL.md` does not parse is left out with a warning,
//!   never an error: one broken skill does not stop a run.
//! - A later directory's skill replaces an earlier one of the same name
//!   (user directories first, then the project's).

mod tool;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub use tool::SkillTool;

/// The name of the tool that loads skills.
pub const SKILL_TOOL: &str = "skill";
/// The most a description contributes to the listing, in characters (the
/// standard's own limit on a description).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// The most the listing of skills adds to the tool's description (Codex
/// caps its list at 8000 characters when the window is unknown).
pub const MAX_LISTING_BYTES: usize = 8000;

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The skill's folder (canonical when it could be resolved).
    pub dir: PathBuf,
    /// Where it was found, for `gyre skills`: the directory's label
    /// (`user`, `project`, `claude (user)`, …).
    pub source: String,
}

impl Skill {
    /// The `SKILL.md` of the skill.
    pub fn file(&self) -> PathBuf {
        self.dir.join("SKILL.md")
    }

    /// The body of `SKILL.md` (read when the model loads the skill, so an
    /// edit shows without a restart).
    pub fn body(&self) -> Result<String, String> {
        let text = crate::agents::file::read_bounded(&self.file())?;
        let (_, body) = crate::agents::file::split_front_matter(&text)
            .ok_or("its SKILL.md no longer starts with a front matter block")?;
        Ok(body.trim().to_string())
    }
}

/// The skills of a session, sorted by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillSet {
    skills: Vec<Skill>,
}

impl SkillSet {
    /// A set of `skills`; a later one replaces an earlier one of its name.
    pub fn new(skills: impl IntoIterator<Item = Skill>) -> Self {
        let by_name: BTreeMap<String, Skill> =
            skills.into_iter().map(|s| (s.name.clone(), s)).collect();
        Self {
            skills: by_name.into_values().collect(),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The skills an agent sees: those named in `names` (`None`: all).
    pub fn narrowed(&self, names: Option<&[String]>) -> SkillSet {
        match names {
            None => self.clone(),
            Some(names) => Self {
                skills: self
                    .skills
                    .iter()
                    .filter(|s| names.iter().any(|n| n == &s.name || n == "*"))
                    .cloned()
                    .collect(),
            },
        }
    }

    /// The canonical folders of the skills (for the tools' read access).
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.skills.iter().map(|s| s.dir.clone()).collect()
    }
}

/// A directory skills are read from, and its label.
#[derive(Debug, Clone)]
pub struct SkillDir {
    pub path: PathBuf,
    pub label: String,
}

/// Skills loaded from directories, and what went wrong on the way.
#[derive(Debug, Default)]
pub struct Loaded {
    pub skills: SkillSet,
    pub warnings: Vec<String>,
}

/// Reads every `*/SKILL.md` of each of `dirs`, in order (a missing
/// directory is skipped).
pub fn load_dirs(dirs: &[SkillDir]) -> Loaded {
    let mut found = Vec::new();
    let mut warnings = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir.path) else {
            continue;
        };
        let mut folders: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("SKILL.md").is_file())
            .collect();
        folders.sort();
        for folder in folders {
            let file = folder.join("SKILL.md");
            let parsed = crate::agents::file::read_bounded(&file)
                .and_then(|text| parse(&folder, &text, &dir.label));
            match parsed {
                Ok((skill, warning)) => {
                    found.push(skill);
                    warnings.extend(warning);
                }
                Err(error) => {
                    warnings.push(format!("skill {} is left out: {error}", file.display()))
                }
            }
        }
    }
    Loaded {
        skills: SkillSet::new(found),
        warnings,
    }
}

/// Parses the `SKILL.md` text of the skill in `folder`; a warning comes
/// back when the name does not follow the standard but is usable.
pub fn parse(folder: &Path, text: &str, label: &str) -> Result<(Skill, Option<String>), String> {
    let (front, _) = crate::agents::file::split_front_matter(text)
        .ok_or("it does not start with a `---` front matter block closed by another `---`")?;
    let value: Value = if front.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        serde_saphyr::from_str(front)
            .map_err(|e| format!("its front matter is not valid YAML: {e}"))?
    };
    let Value::Object(map) = value else {
        return Err("its front matter is not a mapping of keys to values".into());
    };
    let text_of = |key: &str| match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(other) => Err(format!("`{key}` is not text: {other}")),
    };
    let folder_name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = text_of("name")?.unwrap_or_else(|| folder_name.clone());
    let description = text_of("description")?
        .filter(|d| !d.is_empty())
        .ok_or("it has no `description`, which says the model when to use it")?;
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
    {
        return Err(format!(
            "its name `{name}` must be up to 64 letters, digits and `-`"
        ));
    }
    let warning = (name != folder_name || name.chars().any(|c| c.is_ascii_uppercase()))
        .then(|| {
            format!(
                "skill {}: the standard wants a lowercase name equal to its folder's (`{folder_name}`); it is loaded as `{name}`",
                folder.display()
            )
        });
    let dir = std::fs::canonicalize(folder).unwrap_or_else(|_| folder.to_path_buf());
    Ok((
        Skill {
            name,
            description,
            dir,
            source: label.to_string(),
        },
        warning,
    ))
}

#[cfg(test)]
mod tests;
