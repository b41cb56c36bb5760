//! `gyre mcp list` (servers, their state and tools) and `gyre mcp trust`
//! (project servers recorded until their definition changes).

use super::*;

#[tokio::test]
async fn mcp_list_shows_servers_their_state_and_tools() {
    let env = env();
    let config = json!({"mcpServers": {
        "crashy": {"command": "python3", "args": [fixture("crash_server.py")]},
        "missing": {"command": "/nonexistent/mcp-server"},
        "needs": {"command": "srv", "args": ["${GYRE_TEST_SURELY_UNSET}"]},
    }});
    write(&env.path(".mcp.json"), &config.to_string());
    env.write_user_config("[mcp_servers.off]\nurl = \"http://127.0.0.1:1/mcp\"\nenabled = false\n");
    let out = output(env.gyre(&["mcp", "list"])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let mcp_json = env
        .workspace
        .path()
        .canonicalize()
        .unwrap()
        .join(".mcp.json");
    let user = env.config.path().join("gyre/config.toml");
    let expected_start = format!(
        "crashy  (stdio: python3 {}; from {})\n  ready: 1 tool\n    mcp__crashy__tick  read-only  Counts its calls.\n\
         missing  (stdio: /nonexistent/mcp-server; from {})\n  failed: MCP server `missing` could not be started (`/nonexistent/mcp-server`): ",
        fixture("crash_server.py"),
        mcp_json.display(),
        mcp_json.display(),
    );
    assert!(text.starts_with(&expected_start), "{text}");
    assert!(
        text.contains(&format!(
            "needs  (unusable; from {})\n  failed: MCP server `needs` in {} needs the environment variable GYRE_TEST_SURELY_UNSET, which is not set",
            mcp_json.display(),
            mcp_json.display()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "off  (http: http://127.0.0.1:1/mcp; from {})\n  disabled (enabled = false)\n",
            user.display()
        )),
        "{text}"
    );
    assert!(
        text.ends_with("\n4 servers: 1 ready, 2 failed, 1 disabled\n"),
        "{text}"
    );

    // A bad config file is exit 2.
    write(&env.path(".mcp.json"), "{not json");
    let out = output(env.gyre(&["mcp", "list"])).await;
    assert_usage_error(&out, "is not a valid .mcp.json");
    std::fs::remove_file(env.path(".mcp.json")).unwrap();
    env.write_user_config("[mcp_servers.x]\nargs = []\n");
    let out = output(env.gyre(&["mcp", "list"])).await;
    assert_usage_error(&out, "[mcp_servers.x] has neither `command` nor `url`");
    env.write_user_config("");
    let out = output(env.gyre(&["mcp", "list"])).await;
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).starts_with("no MCP servers configured"));
}

#[tokio::test]
async fn mcp_trust_records_the_project_servers_until_they_change() {
    let env = env();
    env.write_user_config(&format!(
        "{BASE}[mcp_servers.mine]\nurl = \"http://127.0.0.1:1/mcp\"\n"
    ));
    let trust_file = env.home.path().join("mcp-trust.json");
    let out = output(env.gyre(&["mcp", "trust"])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(
        stdout(&out).starts_with("no project MCP servers in "),
        "{}",
        stdout(&out)
    );
    assert!(!trust_file.exists());

    let config = json!({"mcpServers": {"docs": {"command": "/nonexistent/docs", "args": ["--x"]}}});
    write(&env.path(".mcp.json"), &config.to_string());
    std::fs::create_dir_all(env.path(".gyre")).unwrap();
    write(
        &env.path(".gyre/config.toml"),
        "[mcp_servers.web]\nurl = \"http://127.0.0.1:1/web\"\n",
    );
    let workspace = env.workspace.path().canonicalize().unwrap();
    let out = output(env.gyre(&["mcp", "trust"])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let expected = format!(
        "docs  (stdio: /nonexistent/docs --x; from {})\n\
         web  (http: http://127.0.0.1:1/web; from {})\n\n\
         trusted: the terminal UI starts these servers in {} until their configuration changes\n",
        workspace.join(".mcp.json").display(),
        workspace.join(".gyre/config.toml").display(),
        workspace.display(),
    );
    assert_eq!(text, expected);
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(&trust_file).unwrap()).unwrap();
    let hash = recorded["workspaces"][workspace.display().to_string()].clone();
    assert_eq!(hash.as_str().map(str::len), Some(64), "{recorded}");

    let out = output(env.gyre(&["mcp", "trust"])).await;
    assert!(
        stdout(&out).contains("\nalready trusted: "),
        "{}",
        stdout(&out)
    );

    // Another command: the trust lapses, and is recorded anew.
    let config = json!({"mcpServers": {"docs": {"command": "/nonexistent/other"}}});
    write(&env.path(".mcp.json"), &config.to_string());
    let out = output(env.gyre(&["mcp", "trust"])).await;
    assert!(
        stdout(&out).contains(
            "\nthe configuration changed since it was trusted; trusted again: the terminal UI"
        ),
        "{}",
        stdout(&out)
    );
    let again: Value =
        serde_json::from_str(&std::fs::read_to_string(&trust_file).unwrap()).unwrap();
    let new_hash = &again["workspaces"][workspace.display().to_string()];
    assert_ne!(*new_hash, hash);
}
