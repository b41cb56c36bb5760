//! Config files: user then project, flags win, errors name file and line.

use gyre_mock::{Item, MockServer, Script};

use crate::common::*;

#[tokio::test]
async fn project_config_overrides_user_config_and_flags_override_both() {
    let script = Script::linear(vec![vec![Item::Text("ok".into())]]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    write(
        &env.config.path().join("gyre/config.toml"),
        "model = \"from-user\"\nmax_turns = 7\n",
    );
    let out = output(env.gyre_on(&server, &["run", "hi"])).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests()[0].body["model"], "from-user");

    write(
        &env.path(".gyre/config.toml"),
        "model = \"from-project\"\n\n[models.from-project]\ncontext_window = 16000\nmax_output_tokens = 1234\n",
    );
    output(env.gyre_on(&server, &["run", "hi"])).await;
    let body = &server.requests()[1].body;
    assert_eq!(body["model"], "from-project");
    assert_eq!(
        body["max_tokens"], 1234,
        "the model's output limit from config"
    );

    output(env.gyre_on(&server, &["run", "hi", "--model", "from-flag"])).await;
    assert_eq!(server.requests()[2].body["model"], "from-flag");
}

#[tokio::test]
async fn an_invalid_config_file_exits_2_naming_file_and_line() {
    let env = Env::new();
    let file = env.path(".gyre/config.toml");
    write(&file, "model = \"m\"\nmax_turns = \"many\"\n");
    let mut cmd = env.gyre(&["run", "hi"]);
    cmd.env("ANTHROPIC_API_KEY", "k");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    let canonical = file.canonicalize().unwrap();
    assert!(
        err.contains(&format!("{}:2:", canonical.display())),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    write(&file, "modle = \"typo\"\n");
    let mut cmd = env.gyre(&["run", "hi"]);
    cmd.env("ANTHROPIC_API_KEY", "k");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("modle"), "{}", stderr(&out));
}

#[tokio::test]
async fn rule_files_reach_the_system_prompt_in_order() {
    let server = MockServer::start(Script::linear(vec![vec![Item::Text("ok".into())]]))
        .await
        .unwrap();
    let env = Env::new();
    write(
        &env.config.path().join("gyre/AGENTS.md"),
        "Always answer tersely.",
    );
    write(&env.path("CLAUDE.md"), "Run `make check` before finishing.");
    write(&env.path(".cursorrules"), "not read: CLAUDE.md comes first");
    let out = output(env.gyre_on(&server, &["run", "hi"])).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let system = server.requests()[0].body["system"].to_string();
    let user = system
        .find("Always answer tersely.")
        .expect("the user's rules");
    let project = system
        .find("Run `make check`")
        .expect("the project's rules");
    assert!(user < project, "{system}");
    assert!(!system.contains("not read"), "{system}");
}
