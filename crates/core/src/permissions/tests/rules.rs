use super::*;

#[test]
fn parses_rule_lists_with_commas_inside_specifiers() {
    let rules = Rule::parse_list("bash(rm:*),web_fetch, Edit(src/a,b.rs)").unwrap();
    let shown: Vec<String> = rules.iter().map(|r| r.to_string()).collect();
    assert_eq!(shown, ["bash(rm:*)", "web_fetch", "Edit(src/a,b.rs)"]);
    assert!(Rule::parse_list("").unwrap().is_empty());
}

#[test]
fn bad_rules_are_one_sentence_errors() {
    let cases = [
        ("bash(rm", "without a closing"),
        ("(x)", "does not start with a tool name"),
        ("ba*sh", "does not start with a tool name"),
        ("bash()", "empty specifier"),
        ("edit(src/[)", "invalid path glob"),
        ("web_fetch(domain:)", "names no domain"),
        ("bash(echo \"a)", "unbalanced quotes"),
    ];
    for (text, expected) in cases {
        let err = Rule::parse_list(text).unwrap_err();
        assert!(err.contains(expected), "{text}: {err}");
        assert!(!err.contains('\n'), "{text}: {err}");
    }
}

#[test]
fn path_rules_are_globs_under_the_workspace_or_home() {
    use Outcome::*;
    let cases: &[(&str, &str, Value, Outcome)] = &[
        (
            "edit(src/**)",
            "edit",
            json!({"file_path": "src/a.rs"}),
            Deny,
        ),
        (
            "edit(src/**)",
            "edit",
            json!({"file_path": "/ws/src/x/y.rs"}),
            Deny,
        ),
        (
            "edit(src/**)",
            "edit",
            json!({"file_path": "./src/../src/a.rs"}),
            Deny,
        ),
        (
            "edit(src/**)",
            "write",
            json!({"file_path": "src/new.rs"}),
            Deny,
        ),
        (
            "edit(src/**)",
            "multi_edit",
            json!({"file_path": "src/a.rs"}),
            Deny,
        ),
        (
            "edit(src/**)",
            "edit",
            json!({"file_path": "tests/a.rs"}),
            Allow,
        ),
        (
            "edit(src/**)",
            "edit",
            json!({"file_path": "src/../tests/a.rs"}),
            Allow,
        ),
        (
            "edit(src/**)",
            "edit",
            json!({"file_path": "/elsewhere/src/a.rs"}),
            Allow,
        ),
        (
            "edit(src/**)",
            "read",
            json!({"file_path": "src/a.rs"}),
            Allow,
        ),
        (
            "edit(src/*.rs)",
            "edit",
            json!({"file_path": "src/a.rs"}),
            Deny,
        ),
        (
            "edit(src/*.rs)",
            "edit",
            json!({"file_path": "src/sub/a.rs"}),
            Allow,
        ),
        (
            "edit(src/*)",
            "edit",
            json!({"file_path": "src/sub/a.rs"}),
            Deny,
        ),
        (
            "write(src/**)",
            "edit",
            json!({"file_path": "src/a.rs"}),
            Allow,
        ),
        (
            "read(~/.ssh/**)",
            "read",
            json!({"file_path": "/home/u/.ssh/id_rsa"}),
            Deny,
        ),
        (
            "read(~/.ssh/**)",
            "read",
            json!({"file_path": "~/.ssh/id_rsa"}),
            Deny,
        ),
        (
            "read(~/.ssh/**)",
            "grep",
            json!({"pattern": "x", "path": "~/.ssh"}),
            Deny,
        ),
        (
            "read(~/.ssh)",
            "ls",
            json!({"path": "/home/u/.ssh/keys"}),
            Deny,
        ),
        ("read(~/.ssh/**)", "glob", json!({"pattern": "*"}), Allow),
        (
            "read(~/.ssh/**)",
            "read",
            json!({"file_path": "/home/u/.sshx"}),
            Allow,
        ),
        (
            "read(/etc/**)",
            "read",
            json!({"file_path": "/etc/passwd"}),
            Deny,
        ),
        (
            "read(/etc/**)",
            "read",
            json!({"file_path": "/ws/etc/passwd"}),
            Allow,
        ),
        ("read(.env)", "read", json!({"file_path": ".env"}), Deny),
        ("read(.env)", "grep", json!({"pattern": "KEY"}), Allow),
        (
            "read(**/.env)",
            "read",
            json!({"file_path": "a/b/.env"}),
            Deny,
        ),
        ("Read(.env)", "read", json!({"file_path": "/ws/.env"}), Deny),
    ];
    for (deny, tool, args, expected) in cases {
        let p = perms(PermissionMode::BypassPermissions, "", "", deny);
        let decision = p.check(tool, ToolKind::Mutating, args);
        assert_eq!(
            outcome(&decision),
            *expected,
            "deny {deny} against {tool} {args}: {decision:?}"
        );
    }
}

