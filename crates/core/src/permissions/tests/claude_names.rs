//! Rules written with Claude Code's tool names and list syntax mean what
//! they mean there.

use super::*;

#[test]
fn claude_code_names_cover_gyre_s_tools() {
    let deny =
        Rule::parse_list("WebFetch, TodoWrite MultiEdit KillBash BashOutput LS Task").unwrap();
    for tool in [
        "web_fetch",
        "todo_write",
        "multi_edit",
        "kill_shell",
        "bash_output",
        "ls",
        "task",
    ] {
        assert!(
            deny.iter().any(|rule| rule.covers_whole_tool(tool)),
            "{tool} by {deny:?}"
        );
    }
    // Shown as written.
    assert_eq!(deny[0].to_string(), "WebFetch");
    assert!(!deny.iter().any(|rule| rule.covers_whole_tool("read")));
}

#[test]
fn claude_code_specifiers_and_space_separated_lists() {
    // As `claude --allowedTools "Bash(git log:*)" "Edit(src/**)"` joins them.
    let p = perms(
        PermissionMode::Default,
        "Bash(git log:*) Edit(src/**)",
        "",
        "",
    );
    let run = |command: &str| p.check("bash", bash_kind(command), &json!({"command": command}));
    assert_eq!(run("git log --oneline"), Decision::Allow);
    assert!(matches!(run("git push"), Decision::Ask(_)));
    let write = |path: &str| {
        p.check(
            "write",
            ToolKind::Mutating,
            &json!({"file_path": path, "content": "x"}),
        )
    };
    assert_eq!(write("src/a.rs"), Decision::Allow);
    assert!(matches!(write("README.md"), Decision::Ask(_)));
    // A space before the parenthesis separates nothing.
    assert_eq!(Rule::parse_list("bash (npm test:*)").unwrap().len(), 1);
}
