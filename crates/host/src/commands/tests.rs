use super::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn markdown_and_toml_commands_load_with_their_keys() {
    let user = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    write(
        &user.path().join("review.md"),
        "---\ndescription: user's review\n---\nU",
    );
    write(
        &project.path().join("review.md"),
        "---\ndescription: Review a PR\nargument-hint: [pr-number] [priority]\n\
         model: small-model\nagent: plan\nallowed-tools: Bash(git diff:*), Bash(git log:*)\n---\n\
         Review PR #$1.\n",
    );
    write(
        &project.path().join("frontend/component.md"),
        "# Make a component\n\nDo $ARGUMENTS",
    );
    write(
        &project.path().join("git/commit.toml"),
        "description = \"Commit message\"\nprompt = \"Write a commit message for {{args}}\"\n",
    );
    write(
        &project.path().join("broken.md"),
        "---\ndescription: [x\n  nested: y\n---\nB",
    );
    write(&project.path().join("bad.toml"), "description = 1\n");
    let (commands, warnings) = load_dirs(&[
        user.path().to_path_buf(),
        project.path().join("missing"),
        project.path().to_path_buf(),
    ]);
    let names: Vec<&str> = commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["component", "git:commit", "init", "review"]);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    let review = commands.get("review").unwrap();
    assert_eq!(review.description, "Review a PR");
    assert_eq!(
        review.argument_hint.as_deref(),
        Some("[pr-number] [priority]")
    );
    assert_eq!(review.model.as_deref(), Some("small-model"));
    assert_eq!(review.agent.as_deref(), Some("plan"));
    assert_eq!(review.allowed_tools, ["Bash(git diff:*), Bash(git log:*)"]);
    assert_eq!(
        commands.get("component").unwrap().description,
        "Make a component"
    );
    assert_eq!(
        commands.get("git:commit").unwrap().description,
        "Commit message"
    );
    let infos = commands.infos();
    assert_eq!(infos[2].name, "init");
    assert!(infos[2].description.contains("AGENTS.md"));
}

#[test]
fn invocations_split_name_and_arguments() {
    assert_eq!(split_invocation("/fix 123 high"), Some(("fix", "123 high")));
    assert_eq!(split_invocation("/init"), Some(("init", "")));
    assert_eq!(split_invocation("/usr/bin/env is odd"), None);
    assert_eq!(split_invocation("plain prompt"), None);
}

#[tokio::test]
async fn invoke_expands_files_and_allowed_commands_only() {
    let workspace = tempfile::tempdir().unwrap();
    write(&workspace.path().join("notes.md"), "NOTES-TEXT\n");
    let commands = Commands::new([
        CustomCommand {
            name: "show".into(),
            template: "Read @notes.md and @missing.md; status: !`echo STATUS-$1`".into(),
            allowed_tools: vec!["Bash(echo:*)".into()],
            ..init::command()
        },
        CustomCommand {
            name: "danger".into(),
            template: "!`touch made-by-command`".into(),
            ..init::command()
        },
    ]);
    let permissions = Permissions::default();
    let done = commands
        .invoke("/show ok", workspace.path(), &permissions)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        done.prompt,
        "Read <file path=\"notes.md\">\nNOTES-TEXT\n</file> and @missing.md; status: STATUS-ok"
    );
    let refused = commands
        .invoke("/danger", workspace.path(), &permissions)
        .await
        .unwrap()
        .unwrap_err();
    assert!(refused.contains("was not run"), "{refused}");
    assert!(!workspace.path().join("made-by-command").exists());
    assert!(
        commands
            .invoke("/other x", workspace.path(), &permissions)
            .await
            .is_none()
    );
}
