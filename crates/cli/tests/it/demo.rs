//! `gyre demo` works with no key and no network, and really fixes the bug.

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