#[test]
fn domain_rules_match_the_host_and_its_subdomains() {
    let cases = [
        ("https://example.com/x", true),
        ("https://api.example.com/x", true),
        ("http://EXAMPLE.com:8080/", true),
        ("https://example.com.evil.org/", false),
        ("https://notexample.com/", false),
        ("https://example.com@evil.org/", false),
        ("https://evil.org\\@example.com/", false),
        ("https://evil.org/?u=https://example.com", false),
        ("not a url", false),
    ];
    let p = perms(
        PermissionMode::Plan,
        "web_fetch(domain:example.com)",
        "",
        "",
    );
    for (url, allowed) in cases {
        // Plan mode refuses mutating calls, so only the rule can allow.
        let decision = p.check("web_fetch", ToolKind::Mutating, &json!({ "url": url }));
        assert_eq!(decision == Decision::Allow, allowed, "{url}: {decision:?}");
    }
}

#[test]
fn tool_name_patterns_cover_mcp_servers_and_ignore_case() {
    let cases = [
        ("mcp__github__*", "mcp__github__create_issue", true),
        ("mcp__github__*", "mcp__gitlab__create_issue", false),
        ("mcp__github", "mcp__github__list_prs", true),
        ("mcp__github", "mcp__githubx__list_prs", false),
        (
            "mcp__github__create_issue",
            "mcp__github__create_issue",
            true,
        ),
        (
            "mcp__github__create_issue",
            "mcp__github__close_issue",
            false,
        ),
        ("WebFetch", "webfetch", true),
        ("Web_Fetch", "web_fetch", true),
    ];
    for (rule, tool, denied) in cases {
        let p = perms(PermissionMode::BypassPermissions, "", "", rule);
        let decision = p.check(tool, ToolKind::Mutating, &json!({}));
        assert_eq!(
            matches!(decision, Decision::Deny(_)),
            denied,
            "{rule} vs {tool}"
        );
    }
}

#[test]
fn deny_messages_name_the_rule() {
    let p = perms(PermissionMode::BypassPermissions, "", "", "edit(src/**)");
    let decision = p.check(
        "edit",
        ToolKind::Mutating,
        &json!({"file_path": "src/a.rs"}),
    );
    assert_eq!(
        decision,
        Decision::Deny("`edit` is denied by the rule `edit(src/**)`".into())
    );
    let p = perms(PermissionMode::Default, "", "", "bash(rm:*)");
    let Decision::Deny(message) = check_bash(&p, "ls && sudo rm -rf x") else {
        panic!("not denied");
    };
    assert!(
        message.contains("`bash(rm:*)`") && message.contains("`rm -rf x`"),
        "{message}"
    );
}

#[test]
fn modes_decide_when_no_rule_matches() {
    use Outcome::*;
    let file = json!({"file_path": "a.txt"});
    let make = json!({"command": "make"});
    let cases = [
        (
            PermissionMode::Default,
            "read",
            ToolKind::ReadOnly,
            &file,
            Allow,
        ),
        (
            PermissionMode::Default,
            "edit",
            ToolKind::Mutating,
            &file,
            Ask,
        ),
        (
            PermissionMode::AcceptEdits,
            "edit",
            ToolKind::Mutating,
            &file,
            Allow,
        ),
        (
            PermissionMode::AcceptEdits,
            "bash",
            ToolKind::Mutating,
            &make,
            Ask,
        ),
        (
            PermissionMode::Plan,
            "write",
            ToolKind::Mutating,
            &file,
            Deny,
        ),
        (
            PermissionMode::Plan,
            "task",
            ToolKind::Mutating,
            &file,
            Allow,
        ),
        (
            PermissionMode::BypassPermissions,
            "bash",
            ToolKind::Mutating,
            &make,
            Allow,
        ),
    ];
    for (mode, tool, kind, args, expected) in cases {
        let p = perms(mode, "", "", "");
        assert_eq!(
            outcome(&p.check(tool, kind, args)),
            expected,
            "{tool} in {mode:?}"
        );
    }
}

#[test]
fn ask_rules_outrank_allow_rules_and_the_mode_for_any_tool() {
    let p = perms(
        PermissionMode::BypassPermissions,
        "edit",
        "edit(config/**)",
        "",
    );
    let check = |path: &str| p.check("edit", ToolKind::Mutating, &json!({ "file_path": path }));
    assert!(matches!(check("config/prod.toml"), Decision::Ask(q) if q.contains("edit(config/**)")));
    assert_eq!(check("src/a.rs"), Decision::Allow);
}

#[test]
fn session_rules_allow_like_allow_rules_but_never_outrank_deny() {
    let p = perms(PermissionMode::Default, "", "", "bash(git push:*)");
    let session = Rule::parse_list("bash(git:*)").unwrap();
    let check = |c: &str| p.check_with("bash", bash_kind(c), &json!({ "command": c }), &session);
    assert_eq!(check("git commit -m x"), Decision::Allow);
    assert!(matches!(check("git push"), Decision::Deny(_)));
    assert!(matches!(check("cargo build"), Decision::Ask(_)));
}

