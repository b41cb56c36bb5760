//! Agent Skills from the outside: what the model is told up front, a body
//! loaded on use, a skill's files read from outside the workspace, a
//! Claude Code skills folder copied into a project, `gyre skills`, and an
//! agent file narrowing the skills it sees.

use gyre_mock::{Item, MockServer, Script};
use serde_json::{Value, json};

use crate::common::*;

/// A skill as Claude Code's documentation writes one: extra front-matter
/// keys (`allowed-tools`, `license`) and a reference file beside it.
const RELEASE_NOTES: &str = "---\nname: release-notes\ndescription: Writes release notes from \
    the git log. Use when the user asks for release notes or a changelog.\n\
    allowed-tools: Bash(git log:*), Read\nlicense: MIT\n---\n\n# Release notes\n\n\
    RELEASE-NOTES-BODY: group the commits by kind; follow reference/style.md.\n";

fn tool<'a>(request: &'a Value, name: &str) -> Option<&'a Value> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
}

/// `cmd` with `HOME` in the test's home, so `~/.claude/skills` is the
/// test's.
fn at_home(env: &Env, mut cmd: tokio::process::Command) -> tokio::process::Command {
    cmd.env("HOME", env.home.path());
    cmd
}

fn skill_env() -> Env {
    let env = Env::new();
    // A Claude Code project's skills folder, copied unchanged.
    write(
        &env.path(".claude/skills/release-notes/SKILL.md"),
        RELEASE_NOTES,
    );
    write(
        &env.path(".claude/skills/release-notes/reference/style.md"),
        "Use past tense.",
    );
    // A user skill outside the workspace, with a file the model reads.
    let user = env.home.path().join(".claude/skills/pdf");
    write(
        &user.join("SKILL.md"),
        "---\nname: pdf\ndescription: Fills PDF forms.\n---\nPDF-BODY: run scripts/fill.py.\n",
    );
    write(&user.join("scripts/fill.py"), "print('FILL-SCRIPT')\n");
    // A broken one: a warning, not a failure.
    write(
        &env.path(".gyre/skills/broken/SKILL.md"),
        "---\nname: [unclosed\n---\n",
    );
    env
}

#[tokio::test]
async fn skills_are_listed_up_front_and_a_body_is_loaded_on_use() {
    let env = skill_env();
    let user_script = env.home.path().join(".claude/skills/pdf/scripts/fill.py");
    let script = Script::linear(vec![
        vec![call("skill", json!({"name": "release-notes"}))],
        vec![call(
            "read",
            json!({"file_path": user_script.display().to_string()}),
        )],
        vec![Item::Text("Done.".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let out = output(at_home(
        &env,
        env.run_on(&server, "write the release notes", &[]),
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains("broken/SKILL.md is left out"),
        "{}",
        stderr(&out)
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // Up front: names and descriptions only, in the `skill` tool.
    let first = &requests[0].body;
    let skill = tool(first, "skill").expect("the skill tool is offered");
    let description = skill["description"].as_str().unwrap();
    assert!(
        description.contains("<name>release-notes</name>"),
        "{description}"
    );
    assert!(description.contains("Writes release notes from the git log."));
    assert!(description.contains("<name>pdf</name>"));
    assert!(!first.to_string().contains("RELEASE-NOTES-BODY"));
    assert!(!first.to_string().contains("PDF-BODY"));
    // Byte-stable: the same tool in the next request.
    assert_eq!(tool(&requests[1].body, "skill"), Some(skill));

    // On use: the body and the skill's folder reach the model.
    let second = requests[1].body.to_string();
    assert!(second.contains("RELEASE-NOTES-BODY"), "{second}");
    let folder = std::fs::canonicalize(env.path(".claude/skills/release-notes")).unwrap();
    assert!(second.contains(&folder.display().to_string()), "{second}");
    // The user's skill folder is readable although outside the workspace.
    let lines = json_lines(&out);
    let results = tool_results(&lines);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        result_text(&results[1]).contains("FILL-SCRIPT"),
        "{:?}",
        results[1]
    );
    assert_ne!(results[1]["is_error"], true);
}

#[tokio::test]
async fn skill_folders_are_not_writable() {
    let env = skill_env();
    let target = env.home.path().join(".claude/skills/pdf/SKILL.md");
    let script = Script::linear(vec![
        vec![call(
            "write",
            json!({"file_path": target.display().to_string(), "content": "changed"}),
        )],
        vec![Item::Text("Done.".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let out = output(at_home(&env, env.run_on(&server, "x", &[]))).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let results = tool_results(&json_lines(&out));
    assert_eq!(results[0]["is_error"], true, "{results:?}");
    assert!(
        std::fs::read_to_string(&target)
            .unwrap()
            .contains("PDF-BODY")
    );
}

#[tokio::test]
async fn an_agent_file_narrows_the_skills_and_none_means_no_tool() {
    let env = skill_env();
    write(
        &env.path(".gyre/agents/writer.md"),
        "---\ndescription: Writes.\nskills: [pdf]\n---\nWRITER\n",
    );
    write(
        &env.path(".gyre/agents/bare.md"),
        "---\ndescription: No skills.\nskills: []\n---\nBARE\n",
    );
    let server = MockServer::start(always("ok")).await.unwrap();
    let out = output(at_home(
        &env,
        env.run_on(&server, "x", &["--agent", "writer"]),
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let out = output(at_home(
        &env,
        env.run_on(&server, "y", &["--agent", "bare"]),
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let requests = server.requests();
    let listed = tool(&requests[0].body, "skill").unwrap()["description"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(listed.contains("<name>pdf</name>"), "{listed}");
    assert!(!listed.contains("release-notes"), "{listed}");
    assert!(tool(&requests[1].body, "skill").is_none());
}

#[tokio::test]
async fn gyre_skills_lists_each_with_its_source() {
    let env = skill_env();
    let out = output(at_home(&env, env.gyre(&["skills"]))).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("pdf  user ~/.claude/skills  "),
        "{text}"
    );
    assert!(
        lines[1].starts_with("release-notes  project .claude/skills  "),
        "{text}"
    );
    assert!(lines[1].ends_with("or a changelog."), "{text}");
    assert!(stderr(&out).contains("broken"), "{}", stderr(&out));
}
