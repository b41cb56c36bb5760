//! MCP servers' tools through `gyre run`: the reference servers from npm
//! (server-everything over stdio and streamable HTTP, server-filesystem)
//! and the Python fixtures of gyre-mcp, as real child processes; the
//! scripted model calls their tools once they are offered.
//!
//! Servers start in the background, so a script cannot know the turn at
//! which a tool joins: until the request offers it (`body_contains` its
//! name), the model waits a little with `bash sleep` (bounded by
//! `--max-turns`).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use gyre_mock::{Item, MockServer, Reply, Script, Step, StreamReply, When};
use serde_json::{Value, json};

use crate::common::*;

/// The user's config of these tests: fast retries, and no loop guard
/// (the model's waits repeat the same `sleep`).
const BASE: &str = "[retry]\nmax_retries = 2\ninitial_delay_ms = 10\nmax_delay_ms = 40\nbudget_ms = 5000\n[loop_guard]\nrepeat = 0\n";

/// A fresh environment with [`BASE`] as the user's config.
fn env() -> Env {
    let env = Env::new();
    env.write_user_config(BASE);
    env
}

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../mcp/tests/fixtures");

/// A reference server installed by `.ci/run` (`GYRE_TEST_MCP_DIR`, else
/// its default place); fails the test, naming `.ci/run`, when missing.
fn npm_bin(name: &str) -> String {
    let dir = match std::env::var_os("GYRE_TEST_MCP_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/gyre-ci/mcp")
        }
    };
    let bin = dir.join("node_modules/.bin").join(name);
    assert!(
        bin.exists(),
        "{} is missing: the MCP reference servers are installed by .ci/run \
         (npm install --prefix \"$HOME/.cache/gyre-ci/mcp\" @modelcontextprotocol/server-everything \
         @modelcontextprotocol/server-filesystem), or set GYRE_TEST_MCP_DIR to where they are",
        bin.display()
    );
    bin.display().to_string()
}

fn fixture(name: &str) -> String {
    format!("{FIXTURES}/{name}")
}

fn step(when: When, items: Vec<Item>) -> Step {
    Step {
        when,
        times: None,
        reply: Reply::Stream(StreamReply {
            items,
            ..StreamReply::default()
        }),
    }
}

/// Answers once the tool `name` is offered.
fn offered(name: &str) -> When {
    When {
        body_contains: Some(format!("\"name\":\"{name}\"")),
        ..When::default()
    }
}

fn after(result: &str) -> When {
    When {
        last_message_contains: Some(result.into()),
        ..When::default()
    }
}

/// The model's wait while no step matches: a short sleep.
fn wait() -> Step {
    step(
        When::default(),
        vec![call("bash", json!({"command": "sleep 0.2"}))],
    )
}

/// A script that calls `tool` with `args` once it is offered, then ends
/// with "done" once the last message holds `expect`.
fn call_once_offered(tool: &str, args: Value, expect: &str) -> Script {
    Script::new(vec![
        step(after(expect), vec![Item::Text("done".into())]),
        step(offered(tool), vec![call(tool, args)]),
        wait(),
    ])
}

/// `system` lines of `subtype`.
fn system_lines<'a>(lines: &'a [Value], subtype: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "system" && l["subtype"] == subtype)
        .collect()
}

