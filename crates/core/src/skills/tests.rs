use super::*;
use gyre_tools::Tool;

fn write_skill(root: &Path, folder: &str, text: &str) {
    std::fs::create_dir_all(root.join(folder)).unwrap();
    std::fs::write(root.join(folder).join("SKILL.md"), text).unwrap();
}

fn dir(path: &Path, label: &str) -> SkillDir {
    SkillDir {
        path: path.to_path_buf(),
        label: label.into(),
    }
}

#[test]
fn folders_load_sorted_later_directories_win_and_broken_ones_warn() {
    let user = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    write_skill(
        user.path(),
        "pdf",
        "---\nname: pdf\ndescription: user's pdf\n---\nU",
    );
    write_skill(
        user.path(),
        "broken",
        "---\nname: [unclosed\ndescription: x\n---\nB",
    );
    write_skill(user.path(), "bare", "no front matter");
    write_skill(user.path(), "nodesc", "---\nname: nodesc\n---\nB");
    std::fs::write(user.path().join("loose.md"), "not a skill").unwrap();
    write_skill(
        project.path(),
        "pdf",
        "---\nname: pdf\ndescription: project's pdf\nlicense: MIT\n---\nP",
    );
    write_skill(
        project.path(),
        "alpha",
        "---\nname: alpha\ndescription: >\n  folded\n  text\n---\n\n# Alpha\nDo it.\n",
    );
    let loaded = load_dirs(&[
        dir(user.path(), "user"),
        dir(&project.path().join("missing"), "x"),
        dir(project.path(), "project"),
    ]);
    let names: Vec<&str> = loaded.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["alpha", "pdf"]);
    let pdf = loaded.skills.get("pdf").unwrap();
    assert_eq!(pdf.description, "project's pdf");
    assert_eq!(pdf.source, "project");
    assert_eq!(loaded.warnings.len(), 3, "{:?}", loaded.warnings);
    for bad in ["broken", "bare", "nodesc"] {
        assert!(
            loaded.warnings.iter().any(|w| w.contains(bad)),
            "{bad}: {:?}",
            loaded.warnings
        );
    }
    let alpha = loaded.skills.get("alpha").unwrap();
    assert_eq!(alpha.body().unwrap(), "# Alpha\nDo it.");
}

#[test]
fn agents_narrow_the_set() {
    let set = SkillSet::new(["a", "b", "c"].map(|n| Skill {
        name: n.into(),
        description: format!("{n} skill"),
        dir: PathBuf::from(format!("/s/{n}")),
        source: "user".into(),
    }));
    let names = |s: &SkillSet| s.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&set.narrowed(None)), ["a", "b", "c"]);
    assert_eq!(
        names(&set.narrowed(Some(&["c".into(), "a".into()]))),
        ["a", "c"]
    );
    assert!(set.narrowed(Some(&[])).is_empty());
}

#[test]
fn the_listing_is_bounded_and_stable() {
    let many = (0..200).map(|i| Skill {
        name: format!("skill-{i:03}"),
        description: "d ".repeat(600),
        dir: PathBuf::from("/s"),
        source: "user".into(),
    });
    let set = SkillSet::new(many);
    let one = SkillTool::new(set.clone());
    let two = SkillTool::new(set);
    let text = &one.spec().description;
    assert_eq!(text, &two.spec().description);
    assert!(text.len() < MAX_LISTING_BYTES + 1500, "{}", text.len());
    assert!(text.contains("<name>skill-000</name>"));
    assert!(text.contains("more skills are installed but not listed"));
}
