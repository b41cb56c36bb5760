//! `gyre demo` works with no key and no network, and really fixes the bug.

use gyre_mock::{Item, MockServer, Script};

use crate::common::*;

#[tokio::test]
async fn demo_fixes_the_sample_project() {
    let env = Env::new();
    let project = env.path("sample");
    let out = output(env.gyre(&["demo", "--dir", project.to_str().unwrap()])).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        stdout(&out),
        stderr(&out)
    );
    let shown = stdout(&out);
    for step in [
        "● ls",
        "● grep average",
        "● read lib/math.sh",
        "● edit lib/math.sh",
        "● bash sh test.sh",
    ] {
        assert!(shown.contains(step), "the demo shows `{step}`:\n{shown}");
    }
    assert!(shown.contains(&project.canonicalize().unwrap().display().to_string()));
    assert!(
        shown.contains("ANTHROPIC_API_KEY"),
        "says how to use a real key"
    );
    assert!(
        !shown.contains("\u{1b}["),
        "no colour when stdout is not a terminal"
    );

    // The project's tests pass now, run independently of gyre.
    let test = std::process::Command::new("sh")
        .arg("test.sh")
        .current_dir(&project)
        .output()
        .unwrap();
    assert!(
        test.status.success(),
        "{}",
        String::from_utf8_lossy(&test.stdout)
    );
    assert!(String::from_utf8_lossy(&test.stdout).contains("all tests passed"));
}

/// The command the demo prints for a real model works as printed: its
/// flags let a headless run edit the project and run its tests (in the
/// default mode both would be refused). Run through `sh`, as a user would
/// paste it, against the mock in place of the real API.
#[tokio::test]
async fn the_suggested_next_command_works_as_printed() {
    let env = Env::new();
    let project = env.path("sample");
    let out = output(env.gyre(&["demo", "--dir", project.to_str().unwrap()])).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = stdout(&out);
    let suggested = shown
        .split("With a real model:")
        .nth(1)
        .expect("the demo suggests a command")
        .replace("\\\n", " ");
    let line = suggested.trim().lines().next().unwrap().trim().to_string();
    let command = line
        .strip_prefix("ANTHROPIC_API_KEY=sk-ant-… gyre ")
        .unwrap_or_else(|| panic!("unexpected suggestion: {line}"));

    let server = MockServer::start(Script::linear(vec![
        vec![call("read", serde_json::json!({"file_path": "test.sh"}))],
        vec![call(
            "edit",
            serde_json::json!({"file_path": "test.sh", "old_string": "# The calculator's tests.", "new_string": "# The calculator's tests (negative numbers too)."}),
        )],
        vec![call("bash", serde_json::json!({"command": "sh test.sh"}))],
        vec![Item::Text("Added.".into())],
    ]))
    .await
    .unwrap();
    let mut sh = tokio::process::Command::new("sh");
    sh.arg("-c")
        .arg(format!(
            "exec \"$GYRE\" {command} --output-format stream-json"
        ))
        .env("GYRE", GYRE)
        .env("GYRE_HOME", env.home.path())
        .env("XDG_CONFIG_HOME", env.config.path())
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", server.anthropic_base_url())
        .current_dir(env.workspace.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let out = output(sh).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(&json_lines(&out));
    assert_eq!(results.len(), 3, "{results:?}");
    for result in &results {
        assert_eq!(result["is_error"], false, "refused: {result}");
    }
    assert!(
        std::fs::read_to_string(project.join("test.sh"))
            .unwrap()
            .contains("negative numbers too")
    );
}