/// The results of the calls of `tool`, in order.
fn results_of(lines: &[Value], tool: &str) -> Vec<Value> {
    let ids: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "assistant")
        .flat_map(|l| l["message"]["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == "tool_use" && b["name"] == tool)
        .map(|b| &b["id"])
        .collect();
    tool_results(lines)
        .into_iter()
        .filter(|r| ids.contains(&&r["tool_use_id"]))
        .collect()
}

/// The tool result texts of the model's last request (what it saw).
fn last_request_results(server: &MockServer) -> String {
    let requests = server.requests();
    requests.last().unwrap().body.to_string()
}

fn run(env: &Env, server: &MockServer) -> tokio::process::Command {
    env.run_on(server, "use the MCP tools", &["--max-turns", "60"])
}

#[tokio::test]
async fn a_stdio_server_from_mcp_json_answers_through_gyre() {
    let script = call_once_offered(
        "mcp__everything__echo",
        json!({"message": "hello from gyre"}),
        "Echo: hello from gyre",
    );
    let server = MockServer::start(script).await.unwrap();
    let env = env();
    // A slow start (1 s more): the run waits for it before its first
    // request.
    let slow = format!("sleep 1 && exec {} stdio", npm_bin("mcp-server-everything"));
    let config = json!({"mcpServers": {"everything": {"command": "sh", "args": ["-c", slow]}}});
    write(&env.path(".mcp.json"), &config.to_string());
    let out = output(run(&env, &server)).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);

    // Waited for, as Claude Code's `-p` does: in the init line and offered
    // from the first request, so the first turn calls it.
    let init = &lines[0];
    assert_eq!(init["subtype"], "init");
    let tools: Vec<&str> = init["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(tools.contains(&"mcp__everything__echo"), "{tools:?}");
    assert!(
        server.requests()[0]
            .body
            .to_string()
            .contains("\"name\":\"mcp__everything__echo\"")
    );
    let statuses = system_lines(&lines, "mcp_server_status");
    assert_eq!(statuses[0]["server"], "everything");
    assert!(
        statuses.iter().any(|s| s["status"] == "ready"
            && s["message"]
                .as_str()
                .unwrap()
                .starts_with("MCP server `everything` is ready with ")),
        "{statuses:?}"
    );
    // Nothing joined later.
    assert!(system_lines(&lines, "tools_changed").is_empty());

    // The result reached the model.
    let results = tool_results(&lines);
    let echo = results
        .iter()
        .find(|r| result_text(r) == "Echo: hello from gyre");
    assert!(echo.is_some(), "{results:?}");
    assert!(last_request_results(&server).contains("Echo: hello from gyre"));
    assert_eq!(lines.last().unwrap()["subtype"], "success");
}

/// server-everything serving streamable HTTP on a free port; killed when
/// dropped.
struct HttpEverything {
    url: String,
    _child: tokio::process::Child,
}

async fn http_everything() -> HttpEverything {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new(npm_bin("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "server-everything did not listen on port {port} within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    HttpEverything {
        url: format!("http://127.0.0.1:{port}/mcp"),
        _child: child,
    }
}

#[tokio::test]
async fn a_streamable_http_server_from_config_toml_answers_through_gyre() {
    let everything = http_everything().await;
    let script = call_once_offered(
        "mcp__web__get-sum",
        json!({"a": 2, "b": 40}),
        "The sum of 2 and 40 is 42.",
    );
    let server = MockServer::start(script).await.unwrap();
    let env = env();
    env.write_user_config(&format!(
        "{BASE}[mcp_servers.web]\nurl = \"{}\"\nhttp_headers = {{ \"X-Gyre\" = \"1\" }}\n",
        everything.url
    ));
    let out = output(run(&env, &server)).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    // Ready before the run began: its tools are offered from the first
    // request.
    let status = &system_lines(&lines, "mcp_server_status")[0];
    assert_eq!(status["status"], "ready", "{status}");
    assert!(
        server.requests()[0]
            .body
            .to_string()
            .contains("\"name\":\"mcp__web__get-sum\"")
    );
    let results = tool_results(&lines);
    assert!(
        results
            .iter()
            .any(|r| result_text(r) == "The sum of 2 and 40 is 42."),
        "{results:?}"
    );
    assert!(last_request_results(&server).contains("The sum of 2 and 40 is 42."));
}

#[tokio::test]
async fn a_filesystem_server_reads_and_its_writes_need_approval() {
    let env = env();
    write(&env.path("notes.txt"), "a note from the workspace\n");
    let root = env.workspace.path().canonicalize().unwrap();
    let notes = root.join("notes.txt").display().to_string();
    let script = Script::new(vec![
        step(after("needs approval"), vec![Item::Text("done".into())]),
        step(
            after("a note from the workspace"),
            vec![call(
                "mcp__fs__write_file",
                json!({"path": notes, "content": "overwritten"}),
            )],
        ),
        step(
            offered("mcp__fs__read_text_file"),
            vec![call("mcp__fs__read_text_file", json!({"path": notes}))],
        ),
        wait(),
    ]);
    let server = MockServer::start(script).await.unwrap();
    // `${VAR}` in args, expanded from gyre's environment as Claude Code does.
    let config = json!({"mcpServers": {"fs": {"command": npm_bin("mcp-server-filesystem"), "args": ["${GYRE_TEST_FS_ROOT}"]}}});
    write(&env.path(".mcp.json"), &config.to_string());
    let mut cmd = env.gyre_on(
        &server,
        &[
            "run",
            "read the notes",
            "--output-format",
            "stream-json",
            "--permission-mode",
            "default",
            "--allowed-tools",
            "bash(sleep:*)",
            "--max-turns",
            "60",
        ],
    );
    cmd.env("GYRE_TEST_FS_ROOT", &root);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    let results = [
        results_of(&lines, "mcp__fs__read_text_file"),
        results_of(&lines, "mcp__fs__write_file"),
    ]
    .concat();
    let read = results
        .iter()
        .find(|r| result_text(r).contains("a note from the workspace"))
        .unwrap_or_else(|| panic!("{results:?}"));
    assert_ne!(read["is_error"], true);
    let write_result = results.last().unwrap();
    assert_eq!(write_result["is_error"], true, "{write_result}");
    assert!(
        result_text(write_result).contains("`mcp__fs__write_file` needs approval"),
        "{write_result}"
    );
    assert_eq!(
        std::fs::read_to_string(env.path("notes.txt")).unwrap(),
        "a note from the workspace\n"
    );
}

#[tokio::test]
async fn servers_that_never_start_are_reported_and_delay_the_first_turn_only_to_their_timeout() {
    let script = Script::linear(vec![
        vec![call("bash", json!({"command": "sleep 2.5"}))],
        vec![Item::Text("done".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = env();
    let config =
        json!({"mcpServers": {"missing": {"command": "/nonexistent/mcp-server", "args": ["--x"]}}});
    write(&env.path(".mcp.json"), &config.to_string());
    env.write_user_config(&format!(
        "{BASE}[mcp_servers.hang]\ncommand = \"python3\"\nargs = [\"{}\", \"--silent\"]\nstartup_timeout_sec = 2\n",
        fixture("permission_server.py")
    ));
    let started = std::time::Instant::now();
    let out = output(run(&env, &server)).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(10));
    let lines = json_lines(&out);
    // The run waited for them: `system/init` says how each ended up.
    let init = &system_lines(&lines, "init")[0];
    for name in ["missing", "hang"] {
        let listed = init["mcp_servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {init}"));
        assert_eq!(listed["status"], "failed", "{init}");
    }
    let failed: Vec<&Value> = system_lines(&lines, "mcp_server_status")
        .into_iter()
        .filter(|l| l["status"] == "failed")
        .collect();
    let message = |server: &str| {
        failed
            .iter()
            .find(|l| l["server"] == server)
            .unwrap_or_else(|| panic!("no failed line for {server}: {lines:#?}"))["message"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        message("missing").starts_with(
            "MCP server `missing` could not be started (`/nonexistent/mcp-server --x`): "
        ),
        "{}",
        message("missing")
    );
    assert_eq!(
        message("hang"),
        "MCP server `hang` did not answer the initialize handshake within 2 s"
    );
    // The run waited for the hanging server up to its start timeout (2 s),
    // then went on without it: its failure precedes the first answer.
    let first_answer = lines.iter().position(|l| l["type"] == "assistant").unwrap();
    let hang_failed = lines
        .iter()
        .position(|l| {
            l["subtype"] == "mcp_server_status" && l["server"] == "hang" && l["status"] == "failed"
        })
        .unwrap();
    assert!(hang_failed < first_answer, "{lines:#?}");
    assert!(system_lines(&lines, "tools_changed").is_empty());
    assert_eq!(lines.last().unwrap()["subtype"], "success");
}

#[tokio::test]
async fn a_server_that_crashes_mid_session_is_reported_and_restarted() {
    let tick = "mcp__crashy__tick";
    let crashed = "exited or closed its connection";
    let script = Script::new(vec![
        step(
            When {
                last_message_contains: Some("tick 1 from".into()),
                body_contains: Some(crashed.into()),
                ..When::default()
            },
            vec![Item::Text("done".into())],
        ),
        step(after("tick 1 from"), vec![call(tick, json!({"n": 2}))]),
        step(after(crashed), vec![call(tick, json!({"n": 3}))]),
        step(offered(tick), vec![call(tick, json!({"n": 1}))]),
        wait(),
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = env();
    let config = json!({"mcpServers": {"crashy": {"command": "python3", "args": [fixture("crash_server.py"), "--starts", "starts"]}}});
    write(&env.path(".mcp.json"), &config.to_string());
    let out = output(run(&env, &server)).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    let ticks = results_of(&lines, tick);
    assert_eq!(ticks.len(), 3, "{ticks:#?}");
    assert!(result_text(&ticks[0]).starts_with("tick 1 from "));
    assert_eq!(ticks[1]["is_error"], true);
    let error = result_text(&ticks[1]);
    assert!(
        error.starts_with("MCP server `crashy` exited or closed its connection"),
        "{error}"
    );
    assert!(error.contains("crash_server: exiting on call 2"), "{error}");
    assert!(
        error.ends_with("gyre starts the server again on the next call of one of its tools"),
        "{error}"
    );
    assert_ne!(ticks[2]["is_error"], true);
    assert!(result_text(&ticks[2]).starts_with("tick 1 from "));
    assert_ne!(
        result_text(&ticks[0]),
        result_text(&ticks[2]),
        "a new process"
    );

    let states: Vec<&str> = system_lines(&lines, "mcp_server_status")
        .iter()
        .map(|l| l["status"].as_str().unwrap())
        .collect();
    // (A server that was up before the run began is `ready` at its start.)
    let states = states.strip_prefix(&["starting"]).unwrap_or(&states);
    assert_eq!(states, ["ready", "crashed", "starting", "ready"]);
    let crash = system_lines(&lines, "mcp_server_status")
        .into_iter()
        .find(|l| l["status"] == "crashed")
        .unwrap();
    assert!(
        crash["message"]
            .as_str()
            .unwrap()
            .ends_with("it is started again on the next call of one of its tools"),
        "{crash}"
    );
    let starts = std::fs::read_to_string(env.path("starts")).unwrap();
    assert_eq!(starts.lines().count(), 2);
    assert_eq!(lines.last().unwrap()["subtype"], "success");
}

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

#[tokio::test]
async fn a_first_turn_calls_tools_of_a_stdio_and_a_streamable_http_server() {
    let everything = http_everything().await;
    // No waiting step: the very first answer calls both servers' tools.
    let script = Script::linear(vec![
        vec![
            call("mcp__local__echo", json!({"message": "first turn"})),
            call("mcp__web__get-sum", json!({"a": 20, "b": 22})),
        ],
        vec![Item::Text("done".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = env();
    // One server from --mcp-config, one from config.toml.
    let slow = format!("sleep 1 && exec {} stdio", npm_bin("mcp-server-everything"));
    let local = json!({"mcpServers": {"local": {"command": "sh", "args": ["-c", slow]}}});
    env.write_user_config(&format!(
        "{BASE}[mcp_servers.web]\nurl = \"{}\"\n",
        everything.url
    ));
    let out = output(env.gyre_on(
        &server,
        &[
            "-p",
            "use both servers",
            "--output-format",
            "json",
            "--dangerously-skip-permissions",
            "--mcp-config",
            &local.to_string(),
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(result["result"], "done", "{result}");
    assert_eq!(result["num_turns"], 2, "{result}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let seen = requests[1].body.to_string();
    assert!(seen.contains("Echo: first turn"), "{seen}");
    assert!(seen.contains("The sum of 20 and 22 is 42."), "{seen}");
}