#[test]
fn suggested_rules_are_stable_prefixes() {
    let cases: &[(&str, Value, &str)] = &[
        (
            "bash",
            json!({"command": "git commit -m \"x\""}),
            "bash(git commit:*)",
        ),
        (
            "bash",
            json!({"command": "git -C sub push origin"}),
            "bash(git -C sub push:*)",
        ),
        (
            "bash",
            json!({"command": "npm run build"}),
            "bash(npm run:*)",
        ),
        (
            "bash",
            json!({"command": "cargo test -p core"}),
            "bash(cargo test:*)",
        ),
        (
            "bash",
            json!({"command": "docker compose up -d"}),
            "bash(docker compose:*)",
        ),
        (
            "bash",
            json!({"command": "kubectl -n prod get pods"}),
            "bash(kubectl -n prod get:*)",
        ),
        ("bash", json!({"command": "rm -rf build"}), "bash(rm:*)"),
        (
            "bash",
            json!({"command": "sudo apt install jq"}),
            "bash(sudo apt install:*)",
        ),
        (
            "bash",
            json!({"command": "ls && mkdir -p out"}),
            "bash(mkdir:*)",
        ),
        (
            "bash",
            json!({"command": "timeout 60 npm test"}),
            "bash(npm test:*)",
        ),
        (
            "bash",
            json!({"command": "FOO=1 cargo build"}),
            "bash('FOO=1' cargo build:*)",
        ),
        (
            "bash",
            json!({"command": "git add . && git commit -m x"}),
            "bash(git add:*),bash(git commit:*)",
        ),
        (
            "bash",
            json!({"command": "git status"}),
            "bash(git status:*)",
        ),
        (
            "bash",
            json!({"command": "python3 test_calc.py"}),
            "bash(python3 test_calc.py)",
        ),
        (
            "bash",
            json!({"command": "node build.js --prod"}),
            "bash(node build.js --prod)",
        ),
        ("bash", json!({"command": "bash x.sh"}), "bash(bash x.sh)"),
        (
            "bash",
            json!({"command": "python3 -m pytest -q tests"}),
            "bash(python3 -m pytest:*)",
        ),
        ("edit", json!({"file_path": "src/a.rs"}), "edit(src/**)"),
        (
            "write",
            json!({"file_path": "/ws/src/deep/b.rs"}),
            "edit(src/deep/**)",
        ),
        ("multi_edit", json!({"file_path": "top.rs"}), "edit(**)"),
        (
            "write",
            json!({"file_path": "/tmp/out/x"}),
            "edit(/tmp/out/**)",
        ),
        (
            "read",
            json!({"file_path": "~/notes/a.md"}),
            "read(/home/u/notes/**)",
        ),
        (
            "grep",
            json!({"pattern": "x", "path": "lib"}),
            "read(lib/**)",
        ),
        (
            "web_fetch",
            json!({"url": "https://Docs.rs/x"}),
            "web_fetch(domain:docs.rs)",
        ),
        ("kill_shell", json!({"shell_id": "s1"}), "kill_shell"),
        (
            "mcp__github__create_issue",
            json!({"title": "t"}),
            "mcp__github__create_issue",
        ),
    ];
    for (tool, args, expected) in cases {
        let rules = suggest_rules(tool, args, &ctx());
        let shown: Vec<String> = rules.iter().map(ToString::to_string).collect();
        assert_eq!(shown.join(","), *expected, "{tool} {args}");
        assert_eq!(suggest_rule(tool, args, &ctx()), rules[0]);
        // Each suggestion parses back and allows the call it came from.
        let reparsed = Rule::parse_list(&shown.join(",")).unwrap();
        assert_eq!(reparsed, rules);
        let p = perms(PermissionMode::Plan, &shown.join(","), "", "");
        assert_eq!(
            p.check(tool, ToolKind::Mutating, args),
            Decision::Allow,
            "{tool} {args}"
        );
    }
}

#[test]
fn covers_whole_tool_only_without_a_specifier() {
    let rules = Rule::parse_list("read,edit(src/**),mcp__github__*").unwrap();
    assert!(rules[0].covers_whole_tool("READ"));
    assert!(
        !rules[0].covers_whole_tool("grep"),
        "a bare rule names one tool"
    );
    assert!(!rules[1].covers_whole_tool("edit"));
    assert!(rules[2].covers_whole_tool("mcp__github__x"));
}

#[test]
fn always_allowing_a_script_does_not_allow_another_program() {
    let rules = suggest_rules("bash", &json!({"command": "python3 test_calc.py"}), &ctx());
    let shown: Vec<String> = rules.iter().map(ToString::to_string).collect();
    let p = perms(PermissionMode::Default, &shown.join(","), "", "");
    let check = |command: &str| p.check("bash", ToolKind::Mutating, &json!({ "command": command }));
    assert_eq!(check("python3 test_calc.py"), Decision::Allow);
    assert!(matches!(check("python3 evil.py"), Decision::Ask(_)));
    assert!(matches!(check("python3 -c 'import os'"), Decision::Ask(_)));
}
